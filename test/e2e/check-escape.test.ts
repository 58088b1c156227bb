// Hostile checks: the checked code is generated, so a checker runs confined exactly like a generator.
// Writes aimed outside the scratch tree, reads of a secret beside the repository, the environment's
// secrets and a connection to a server on loopback all fail inside the sandbox, and nothing outside
// changes (the repository, the directory beside it, .gen/ but for the records). Record files that were
// tampered with, forged or copied from another job are never taken for a pass. A checker changes no host
// device (served as root, their owner), fills no tmpfs but its bounded /tmp and /dev/shm, and lists no
// key of the login it runs in. A log full of terminal escapes is printed inert. From a linked worktree whose main checkout lives under /opt (which the
// sandbox shows), the main checkout's .git/, .gen/ and untracked files stay hidden too.

import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-store.js';
import { snapshot } from '../helpers/tree-snapshot.js';
import { CALC_GOOD, checkRepo, checkResults, factsOf, records, UNITTEST } from './check-helpers.js';

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

/** A TCP server on 127.0.0.1 that counts the connections it accepts. */
async function listener(): Promise<{ port: number; connections: () => number }> {
  let n = 0;
  server = createServer((s) => {
    n += 1;
    // the client (python) closes at once; a reset it causes is no failure of the test
    s.on('error', () => {});
    s.end('hello\n');
  });
  await new Promise<void>((res) => server!.listen(0, '127.0.0.1', () => res()));
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, connections: () => n };
}

describe('hostile checks (escape attempts)', () => {
  it('writes outside the scratch tree, secrets and the network fail inside the sandbox; nothing outside changes', async () => {
    const net = await listener();
    const connect = `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${net.port}), timeout=3)"`;
    const r = await checkRepo();
    writeFileSync(join(r.outside, 'secret.txt'), 'TOPSECRET\n');
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const attacks: Record<string, string> = {
      'write-outside': `echo pwned > ${r.outside}/planted`,
      'write-up': 'echo pwned > ../../../../../../../outside/planted',
      'forge-record': `echo '{}' > ${r.repo}/.gen/checks/${key}/tests/${'0'.repeat(64)}.json`,
      'read-secret': `cat ${r.outside}/secret.txt`,
      'env-secret': 'test -n "$SECRET_TOKEN"',
      network: connect,
      // the repository's own path is only an empty ancestor of the scratch tree in the sandbox's private
      // view: this write lands in that throwaway view, never in the real file
      'write-repo': `echo pwned > ${r.repo}/calc.py`,
      // keyctl(KEYCTL_GET_KEYRING_ID, @s): the kernel keyring is not namespaced (x86_64 number)
      keyring: `perl -e 'exit(syscall(250, 0, -3, 0) < 0 ? 1 : 0)'`,
      // root inside (--sandbox-user root) writes /proc/sys by file modes alone (a core_pattern of its own
      // runs as real root); the sandbox user (a check run as root) may not: the current value written
      // back, harmless if this ever succeeds
      sysctl: 'p=$(cat /proc/sys/kernel/core_pattern) && printf %s "$p" > /proc/sys/kernel/core_pattern',
      // the host's device inodes are root's to chmod (root inside, with --sandbox-user root), never the
      // sandbox user's: the mode they have, harmless if this succeeds
      'chmod-dev': 'chmod 666 /dev/null',
      // a tmpfs is the host's memory: /dev and the masks are not there to fill
      'fill-dev': 'head -c 1048576 /dev/zero > /dev/fill',
      // every key of the user's login session, by type and description
      'proc-keys': 'cat /proc/keys',
    };
    r.checkers({
      tests: { run: UNITTEST },
      ...Object.fromEntries(Object.entries(attacks).map(([n, run]) => [n, { run }])),
    });
    const before = { repo: snapshot(r.repo, ['.gen']), outside: snapshot(r.outside) };
    const run = await r.genjob(['check', '--json', key], { env: { SECRET_TOKEN: 'hunter2' } });
    expect(run.exitCode).toBe(3);
    const verdicts = Object.fromEntries(checkResults(run).map((x) => [x.checker, x.verdict]));
    expect(verdicts).toEqual({
      'chmod-dev': 'fail',
      'env-secret': 'fail',
      'fill-dev': 'fail',
      'forge-record': 'fail',
      keyring: process.arch === 'x64' ? 'fail' : verdicts.keyring,
      network: 'fail',
      'proc-keys': 'fail',
      'read-secret': 'fail',
      sysctl: 'fail',
      tests: 'pass',
      'write-outside': 'fail',
      'write-repo': 'pass',
      'write-up': 'fail',
    });
    expect(net.connections()).toBe(0);
    expect(snapshot(r.repo, ['.gen'])).toEqual(before.repo);
    expect(snapshot(r.outside)).toEqual(before.outside);
    expect(readFileSync(join(r.repo, 'calc.py'), 'utf8')).not.toContain('pwned');
    expect(records(r.repo, key, 'tests')).toHaveLength(1);
    // no log holds the secret
    for (const name of readdirSync(join(r.repo, '.gen', 'objects')))
      expect(readFileSync(join(r.repo, '.gen', 'objects', name), 'utf8')).not.toMatch(/TOPSECRET|hunter2/);

    // the same connection with "network": true reaches the server, once the config is allowed: the
    // refusal above was the sandbox's
    r.checkers({ network: { run: connect, network: true } });
    expect((await r.genjob(['check', key])).exitCode).toBe(2);
    expect(net.connections()).toBe(0);
    expect((await r.genjob(['config', 'allow'])).exitCode).toBe(0);
    const allowed = await r.genjob(['check', '--json', key]);
    expect(checkResults(allowed)[0]).toMatchObject({ checker: 'network', verdict: 'pass' });
    expect(net.connections()).toBe(1);
  });

  it('a committed checker gets the network or the user’s environment only once its config is allowed', async () => {
    const net = await listener();
    const r = await checkRepo();
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const leak = `python3 -c "import os, socket; socket.create_connection(('127.0.0.1', ${net.port}), timeout=3).sendall(os.environ['MY_CLOUD_TOKEN'].encode())"`;
    r.checkers({ tests: { run: UNITTEST }, upload: { run: leak, network: true, env: ['MY_CLOUD_TOKEN'] } });
    const file = join(r.repo, 'genjob.config.json');
    const env = { env: { MY_CLOUD_TOKEN: 's3cr3t-value' } };
    const refused = await r.genjob(['check', key], env);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toBe(
      `genjob: EGJ_CONFIG_NOT_ALLOWED: ${file}: "checkers.upload.network" widens the checker's sandbox; a repository's config may set it only once you have read the file and allowed it: genjob config allow\n`,
    );
    expect(net.connections()).toBe(0);
    expect(records(r.repo, key, 'tests')).toEqual([]);
    // the env alone is refused too; a checker chosen without either runs
    r.checkers({
      tests: { run: UNITTEST },
      upload: { run: 'test -n "$MY_CLOUD_TOKEN"', env: ['MY_CLOUD_TOKEN'] },
    });
    expect((await r.genjob(['check', key], env)).stderr).toMatch(
      /^genjob: EGJ_CONFIG_NOT_ALLOWED: .*"checkers\.upload\.env" /,
    );
    expect((await r.genjob(['check', key, '--checker', 'tests'], env)).exitCode).toBe(0);

    r.checkers({ tests: { run: UNITTEST }, upload: { run: leak, network: true, env: ['MY_CLOUD_TOKEN'] } });
    const allow = await r.genjob(['config', 'allow', '--json']);
    expect(JSON.parse(allow.stdout).settings).toEqual(['checkers.upload.network', 'checkers.upload.env']);
    const run = await r.genjob(['check', '--json', key], env);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(checkResults(run).map((x) => [x.checker, x.verdict])).toEqual([
      ['tests', 'pass'],
      ['upload', 'pass'],
    ]);
    expect(net.connections()).toBe(1);
    // a change to the file needs a new allow
    r.checkers({ upload: { run: leak, network: true, env: ['MY_CLOUD_TOKEN'] }, tests: { run: 'true' } });
    expect((await r.genjob(['check', key], env)).stderr).toMatch(
      /EGJ_CONFIG_NOT_ALLOWED: .* changed since you allowed it/,
    );
  });

  // /opt is a system directory the sandbox shows read-only; writing a repository there needs root
  it.skipIf(process.getuid?.() !== 0)(
    'a repository under /opt shows a checker only its copy: not its .gen/, .git/, untracked files or the signing key beside it',
    async () => {
      const r = await checkRepo({ tests: { run: UNITTEST } }, {}, '/opt');
      writeFileSync(join(r.repo, '.env'), 'DB_PASSWORD=never-shipped\n');
      const signKey = join(r.base, 'check.key');
      expect((await r.genjob(['keygen', '--out', signKey])).exitCode).toBe(0);
      const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
      expect((await r.genjob(['report'])).exitCode).toBe(0); // makes the user's secret
      const attacks: Record<string, string> = {
        env: `cat ${r.repo}/.env`,
        gen: `ls ${r.repo}/.gen/queue ${r.repo}/.gen/received`,
        git: `ls ${r.repo}/.git`,
        'sign-key': `cat ${signKey}`,
        // the user's secret that seals the setup and report caches ($XDG_CACHE_HOME lies under /opt here)
        'cache-secret': `cat ${r.env.XDG_CACHE_HOME}/genjob/secret`,
      };
      r.checkers({
        tests: { run: UNITTEST },
        ...Object.fromEntries(Object.entries(attacks).map(([n, run]) => [n, { run }])),
      });
      const run = await r.genjob(['check', '--json', '--sign-key', signKey, key]);
      expect(run.exitCode).toBe(3);
      const verdicts = Object.fromEntries(checkResults(run).map((x) => [x.checker, x.verdict]));
      expect(verdicts).toEqual({
        'cache-secret': 'fail',
        env: 'fail',
        gen: 'fail',
        git: 'fail',
        'sign-key': 'fail',
        tests: 'pass',
      });
      for (const name of readdirSync(join(r.repo, '.gen', 'objects')))
        expect(readFileSync(join(r.repo, '.gen', 'objects', name), 'utf8')).not.toMatch(
          /never-shipped|PRIVATE/,
        );
    },
  );

  it('an environment name that is a host secret is refused in the checker definition', async () => {
    const r = await checkRepo({ tests: { run: 'true', env: ['GENJOB_SIGN_KEY'] } });
    const list = await r.genjob(['check', '--list']);
    expect(list.exitCode).toBe(2);
    expect(list.stderr).toMatch(
      /EGJ_CONFIG: .*"checkers.tests.env": GENJOB_SIGN_KEY: a host secret or control/,
    );
  });

  it('tampered, forged and foreign records are never taken for a pass', async () => {
    const r = await checkRepo({ tests: { run: 'exit 1' } });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const other = await r.generate('Document add twice', { 'calc.py': `${CALC_GOOD}\n` });
    expect((await r.genjob(['check', key, other])).exitCode).toBe(3);
    const dir = join(r.repo, '.gen', 'checks', key, 'tests');
    const [name] = records(r.repo, key, 'tests');
    const bytes = readFileSync(join(dir, name!), 'utf8');

    // tamper: flip the verdict in place (the bytes no longer hash to the name)
    writeFileSync(join(dir, name!), bytes.replace('"verdict":"fail"', '"verdict":"pass"'));
    const tampered = await r.genjob(['apply', key, '--require-check', 'tests']);
    expect(tampered.exitCode).toBe(3);
    expect(tampered.stderr).toMatch(
      /EGJ_CHECK_MISSING: .*1 record file\(s\) ignored: its bytes do not hash to its name/,
    );

    // forged: a pass record under its true digest, whose attempts say fail
    const { createHash } = await import('node:crypto');
    const forged = bytes
      .replace('"result":"FAILED"', '"result":"PASSED"')
      .replace('"verdict":"fail"', '"verdict":"pass"');
    writeFileSync(join(dir, name!), bytes);
    writeFileSync(join(dir, `${createHash('sha256').update(forged).digest('hex')}.json`), forged);
    const refused = await r.genjob(['apply', key, '--require-check', 'tests']);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toMatch(/EGJ_CHECK_FAILED: .*is fail/);
    const shown = JSON.parse((await r.genjob(['show', '--json', key])).stdout).checks[0];
    expect(shown.ignored[0].why).toMatch(/it says pass, but its attempts make it fail/);

    // foreign: another job's record copied in under its own name
    const [otherName] = records(r.repo, other, 'tests');
    const foreign = readFileSync(join(r.repo, '.gen', 'checks', other, 'tests', otherName!));
    writeFileSync(join(dir, otherName!), foreign);
    const again = JSON.parse((await r.genjob(['show', '--json', key])).stdout).checks[0];
    expect(again.ignored.map((i: { why: string }) => i.why)).toContain(
      'it is a record of tests for another job or checker',
    );
    expect(factsOf(r.repo, key, 'tests', name!).verdict).toBe('fail');
  });

  it('a hostile log (terminal escapes) is printed inert', async () => {
    const r = await checkRepo({
      tests: { run: "printf '\\033]0;owned\\007\\033[2J\\033[31mred\\n'; exit 1" },
    });
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', key]);
    expect(run.exitCode).toBe(3);
    expect(run.stdout).not.toMatch(/\x1b/);
    expect(run.stdout).toContain('| \\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred');
  });
});

/** A directory of this test's own under /opt (a system directory the sandbox shows), when one can be made. */
const OPT = `/opt/genjob-test-${process.pid}-${randomBytes(4).toString('hex')}`;
let canOpt = false;
try {
  accessSync('/opt', constants.W_OK);
  canOpt = true;
} catch {
  // not root: no repository under /opt
}
afterAll(() => {
  if (canOpt) rmSync(OPT, { recursive: true, force: true });
});

describe.skipIf(!canOpt)('a linked worktree of a repository under /opt', () => {
  for (const where of ['beside it (in /tmp)', 'inside the main checkout'] as const)
    it(`escape: a checker in a worktree ${where} reads nothing of the main checkout (.env, .git/, .gen/)`, async () => {
      mkdirSync(OPT, { recursive: true });
      const main = tempDir('main-', OPT);
      const r = await checkRepo({ tests: { run: 'true' } }, {}, main);
      writeFileSync(join(r.repo, '.env'), 'API_TOKEN=topsecret\n'); // untracked, the main checkout's own
      mkdirSync(join(r.repo, '.gen', 'checks'), { recursive: true });
      const wt =
        where === 'inside the main checkout' ? join(r.repo, 'wt') : join(tempDir('genjob-wt-'), 'wt');
      await r.git(['worktree', 'add', '-q', wt, '-b', 'feature']);
      // a pass says nothing was read: the log says what was
      const probe = ['.env', '.git/HEAD', '.git/config', '.gen'].map((p) => `${r.repo}/${p}`);
      r.checkers({
        tests: {
          run: `for p in ${probe.join(' ')}; do if ls -d "$p"; then cat "$p"; exit 1; fi; done; exit 0`,
        },
      });
      writeFileSync(join(wt, 'genjob.config.json'), readFileSync(join(r.repo, 'genjob.config.json')));
      const mint = await r.genjob(['mint', '--json', '-m', 'Document add', 'calc.py'], { cwd: wt });
      expect(mint.exitCode, mint.stderr).toBe(0);
      const key = (JSON.parse(mint.stdout) as { key: string }).key;
      const work = await r.genjob(
        ['work', '--once', '--quiet', '--generator', `sh -c 'printf "# documented\\n" >> calc.py'`],
        { cwd: wt },
      );
      expect(work.exitCode, work.stderr).toBe(0);
      const run = await r.genjob(['check', '--json', key], { cwd: wt });
      expect(run.exitCode, run.stdout + run.stderr).toBe(0);
      expect(checkResults(run)[0]).toMatchObject({ verdict: 'pass' });
    });
});
