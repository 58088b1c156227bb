// A hostile generator trying to get out of the sandbox, or to make serve (outside it) act for it:
// served as root (as the sandbox user, and as root inside with --sandbox-user root) it unmounts masks, remounts read-only paths writable and nests a user namespace; it swaps
// its workspace (or a directory in it) for a link to the host's files, so that serve would return and
// move them; it makes the usage file a FIFO or a link; and binds given through symlinks (or a key
// reached through a rotation link) would show what serve hides. Real bwrap, the built CLI, a local
// serve or the suite's sshd on loopback. Every attempt must fail closed with nothing of the host's
// read, moved or deleted.
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import { tempDir } from '../helpers/temp-store.js';
import { attempts, binFlags, mintJob, script, useStrays } from './escape-helpers.js';
import {
  CLI,
  committedReceipt,
  genDir,
  genjob,
  hostResults,
  NODE,
  REPO_ROOT,
  type Sandbox,
  sshFlags,
  useBoxes,
} from './ssh-helpers.js';

const sshd = useSshd();
const box = useBoxes();
const asRoot = process.getuid?.() === 0;

/** Files a test made outside its temp dirs (in /opt, /usr...), removed after it whatever happened. */
const strays = useStrays();

describe.skipIf(!asRoot)(
  'serve run as root: the sandbox user, and root inside with --sandbox-user root',
  () => {
    it.each([
      { inside: 'the sandbox user (nobody)', flags: [] as string[], uid: '65534' },
      { inside: 'root (--sandbox-user root)', flags: ['--sandbox-user', 'root'], uid: '0' },
    ])(
      'escape: $inside can unmount no mask, remount nothing writable, write nothing outside its workspace, chmod no host device, nest no user namespace',
      async (c) => {
        const sb = await box();
        // the signing key under /opt, which the sandbox shows read-only: its mask is what root would unmount
        const keyDir = path.join('/opt', `genjob-escape-${process.pid}`);
        strays.push(keyDir);
        mkdirSync(keyDir);
        const key = path.join(keyDir, 'host.key');
        expect((await genjob(sb, ['keygen', '--out', key])).exitCode).toBe(0);
        const ro = tempDir('gj-ro-');
        writeFileSync(path.join(ro, 'tool.txt'), 'read-only tool\n');
        const mark = `gj-escape-${process.pid}`;
        const outside = ['/usr', '/etc', '/opt', ro, ''].map((d) => `${d}/${mark}`);
        strays.push(...outside);
        // what only root may read under /etc (a token, a directory of rules): root inside is the host's uid 0
        const token = `/etc/${mark}-token`;
        const rules = `/etc/${mark}-rules.d`;
        const shown = `/etc/${mark}-shown`;
        strays.push(token, rules, shown);
        writeFileSync(token, 'TOKEN\n', { mode: 0o600 });
        mkdirSync(rules, { mode: 0o700 });
        writeFileSync(path.join(rules, 'a.rules'), 'RULE\n', { mode: 0o644 });
        writeFileSync(shown, 'PUBLIC\n', { mode: 0o644 });
        const tries = {
          'umount-key': `umount ${key}`,
          'read-key': `grep -q PRIVATE ${key}`,
          'umount-ssh': 'umount /etc/ssh',
          'umount-shadow': 'umount /etc/shadow',
          'remount-usr': 'mount -o remount,bind,rw /usr',
          'remount-etc': 'mount -o remount,bind,rw /etc',
          'remount-opt': 'mount -o remount,bind,rw /opt',
          'remount-bind': `mount -o remount,bind,rw ${ro}`,
          'write-usr': `touch ${outside[0]}`,
          'write-etc': `touch ${outside[1]}`,
          'write-opt': `touch ${outside[2]}`,
          'write-bind': `touch ${outside[3]}`,
          'write-root': `touch ${outside[4]}`,
          'nested-userns': 'unshare -Ur true',
          // uid 0 writes /proc/sys by its file modes, no capability needed; a core_pattern of its own would
          // run as real root. The current value is written back: harmless if this ever succeeds
          'write-sysctl':
            'p=$(cat /proc/sys/kernel/core_pattern) && printf %s "$p" > /proc/sys/kernel/core_pattern',
          'write-proc': 'echo 0 > /proc/self/oom_score_adj',
          'read-root-only': `grep -q TOKEN ${token}`,
          'read-root-only-dir': `grep -q RULE ${rules}/a.rules`,
          // bwrap's /dev binds the host's device inodes, whose owner root inside is: a chmod 0 would take
          // them from every user of the host. The mode written is theirs already: harmless if this succeeds
          'chmod-dev-null': 'chmod 666 /dev/null',
          'chmod-dev-urandom': 'chmod 666 /dev/urandom',
          'chmod-dev-tty': 'chmod 666 /dev/tty',
        };
        const devices = 'echo x > /dev/null && head -c 4 /dev/urandom | wc -c';
        const gen = script(
          sb,
          'root.sh',
          `{ id -u; cat ${shown}; ${devices}; ${attempts(tries)}; } > README.md`,
        );
        const k = await mintJob(sb, ['-m', 'try every way out', 'README.md']);
        const w = await genjob(
          sb,
          ['work', '--once', ...c.flags, '--generator', gen, '--generator-bind', ro, ...binFlags(sb)],
          {
            env: { XDG_CACHE_HOME: sb.workerCache, NO_COLOR: '1', GENJOB_SIGN_KEY: key },
          },
        );
        expect(w.exitCode, String(w.stderr)).toBe(0);
        expect(committedReceipt(sb, k), String(committedReceipt(sb, k).reason)).toMatchObject({
          status: 'ok',
          sandbox: { kind: 'bwrap', network: false },
        });
        const report = readFileSync(path.join(sb.repo, '.gen/out', k, 'README.md'), 'utf8')
          .trim()
          .split('\n');
        expect(report).toEqual([c.uid, 'PUBLIC', '4', ...Object.keys(tries).map((n) => `${n}: refused`)]);
        for (const f of outside) expect(existsSync(f), f).toBe(false);
      },
    );

    it('escape: a key under a system directory reached through a rotation link is masked where it really is', async () => {
      const sb = await box();
      const keyDir = path.join('/opt', `genjob-rotation-${process.pid}`);
      strays.push(keyDir);
      mkdirSync(keyDir);
      expect((await genjob(sb, ['keygen', '--out', path.join(keyDir, '2026.key')])).exitCode).toBe(0);
      symlinkSync('2026.key', path.join(keyDir, 'current.key'));
      const gen = script(
        sb,
        'read-key.sh',
        `{\n${attempts({
          'through-link': `grep -q PRIVATE ${keyDir}/current.key`,
          real: `grep -q PRIVATE ${keyDir}/2026.key`,
        })}\n} > README.md`,
      );
      const k = await mintJob(sb, ['-m', 'read the key', 'README.md']);
      const w = await genjob(sb, ['work', '--once', '--generator', gen, ...binFlags(sb)], {
        env: {
          XDG_CACHE_HOME: sb.workerCache,
          NO_COLOR: '1',
          GENJOB_SIGN_KEY: path.join(keyDir, 'current.key'),
        },
      });
      expect(w.exitCode, String(w.stderr)).toBe(0);
      expect(readFileSync(path.join(sb.repo, '.gen/out', k, 'README.md'), 'utf8')).toBe(
        'through-link: refused\nreal: refused\n',
      );
    });
  },
);

describe('binds and keys compared by what they really are', () => {
  it('escape: a --generator-bind given through a symlink into the result cache is refused before anything is claimed', async () => {
    const sb = await box();
    const gen = script(sb, 'peek.sh', `ls -A ${sb.dir}/cache-link > src/a.txt`);
    await mintJob(sb, ['-m', 'fill the cache', 'README.md']);
    // a first run fills the cache the hostile one then tries to see through the link
    expect((await genjob(sb, ['work', '--once', '--generator', 'echo x >> README.md'])).exitCode).toBe(0);
    mkdirSync(path.join(sb.workerCache, 'genjob', 'results'), { recursive: true });
    symlinkSync(path.join(sb.workerCache, 'genjob', 'results'), path.join(sb.dir, 'cache-link'));
    const again = await mintJob(sb, ['-m', 'peek again', 'src/a.txt']);
    const w = await genjob(sb, [
      'work',
      '--once',
      '--generator',
      gen,
      '--generator-bind',
      path.join(sb.dir, 'cache-link'),
    ]);
    expect(w.exitCode).toBe(2);
    expect(String(w.stderr)).toMatch(
      new RegExp(
        `EGJ_BIND_HIDDEN: --generator-bind ${sb.dir}/cache-link \\(it is ${sb.workerCache}/genjob/results\\) is or lies inside ${sb.workerCache}/genjob, which serve keeps hidden`,
      ),
    );
    expect(genDir(sb, 'queue')).toEqual([`${again}.json`]);
  });

  it('escape: a --sign-key reached through a rotation symlink in an exposed directory is refused: the bind holds the key', async () => {
    const sb = await box();
    const keys = tempDir('gj-keys-');
    expect((await genjob(sb, ['keygen', '--out', path.join(keys, '2026.key')])).exitCode).toBe(0);
    symlinkSync('2026.key', path.join(keys, 'current.key'));
    const gen = script(sb, 'steal.sh', `cat ${keys}/2026.key > README.md`);
    const k = await mintJob(sb, ['-m', 'steal the key', 'README.md']);
    const w = await genjob(
      sb,
      ['work', '--once', '--generator', gen, '--generator-bind', keys, ...binFlags(sb)],
      {
        env: {
          XDG_CACHE_HOME: sb.workerCache,
          NO_COLOR: '1',
          GENJOB_SIGN_KEY: path.join(keys, 'current.key'),
        },
      },
    );
    expect(w.exitCode).toBe(2);
    expect(String(w.stderr)).toContain(
      `EGJ_BIND_HIDDEN: --generator-bind ${keys} holds the signing key ${keys}/2026.key, and whatever lies beside it`,
    );
    expect(genDir(sb, 'queue')).toEqual([`${k}.json`]);
    expect(genDir(sb, 'out')).toEqual([]);
  });

  it('escape: a --sign-key given through a symlinked directory is refused when a bind holds its real file', async () => {
    const sb = await box();
    const keys = tempDir('gj-keys-');
    expect((await genjob(sb, ['keygen', '--out', path.join(keys, 'host.key')])).exitCode).toBe(0);
    const via = path.join(tempDir('gj-via-'), 'keys');
    symlinkSync(keys, via);
    const gen = script(sb, 'steal.sh', `cat ${keys}/host.key > README.md`);
    const k = await mintJob(sb, ['-m', 'steal the key', 'README.md']);
    const w = await genjob(
      sb,
      ['work', '--once', '--generator', gen, '--generator-bind', keys, ...binFlags(sb)],
      {
        env: { XDG_CACHE_HOME: sb.workerCache, NO_COLOR: '1', GENJOB_SIGN_KEY: path.join(via, 'host.key') },
      },
    );
    expect(w.exitCode).toBe(2);
    expect(String(w.stderr)).toContain(
      `EGJ_BIND_HIDDEN: --generator-bind ${keys} holds the signing key ${keys}/host.key`,
    );
    expect(genDir(sb, 'queue')).toEqual([`${k}.json`]);
  });
});

describe('a generator that swaps its workspace, over ssh', () => {
  /** A fake HOME holding a decoy named like an allowed path, and serve over ssh with that HOME. */
  function host(sb: Sandbox, extra = ''): { home: string; decoy: string; log: string; remote: string } {
    const home = path.join(sb.dir, 'home');
    mkdirSync(path.join(home, '.docker'), { recursive: true });
    const decoy = path.join(home, '.docker', 'config.json');
    writeFileSync(decoy, '{"auths":{"registry":{"auth":"DECOY-host-secret"}}}\n');
    // where the generator says how its swap went (its stderr reaches no file here)
    const log = path.join(sb.dir, 'log');
    mkdirSync(log);
    chmodSync(log, 0o777); // served as root, the generator writes it as the sandbox user
    const remote = `HOME=${home} ${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache} --generator-bind ${REPO_ROOT} ${binFlags(sb).join(' ')} --generator-bind-rw ${log} ${extra}`;
    return { home, decoy, log, remote };
  }

  const said = (log: string) => readFileSync(path.join(log, 'swap'), 'utf8').trim();

  /** Nothing of the decoy was read into the repository, moved or changed. */
  function expectDecoyUntouched(sb: Sandbox, decoy: string): void {
    expect(readFileSync(decoy, 'utf8')).toBe('{"auths":{"registry":{"auth":"DECOY-host-secret"}}}\n');
    const out = path.join(sb.repo, '.gen');
    const found = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true, recursive: true })
        .filter((d) => d.isFile())
        .map((d) => path.join(d.parentPath, d.name))
        .filter((f) => readFileSync(f, 'utf8').includes('DECOY-host-secret'));
    expect(found(out)).toEqual([]);
    expect(found(sb.hostCache)).toEqual([]);
  }

  const swapWorkspace = (target: string, log: string) =>
    [
      'ws=$PWD',
      'cd ..',
      `if mv "$ws" "$ws.gone" && ln -s ${target} "$ws"; then echo "swap: DONE"; else echo "swap: refused"; fi > ${log}/swap`,
      'exit 0',
    ].join('\n');

  it('escape: confined, it cannot move its workspace aside, and the host file named like an allowed path stays where it is', async () => {
    const sb = await box({ 'config.json': '{}\n' });
    const { decoy, log, remote } = host(sb);
    const gen = script(sb, 'swap.sh', swapWorkspace(path.dirname(decoy), log));
    const k = await mintJob(sb, ['-m', 'swap the workspace', '--allow-secret', 'config.json', 'config.json']);
    const w = await genjob(sb, ['work', '--once', '--generator', gen, ...sshFlags(sshd(), remote)]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(said(log)).toBe('swap: refused');
    expect(committedReceipt(sb, k)).toMatchObject({ status: 'ok', outputs: [] });
    expectDecoyUntouched(sb, decoy);
  });

  it('escape: unconfined (--no-sandbox) the swap succeeds, and serve rejects the run without reading through it', async () => {
    const sb = await box({ 'config.json': '{}\n' });
    const { decoy, log, remote } = host(sb, '--no-sandbox');
    const gen = script(sb, 'swap.sh', swapWorkspace(path.dirname(decoy), log));
    const k = await mintJob(sb, ['-m', 'swap the workspace', '--allow-secret', 'config.json', 'config.json']);
    const w = await genjob(sb, ['work', '--once', '--generator', gen, ...sshFlags(sshd(), remote)]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(said(log)).toBe('swap: DONE');
    const r = committedReceipt(sb, k);
    expect(r).toMatchObject({ status: 'rejected', outputs: [] });
    expect(r.reason).toMatch(
      /^the generator replaced its workspace .* \(it is now a symlink\); nothing was read through it$/,
    );
    expectDecoyUntouched(sb, decoy);
  });

  it.each([
    { name: 'confined', extra: '' },
    { name: 'unconfined', extra: '--no-sandbox' },
  ])(
    'escape ($name): a directory inside the workspace swapped for a link to the host is rejected, never followed',
    async (c) => {
      const sb = await box({ '.docker/config.json': '{}\n' });
      const { home, decoy, log, remote } = host(sb, c.extra);
      const gen = script(
        sb,
        'swap-dir.sh',
        `rm -rf .docker && ln -s ${home}/.docker .docker && echo "swap: DONE" > ${log}/swap\nexit 0`,
      );
      const k = await mintJob(sb, [
        '-m',
        'swap a directory',
        '--allow-secret',
        '.docker/config.json',
        '.docker/config.json',
      ]);
      const w = await genjob(sb, ['work', '--once', '--generator', gen, ...sshFlags(sshd(), remote)]);
      expect(w.exitCode, String(w.stderr)).toBe(0);
      expect(said(log)).toBe('swap: DONE');
      expect(committedReceipt(sb, k)).toMatchObject({
        status: 'rejected',
        outputs: [],
        reason: '".docker" is a symlink; only regular files may be outputs',
      });
      expectDecoyUntouched(sb, decoy);
    },
    60_000,
  );
});

describe('the usage file, made hostile, over ssh', () => {
  it.each([
    { name: 'a FIFO (serve must not block)', make: 'mkfifo "$GENJOB_USAGE_FILE"' },
    { name: 'a link to /dev/zero (serve must not read it)', make: 'ln -s /dev/zero "$GENJOB_USAGE_FILE"' },
    { name: 'a link to a host file of valid usage', make: 'ln -s "$HOST_USAGE" "$GENJOB_USAGE_FILE"' },
    { name: 'a directory', make: 'mkdir "$GENJOB_USAGE_FILE"' },
  ])(
    'tamper: $name is ignored; the job completes with no usage',
    async (c) => {
      const sb = await box();
      const hostUsage = path.join(sb.dir, 'host-usage.json');
      writeFileSync(hostUsage, '{"prompt_tokens":777,"completion_tokens":1,"requests":1}\n');
      const gen = script(
        sb,
        'usage.sh',
        `echo changed >> README.md\nrm -f "$GENJOB_USAGE_FILE"\n${c.make.replace('$HOST_USAGE', hostUsage)}\nexit 0`,
      );
      const k = await mintJob(sb, ['-m', 'report usage', 'README.md']);
      const remote = `${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache} --generator-bind ${REPO_ROOT} ${binFlags(sb).join(' ')}`;
      const w = await genjob(sb, [
        'work',
        '--once',
        '--timeout',
        '30',
        '--generator',
        gen,
        ...sshFlags(sshd(), remote),
      ]);
      expect(w.exitCode, String(w.stderr)).toBe(0);
      const r = committedReceipt(sb, k);
      expect(r).toMatchObject({ status: 'ok' });
      expect(r.usage).toBeUndefined();
      expect(hostResults(sb.hostCache, k)).toHaveLength(1);
    },
    60_000,
  );
});
