// The sandbox on the worker's own machine (local serve): the worker's secrets never reach the
// generator, nothing it started outlives --timeout or a SIGINT of `work --watch --grace`, a machine
// without bubblewrap is refused before any claim, and --no-sandbox is recorded in the receipt and
// refused by `verify/apply --require-sandbox`.

import { chmodSync, existsSync, mkdtempSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { liveProcesses } from '../helpers/processes.js';
import { CLI, genDir, makeSandbox, mintKey, readJson } from './helpers.js';

/** Shell text starting a child in a process group of its own (setpgid, not setsid) as `sleep MARKER`. */
const setpgidSleep = (marker: string) =>
  `perl -e 'setpgrp(0, 0); exec "sleep", "${marker}"' >/dev/null 2>&1 &`;

/**
 * `work --once` started as a login through pam_keyinit would start it: a fresh session keyring holding one
 * user key, `description` → `payload` (x86_64 syscall numbers: keyctl 250, add_key 248).
 */
async function workFromKeyedLogin(
  sb: Awaited<ReturnType<typeof makeSandbox>>,
  gen: string,
  description: string,
  payload: string,
): Promise<void> {
  const login = join(sb.base, 'login.py');
  writeFileSync(
    login,
    [
      'import ctypes, os, sys',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'assert libc.syscall(250, 1, None) >= 0',
      `s = b"${payload}"`,
      `assert libc.syscall(248, b"user", b"${description}", s, len(s), ctypes.c_int(-3)) > 0`,
      'os.execvp(sys.argv[1], sys.argv[1:])',
    ].join('\n'),
  );
  const w = await execa('python3', [login, process.execPath, CLI, 'work', '--once', '--generator', gen], {
    cwd: sb.repo,
    env: { XDG_CACHE_HOME: sb.cache },
    reject: false,
  });
  expect(w.exitCode, w.stderr).toBe(0);
}

describe('a confined generator run by a local serve', () => {
  it("sees none of the worker's secrets, and the receipt says bwrap without network", async () => {
    const sb = await makeSandbox();
    const gen = sb.script('env.sh', 'env | cut -d= -f1 | sort > src/user.py');
    const key = await mintKey(sb, 'Dump env', ['src/user.py']);
    const w = await sb.genjob(['work', '--once', '--generator', gen, '--generator-env', 'PASS_ME'], {
      env: {
        AWS_SECRET_ACCESS_KEY: 'fake-aws-secret',
        SSH_AUTH_SOCK: join(sb.base, 'agent.sock'),
        GENJOB_OPENAI_API_KEY: 'sk-fake',
        PASS_ME: 'yes',
      },
    });
    expect(w.exitCode, w.stderr).toBe(0);
    const names = readFileSync(join(sb.repo, '.gen/out', key, 'src/user.py'), 'utf8').split('\n');
    expect(names).not.toContain('AWS_SECRET_ACCESS_KEY');
    expect(names).not.toContain('SSH_AUTH_SOCK');
    expect(names).not.toContain('GENJOB_OPENAI_API_KEY');
    expect(names).toContain('PASS_ME');
    expect(readJson(join(sb.repo, '.gen/receipts', `${key}.json`))).toMatchObject({
      status: 'ok',
      sandbox: { kind: 'bwrap', network: false },
    });
    expect((await sb.genjob(['verify', '--require-sandbox', key])).exitCode).toBe(0);
  });

  it.skipIf(process.arch !== 'x64')(
    'cannot read a credential in the session keyring of the login serve runs in',
    async () => {
      const sb = await makeSandbox();
      const key = await mintKey(sb, 'Read keys', ['src/user.py']);
      // keyctl(KEYCTL_READ, @s) lists the session keyring; each key found is read (x86_64 numbers)
      const gen = sb.script(
        'keys.sh',
        `perl -e 'my $b=" "x4096; my $n=syscall(250,11,-3,$b,4096); print "listed $n\\n"; for my $id (unpack("l*",substr($b,0,$n>0?$n:0))) { my $v=" "x4096; my $k=syscall(250,11,$id,$v,4096); print substr($v,0,$k>0?$k:0),"\\n"; }' > src/user.py`,
      );
      // as a login through pam_keyinit would: a fresh session keyring holding a host credential
      await workFromKeyedLogin(sb, gen, 'cred', 'HOST-CREDENTIAL-IN-KEYRING');
      const out = readFileSync(join(sb.repo, '.gen/out', key, 'src/user.py'), 'utf8');
      expect(out).toBe('listed -1\n');
      expect(out).not.toContain('HOST-CREDENTIAL');
    },
  );

  it.skipIf(process.arch !== 'x64')(
    'escape: cannot list the keys of the login serve runs in through /proc/keys either',
    async () => {
      const sb = await makeSandbox();
      const key = await mintKey(sb, 'List keys', ['src/user.py']);
      const gen = sb.script(
        'proc-keys.sh',
        'cat /proc/keys > src/user.py 2>&1; echo "exit $?" >> src/user.py',
      );
      // a login's session keyring holding a key whose description names the host's account
      await workFromKeyedLogin(sb, gen, 'deploy-token:alice@host', 'x');
      const out = readFileSync(join(sb.repo, '.gen/out', key, 'src/user.py'), 'utf8');
      expect(out).not.toContain('deploy-token');
      expect(out).toMatch(/exit 1\n$/);
    },
  );

  it('escape: cannot set up an io_uring, a way into the kernel beside its system calls', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Use io_uring', ['src/user.py']);
    // io_uring_setup(1, params): 425 in every architecture's table; the host itself allows it
    const probe = `perl -e 'my $p="\\0"x120; my $r=syscall(425,1,$p); print "setup $r ", ($r<0?$!+0:0), "\\n"'`;
    const gen = sb.script('uring.sh', `${probe} > src/user.py`);
    const w = await sb.genjob(['work', '--once', '--generator', gen]);
    expect(w.exitCode, w.stderr).toBe(0);
    // EPERM (1), as a host with kernel.io_uring_disabled answers
    expect(readFileSync(join(sb.repo, '.gen/out', key, 'src/user.py'), 'utf8')).toBe('setup -1 1\n');
  });

  // /opt is a system directory the sandbox shows read-only; writing a repository there needs root
  it.skipIf(process.getuid?.() !== 0)(
    'does not show the worker repository that lives under /opt: not its .gen/, .git/ or unshipped files; a generator kept in it still runs',
    async () => {
      const sb = await makeSandbox({ parent: '/opt' });
      writeFileSync(join(sb.repo, '.env'), 'DB_PASSWORD=never-shipped\n');
      const key = await mintKey(sb, 'Look around', ['src/user.py']);
      // the generator is a file of the repository, as `--generator ./gen.sh` in docs/checks.md
      const probe = (what: string, cmd: string) =>
        `if ${cmd} >/dev/null 2>&1; then echo "${what}: SHOWN"; else echo "${what}: hidden"; fi`;
      writeFileSync(
        join(sb.repo, 'gen.sh'),
        [
          '#!/bin/sh',
          `{ ${probe('env', `cat ${sb.repo}/.env`)}; ${probe('gen', `ls ${sb.repo}/.gen/queue`)}; ${probe('git', `ls ${sb.repo}/.git`)}; ${probe('tracked', `cat ${sb.repo}/README.md`)}; ${probe('secret', `cat ${sb.cache}/genjob/secret`)}; } > src/user.py`,
          '',
        ].join('\n'),
        { mode: 0o755 },
      );
      // the user's secret (it seals the report and setup caches) in $XDG_CACHE_HOME, under /opt here,
      // while serve keeps its results elsewhere
      expect((await sb.genjob(['report'])).exitCode).toBe(0);
      // nothing exposed on purpose: the sandbox's base (which holds the repository) stays unbound
      const w = await sb.genjob(['work', '--once', '--generator', './gen.sh'], {
        env: { GENJOB_GENERATOR_BIND_RW: '', GENJOB_CACHE_DIR: join(sb.base, 'host-cache') },
      });
      expect(w.exitCode, w.stderr).toBe(0);
      expect(readFileSync(join(sb.repo, '.gen/out', key, 'src/user.py'), 'utf8').split('\n')).toEqual([
        'env: hidden',
        'gen: hidden',
        'git: hidden',
        'tracked: hidden',
        'secret: hidden',
        '',
      ]);
    },
  );

  it.skipIf(process.getuid?.() !== 0)(
    'escape: from a linked worktree, does not show the main checkout under /opt nor the shared .git/',
    async () => {
      const sb = await makeSandbox({ parent: '/opt' });
      writeFileSync(join(sb.repo, '.env'), 'DB_PASSWORD=never-shipped\n');
      const git = (args: string[], cwd = sb.repo) => execa('git', args, { cwd });
      await git(['add', '-A']);
      await git(['-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'base']);
      const wtParent = mkdtempSync(join(tmpdir(), 'genjob-wt-'));
      chmodSync(wtParent, 0o755); // served as root, the sandbox user runs the worktree's gen.sh
      const wt = join(wtParent, 'wt');
      await git(['worktree', 'add', '-q', wt]);
      const common = (await git(['rev-parse', '--path-format=absolute', '--git-common-dir'], wt)).stdout;
      expect(common).toBe(join(sb.repo, '.git'));
      const probe = (what: string, cmd: string) =>
        `if ${cmd} >/dev/null 2>&1; then echo "${what}: SHOWN"; else echo "${what}: hidden"; fi`;
      const gen = join(wt, 'gen.sh');
      writeFileSync(
        gen,
        `#!/bin/sh\n{ ${probe('env', `cat ${sb.repo}/.env`)}; ${probe('git', `ls ${common}`)}; ${probe('main', `cat ${sb.repo}/README.md`)}; } > src/user.py\n`,
        { mode: 0o755 },
      );
      const minted = await sb.genjob(['mint', '--json', '-m', 'Look around', 'src/user.py'], { cwd: wt });
      expect(minted.exitCode, minted.stderr).toBe(0);
      const { key } = JSON.parse(minted.stdout) as { key: string };
      const w = await sb.genjob(['work', '--once', '--generator', './gen.sh'], {
        cwd: wt,
        env: { GENJOB_GENERATOR_BIND_RW: '', GENJOB_CACHE_DIR: join(wt, '..', 'host-cache') },
      });
      expect(w.exitCode, w.stderr).toBe(0);
      expect(readFileSync(join(wt, '.gen/out', key, 'src/user.py'), 'utf8').split('\n')).toEqual([
        'env: hidden',
        'git: hidden',
        'main: hidden',
        '',
      ]);
    },
  );

  it('ends a setpgid child of a generator that outlives --timeout', async () => {
    const sb = await makeSandbox();
    const marker = `300.${process.pid}1`;
    const gen = sb.script('slow.sh', `${setpgidSleep(marker)}\nsleep 60`);
    const key = await mintKey(sb, 'Take forever', ['src/user.py']);
    const w = await sb.genjob(['work', '--once', '--timeout', '1', '--generator', gen]);
    expect(w.exitCode, w.stderr).toBe(0);
    expect(readJson(join(sb.repo, '.gen/receipts', `${key}.json`))).toMatchObject({ status: 'aborted' });
    expect(liveProcesses(['sleep', marker])).toEqual([]);
  });

  it('ends every process of a run cut off by SIGINT of work --watch after --grace', async () => {
    const sb = await makeSandbox();
    const marker = `3600.${process.pid}2`;
    const started = join(sb.base, 'started');
    const gen = sb.script('stuck.sh', `${setpgidSleep(marker)}\ntouch ${started}\nsleep 3600`);
    const key = await mintKey(sb, 'Be stuck', ['src/user.py']);
    const child = execa(process.execPath, [CLI, 'work', '--watch', '--grace', '0.5', '--generator', gen], {
      cwd: sb.repo,
      env: { XDG_CACHE_HOME: sb.cache, GENJOB_GENERATOR_BIND_RW: sb.base },
      reject: false,
    });
    // waits on conditions, however slow the machine (the test's guard ends a wait for ever)
    while (!existsSync(started)) await new Promise((r) => setTimeout(r, 10));
    // the setpgid child is started in the background just before `started`: wait until it runs
    while (liveProcesses(['sleep', marker]).length === 0) await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGINT');
    const done = await child;
    expect(done.exitCode, String(done.stderr)).toBe(130); // work's exit after SIGINT (docs/exit-codes.md)
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    // the child sleeps an hour: gone means killed (the kernel may take a moment to tear its namespace down)
    while (liveProcesses(['sleep', marker]).length > 0) await new Promise((r) => setTimeout(r, 10));
  });
});

describe('without a sandbox', () => {
  it('refuses to work when bubblewrap is missing, naming the package, before claiming anything', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Anything', ['src/user.py']);
    const w = await sb.genjob(['work', '--once', '--generator', 'true'], {
      env: { PATH: join(sb.base, 'no-bin') },
    });
    expect(w.exitCode).toBe(2);
    expect(w.stderr).toMatch(
      /^genjob: EGJ_SANDBOX_UNAVAILABLE: genjob work: bwrap is not installed; install the Debian package bubblewrap /,
    );
    expect(w.stderr.trim().split('\n')).toHaveLength(1);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'leases')).toEqual([]);
  });

  it.skipIf(process.getuid?.() !== 0)(
    'refuses in a chroot, where no user namespace may be made, saying so, before claiming anything',
    async () => {
      const sb = await makeSandbox();
      const key = await mintKey(sb, 'Anything', ['src/user.py']);
      // the whole system again under a new root, in a private mount namespace that dies with the command
      const root = mkdtempSync(join(tmpdir(), 'gj-chroot-'));
      try {
        const inside = `cd ${sb.repo} && exec ${process.execPath} ${CLI} work --once --generator true`;
        const r = await execa(
          'unshare',
          [
            '-m',
            '--propagation',
            'private',
            'sh',
            '-c',
            `mount --rbind / ${root} && exec chroot ${root} sh -c '${inside}'`,
          ],
          { env: { PATH: process.env.PATH, XDG_CACHE_HOME: sb.cache }, extendEnv: false, reject: false },
        );
        expect(r.exitCode, String(r.stderr)).toBe(2);
        expect(String(r.stderr)).toMatch(
          /^genjob: EGJ_SANDBOX_UNAVAILABLE: genjob work: bwrap cannot start a sandbox \(exit 1: bwrap: No permissions to create new namespace.*\); bwrap is installed, but this host may not create the user namespace every sandbox gets \(a chroot, or a kernel or container that forbids them\)/,
        );
        expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
        expect(genDir(sb, 'leases')).toEqual([]);
      } finally {
        rmdirSync(root); // empty on the host: the bind lived only in the command's namespace
      }
    },
  );

  it('runs with --no-sandbox, records sandbox kind none, and verify/apply --require-sandbox refuse it', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('edit.sh', 'echo "# edited" >> src/user.py');
    const key = await mintKey(sb, 'Edit', ['src/user.py']);
    const w = await sb.genjob(['work', '--once', '--no-sandbox', '--generator', gen]);
    expect(w.exitCode, w.stderr).toBe(0);
    const receiptFile = join(sb.repo, '.gen/receipts', `${key}.json`);
    expect(readJson(receiptFile)).toMatchObject({ status: 'ok', sandbox: { kind: 'none', network: true } });
    expect((await sb.genjob(['verify', key])).exitCode).toBe(0);
    const strict = await sb.genjob(['verify', '--require-sandbox', key]);
    expect(strict).toMatchObject({
      exitCode: 3,
      stderr: `genjob: EGJ_UNCONFINED: ${receiptFile}: the generator ran unconfined (sandbox kind is "none"); --require-sandbox refuses it\n`,
    });
    expect((await sb.genjob(['apply', '--require-sandbox', key])).exitCode).toBe(3);
    expect(genDir(sb, 'applied')).toEqual([]);
  });
});
