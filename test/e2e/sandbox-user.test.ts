// Served as root, the generator is not root: serve starts bubblewrap as the sandbox user (nobody unless
// --sandbox-user names another), so what the kernel checks by uid holds inside as for any other user.
// Root inside (--sandbox-user root, or genjob before it dropped) read every root-only file a view shows,
// left setuid-root files in a writable bind, and was exempt from RLIMIT_NPROC. Real bwrap, the built CLI,
// a local serve run as root.
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-store.js';
import { attempts, binFlags, mintJob, script, useStrays } from './escape-helpers.js';
import { CLI, committedReceipt, genjob, useBoxes } from './ssh-helpers.js';

const box = useBoxes();
const asRoot = process.getuid?.() === 0;

/** Files a test made outside its temp dirs (in /opt, /usr...), removed after it whatever happened. */
const strays = useStrays();

/** Root-only files under /usr, /opt and an exposed directory: each a 0600 file, and one in a 0700 directory. */
function rootOnlyFiles(mark: string): { exposed: string; files: string[] } {
  const exposed = tempDir('gj-exposed-');
  chmodSync(exposed, 0o755);
  const files: string[] = [];
  for (const parent of ['/usr/local/share', '/opt', exposed]) {
    const dir = path.join(parent, mark);
    strays.push(dir);
    mkdirSync(dir, { mode: 0o755 });
    writeFileSync(path.join(dir, 'token'), 'TOKEN\n', { mode: 0o600 });
    mkdirSync(path.join(dir, 'private'), { mode: 0o700 });
    writeFileSync(path.join(dir, 'private', 'rules'), 'RULE\n', { mode: 0o644 });
    files.push(path.join(dir, 'token'), path.join(dir, 'private', 'rules'));
  }
  return { exposed, files };
}

describe.skipIf(!asRoot)('served as root, the generator runs as the sandbox user', () => {
  it('escape: served as root a generator cannot read a root-only file under /usr, /opt or an exposed path', async () => {
    const sb = await box();
    const { exposed, files } = rootOnlyFiles(`gj-root-only-${process.pid}`);
    const tries = Object.fromEntries(files.map((f, i) => [`read-${i}`, `cat ${f}`]));
    const gen = script(sb, 'read.sh', `{ id -u; ${attempts(tries)}; } > README.md`);
    const k = await mintJob(sb, ['-m', 'read what only root may', 'README.md']);
    const w = await genjob(sb, [
      'work',
      '--once',
      '--generator',
      gen,
      '--generator-bind',
      exposed,
      ...binFlags(sb),
    ]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(committedReceipt(sb, k), String(committedReceipt(sb, k).reason)).toMatchObject({ status: 'ok' });
    const report = readFileSync(path.join(sb.repo, '.gen/out', k, 'README.md'), 'utf8')
      .trim()
      .split('\n');
    expect(report).toEqual(['65534', ...Object.keys(tries).map((n) => `${n}: refused`)]);
  });

  it('escape: served as root a generator cannot leave a setuid-root file in a --generator-bind-rw path', async () => {
    const sb = await box();
    // a directory the host shares writable with its generators (any user may write it, as /tmp)
    const shared = tempDir('gj-shared-');
    chmodSync(shared, 0o1777);
    const sh = path.join(shared, 'rootsh');
    const gen = script(sb, 'plant.sh', `cp /bin/sh ${sh} && chmod 4755 ${sh}; echo planted > README.md`);
    const k = await mintJob(sb, ['-m', 'plant a setuid shell', 'README.md']);
    const w = await genjob(sb, [
      'work',
      '--once',
      '--generator',
      gen,
      '--generator-bind-rw',
      shared,
      ...binFlags(sb),
    ]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(committedReceipt(sb, k)).toMatchObject({ status: 'ok' });
    // what it left there is the sandbox user's: a setuid bit on it makes no one root
    expect(existsSync(sh)).toBe(true);
    const st = lstatSync(sh);
    expect({ uid: st.uid, gid: st.gid }).toEqual({ uid: 65534, gid: 65534 });
  });

  it('hostile: a fork bomb is held by the process limit and the run ends before --timeout', async () => {
    const sb = await box();
    // more processes than the limit (4096 a run), each waiting far past --timeout: held, the shell
    // that cannot fork ends the run; not held, it waits for its children until serve kills it at --timeout
    const gen = script(
      sb,
      'bomb.sh',
      'i=0\nwhile [ $i -lt 5000 ]; do sleep 120 & i=$((i+1)); done\necho "forked $i" >&2\nwait',
    );
    const k = await mintJob(sb, ['-m', 'fork until the host gives out', 'README.md']);
    const started = Date.now();
    const w = await genjob(sb, ['work', '--once', '--timeout', '40', '--generator', gen, ...binFlags(sb)]);
    const took = Date.now() - started;
    expect(w.exitCode, String(w.stderr)).toBe(0);
    const r = committedReceipt(sb, k);
    expect(r).toMatchObject({ status: 'aborted' });
    expect(String(r.reason)).not.toMatch(/timed out/);
    expect(String(r.reason)).toMatch(/exited with status \d+/);
    expect(took).toBeLessThan(30_000);
  }, 90_000);

  it('hostile: processes of the sandbox user elsewhere on the host cannot make an unconfined run fail to fork', async () => {
    const sb = await box();
    // 4,200 processes of nobody outside any sandbox (another job's sandbox may hold as many): a process
    // limit of 4096 on the unconfined run would count them all, and its shell could not fork
    const holder = execa(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        'perl',
        '-e',
        '$| = 1; my $n=0; while ($n < 4200) { my $p = fork(); die "fork: $!" unless defined $p; if (!$p) { sleep 90; exit 0 } $n++ } print "held\\n"; sleep 90',
      ],
      { detached: true, reject: false },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout?.on('data', (d: Buffer) => {
          if (d.toString().includes('held')) resolve();
        });
        void holder.then((r) => reject(new Error(`holder ended: ${r.stderr}`)));
      });
      const gen = script(sb, 'forks.sh', 'for i in 1 2 3; do sh -c true; done; echo forked > README.md');
      const k = await mintJob(sb, ['-m', 'fork a little', 'README.md']);
      const w = await genjob(sb, ['work', '--once', '--no-sandbox', '--generator', gen]);
      expect(w.exitCode, String(w.stderr)).toBe(0);
      expect(committedReceipt(sb, k)).toMatchObject({ status: 'ok' });
    } finally {
      process.kill(-holder.pid!, 'SIGKILL');
    }
  }, 90_000);

  it('--sandbox-user root keeps the sandbox root: uid 0 inside, root-only files under /etc still masked', async () => {
    const sb = await box();
    const mark = `gj-root-sandbox-${process.pid}`;
    const token = `/etc/${mark}-token`;
    strays.push(token);
    writeFileSync(token, 'TOKEN\n', { mode: 0o600 });
    const gen = script(
      sb,
      'root.sh',
      `{ id -u; ${attempts({ 'read-etc-token': `cat ${token}` })}; } > README.md`,
    );
    const k = await mintJob(sb, ['-m', 'who am I', 'README.md']);
    const w = await genjob(sb, [
      'work',
      '--once',
      '--sandbox-user',
      'root',
      '--generator',
      gen,
      ...binFlags(sb),
    ]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(readFileSync(path.join(sb.repo, '.gen/out', k, 'README.md'), 'utf8')).toBe(
      '0\nread-etc-token: refused\n',
    );
  });

  it('a generator script the sandbox user cannot read is refused before anything runs, naming the remedy', async () => {
    const sb = await box();
    const hidden = tempDir('gj-private-');
    chmodSync(hidden, 0o700);
    const gen = path.join(hidden, 'gen.sh');
    writeFileSync(gen, '#!/bin/sh\necho x > README.md\n', { mode: 0o755 });
    await mintJob(sb, ['-m', 'run a private script', 'README.md']);
    const w = await genjob(sb, ['work', '--once', '--generator', gen]);
    expect(String(w.stderr)).toContain(
      `the sandbox user runs it, and ${hidden} is not searchable by nobody (65534:65534); put it where that user may read it, or pass --sandbox-user root`,
    );
  });

  it('a node the sandbox user cannot reach (every sandbox shows its directory) is refused naming the remedy, not a bwrap that fails', async () => {
    const sb = await box();
    const hidden = tempDir('gj-node-');
    chmodSync(hidden, 0o700);
    const node = path.join(hidden, 'node');
    try {
      linkSync(process.execPath, node);
    } catch {
      copyFileSync(process.execPath, node);
      chmodSync(node, 0o755);
    }
    const k = await mintJob(sb, ['-m', 'run under a private node', 'README.md']);
    const w = await execa(node, [CLI, 'work', '--once', '--generator', 'echo x >> README.md'], {
      cwd: sb.repo,
      reject: false,
      env: { XDG_CACHE_HOME: sb.workerCache, NO_COLOR: '1' },
    });
    expect(w.exitCode).not.toBe(0);
    expect(String(w.stderr)).toContain(
      `EGJ_SANDBOX_UNAVAILABLE: local: genjob serve: the node running genjob is in ${hidden}, which every sandbox shows, and the sandbox user nobody (65534:65534) cannot reach it (${hidden} is not searchable by it); run genjob with a node installed where every user may read it`,
    );
    expect(String(w.stderr)).not.toMatch(/bwrap: Can't find source path/);
    expect(existsSync(path.join(sb.repo, '.gen/out', k))).toBe(false);
  });

  it('under a umask of 027, the sandbox user still reads its job file and writes its workspace', async () => {
    const sb = await box();
    const gen = script(sb, 'job.sh', 'grep -q instruction "$GENJOB_JOB" && echo read > README.md');
    const k = await mintJob(sb, ['-m', 'read the job file', 'README.md']);
    const w = await execa(
      'sh',
      [
        '-c',
        'umask 027 && exec "$0" "$@"',
        process.execPath,
        CLI,
        'work',
        '--once',
        '--generator',
        gen,
        ...binFlags(sb),
      ],
      { cwd: sb.repo, reject: false, env: { XDG_CACHE_HOME: sb.workerCache, NO_COLOR: '1' } },
    );
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(committedReceipt(sb, k), String(committedReceipt(sb, k).reason)).toMatchObject({ status: 'ok' });
  });
});
