// `genjob pull` against a hostile remote, through the built CLI: a bare repository reached by file:// and
// served by a real `git daemon` on 127.0.0.1, a TCP server that accepts and never answers, and an ssh
// command that never answers. What the remote sends is hostile: a ref to an object git's strict checks
// refuse is skipped by itself (the refs fetched by halves) while the good keys are pulled and pass the
// gate, a pack over --max-bytes is refused, a pull still running at --timeout is killed with every
// process it started; each time no ref moves and nothing refused stays on disk. git keeps genjob's
// terminal (ssh can prompt there), and what it started goes with genjob when genjob is stopped.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveProcesses } from '../helpers/processes.js';
import { tempDir } from '../helpers/temp-store.js';
import { fakeReceived, git, gitEnv } from './git-helpers.js';
import { CLI, runCli } from './helpers.js';

let base: string;
let env: Record<string, string>;
let daemon: ChildProcess;
let daemonPort: number;

/** A port free a moment ago on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  base = tempDir('gj-pull-bounds-', undefined, 'file');
  env = gitEnv(base);
  daemonPort = await freePort();
  // every repository under base, served read-only as git://127.0.0.1:PORT/<name>
  daemon = spawn(
    'git',
    [
      'daemon',
      '--reuseaddr',
      '--export-all',
      `--base-path=${base}`,
      '--listen=127.0.0.1',
      `--port=${daemonPort}`,
      base,
    ],
    { env: { ...process.env, ...env }, stdio: 'ignore', detached: true },
  );
  // ready once a client is answered (ls-remote of a repository it serves)
  const probe = join(base, 'probe.git');
  await git(base, ['init', '-q', '--bare', probe], env);
  for (let tries = 0; ; tries++) {
    const r = await execa('git', ['ls-remote', `git://127.0.0.1:${daemonPort}/probe.git`], {
      env,
      reject: false,
    });
    if (r.exitCode === 0) break;
    if (tries > 600) throw new Error(`git daemon did not answer: ${r.stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
});

afterAll(() => {
  if (daemon?.pid) process.kill(-daemon.pid, 'SIGKILL');
});

interface Transport {
  name: string;
  url: (bare: string) => string;
}
const TRANSPORTS: Transport[] = [
  { name: 'file://', url: (bare) => `file://${bare}` },
  { name: 'git daemon', url: (bare) => `git://127.0.0.1:${daemonPort}/${bare.slice(base.length + 1)}` },
];

let worlds = 0;

/**
 * A bare remote holding one good key (pushed by a clone), and a clone `b` of it that pulled once: its
 * refs/genjob-pulled/ are what each refused pull must leave as they were.
 */
async function world(t: Transport) {
  const dir = join(base, `w${++worlds}`);
  await git(base, ['init', '-q', dir], env);
  const bare = join(base, `w${worlds}.git`);
  await git(base, ['init', '-q', '--bare', bare], env);
  writeFileSync(join(dir, '.gitignore'), '.gen/\n');
  await git(dir, ['add', '-A'], env);
  await git(dir, ['commit', '-qm', 'seed'], env);
  await git(dir, ['push', '-q', `file://${bare}`, 'main'], env);
  const cli = (cwd: string, args: readonly string[]) =>
    runCli(args, { cwd, env: { ...env, XDG_CACHE_HOME: join(base, 'cache') } });
  const [good] = fakeReceived(dir, 1, 'good');
  expect((await cli(dir, ['push', `file://${bare}`])).exitCode).toBe(0);
  const b = join(base, `w${worlds}-b`);
  await git(base, ['clone', '-q', t.url(bare), b], env);
  const first = await cli(b, ['pull', '--json']);
  expect(first.exitCode, first.stderr).toBe(0);
  expect(JSON.parse(first.stdout).keys).toEqual([good]);
  const pulled = () =>
    git(b, ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/genjob-pulled/'], env);
  const before = await pulled();
  expect(before).toContain(`refs/genjob-pulled/keys/${good}`);
  /** index-pack's temporary files (a pack refused half way) and the packs in b. */
  const packDir = join(b, '.git/objects/pack');
  const tmpFiles = () =>
    existsSync(packDir) ? readdirSync(packDir).filter((n) => n.startsWith('tmp_')) : [];
  /** Whether b holds the object. */
  const has = async (oid: string) =>
    (await execa('git', ['cat-file', '-e', oid], { cwd: b, env, reject: false })).exitCode === 0;
  return { bare, b, cli, good: good!, pulled, before, tmpFiles, has };
}

/** Point `ref` of the remote at a commit of `tree` (written there, as a hostile pusher would). */
async function forgeRef(bare: string, ref: string, tree: string): Promise<string> {
  const commit = await git(bare, ['commit-tree', tree, '-m', 'forged'], env);
  await git(bare, ['update-ref', ref, commit], env);
  return commit;
}

const EVIL_KEY = 'e'.repeat(64);

/** Objects git's strict checks (fsck) refuse, each written into the remote under an object id of its own. */
const MALFORMED = [
  {
    name: 'a commit whose author has no email and no date',
    async make(bare: string) {
      const tree = await git(bare, ['mktree'], env, '');
      const commit = await git(
        bare,
        ['hash-object', '-t', 'commit', '--literally', '-w', '--stdin'],
        env,
        `tree ${tree}\nauthor evil\ncommitter evil\n\nforged\n`,
      );
      await git(bare, ['update-ref', `refs/genjob/keys/${EVIL_KEY}`, commit], env);
      return commit;
    },
    said: /missingEmail|bad author/i,
  },
  {
    name: 'a tree holding an entry named .git (a checkout would write into .git/)',
    async make(bare: string) {
      const blob = await git(bare, ['hash-object', '-w', '--stdin'], env, '[core]\n\tfsmonitor = evil\n');
      const tree = await git(bare, ['mktree'], env, `100644 blob ${blob}\t.git\n`);
      return forgeRef(bare, `refs/genjob/keys/${EVIL_KEY}`, tree);
    },
    said: /hasDotgit/,
  },
  {
    name: 'a tree naming one entry twice',
    async make(bare: string) {
      const blob = await git(bare, ['hash-object', '-w', '--stdin'], env, 'x');
      const entry = Buffer.concat([Buffer.from('100644 job.json\0'), Buffer.from(blob, 'hex')]);
      const tree = await execa('git', ['hash-object', '-t', 'tree', '--literally', '-w', '--stdin'], {
        cwd: bare,
        env,
        input: Buffer.concat([entry, entry]),
      });
      return forgeRef(bare, `refs/genjob/keys/${EVIL_KEY}`, String(tree.stdout).trim());
    },
    said: /duplicateEntries/,
  },
];

for (const t of TRANSPORTS) {
  describe(`genjob pull over ${t.name}`, () => {
    for (const m of MALFORMED) {
      it(`hostile: skips ${m.name} by itself (exit 0, the ref named with git's words), pulls the good key and keeps nothing of it`, async () => {
        const w = await world(t);
        const evil = await m.make(w.bare);
        // the user's own config turning git's checks off does not turn off pull's
        await git(w.b, ['config', 'fetch.fsckObjects', 'false'], env);
        await git(w.b, ['config', 'transfer.fsckObjects', 'false'], env);
        const r = await w.cli(w.b, ['pull']);
        expect(r.exitCode, r.stderr).toBe(0);
        expect(r.stdout).toBe('1 key(s) of verification material from origin, 1 ref(s) skipped\n');
        expect(r.stderr).toMatch(
          new RegExp(
            `^genjob: warning: origin refs/genjob/keys/${EVIL_KEY}: git's object checks refused what it points to: error: object [0-9a-f]{40}: \\w+: .*; skipped \\(a gate that needs this key fails\\)\n$`,
          ),
        );
        expect(r.stderr).toMatch(m.said);
        const json = JSON.parse((await w.cli(w.b, ['pull', '--json'])).stdout);
        expect(json).toMatchObject({
          ok: true,
          keys: [w.good],
          refused: [{ ref: `refs/genjob/keys/${EVIL_KEY}`, rule: expect.stringMatching(m.said) }],
        });
        expect(await w.pulled()).toBe(w.before);
        expect(await w.has(evil)).toBe(false);
        expect(w.tmpFiles()).toEqual([]);
        expect(readdirSync(join(w.b, '.git')).filter((n) => n.startsWith('genjob-pull-'))).toEqual([]);
      });
    }

    it('hostile: refuses a pack over --max-bytes (exit 3, EGJ_PULL_TOO_LARGE), keeping nothing of it; under the bound it comes in', async () => {
      const w = await world(t);
      // 512 KiB that no compression shrinks, under a key ref
      const big = join(base, `big-${worlds}`);
      writeFileSync(big, randomBytes(512 * 1024));
      const blob = await git(w.bare, ['hash-object', '-w', big], env);
      const tree = await git(w.bare, ['mktree'], env, `100644 blob ${blob}\tjob.json\n`);
      await forgeRef(w.bare, `refs/genjob/keys/${EVIL_KEY}`, tree);
      const r = await w.cli(w.b, ['pull', '--max-bytes', '128K']);
      expect(r).toMatchObject({
        exitCode: 3,
        stdout: '',
        stderr: `genjob: EGJ_PULL_TOO_LARGE: pull from origin: the remote sent more than 131072 bytes (--max-bytes); git was stopped, nothing it fetched was kept and no ref changed\n`,
      });
      expect(await w.pulled()).toBe(w.before);
      expect(await w.has(blob)).toBe(false);
      expect(w.tmpFiles()).toEqual([]);
      // the same remote under a bound it fits: fetched, its ref skipped as no material
      const ok = await w.cli(w.b, ['pull', '--max-bytes', '4M', '--json']);
      expect(ok.exitCode, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({
        keys: [w.good],
        refused: [{ ref: `refs/genjob/keys/${EVIL_KEY}` }],
      });
      expect(await w.has(blob)).toBe(true);
    });
  });
}

describe('genjob pull from a shared remote where one ref is malformed', () => {
  it('hostile: one pusher’s malformed ref stops no one’s pull: the good keys are pulled in O(log n) fetches, the gate passes a commit of a good key and fails the bad one’s', async () => {
    const dir = join(base, `gate-${++worlds}`);
    const bare = join(base, `gate-${worlds}.git`);
    await git(base, ['init', '-q', dir], env);
    await git(base, ['init', '-q', '--bare', bare], env);
    writeFileSync(join(dir, '.gitignore'), '.gen/\n');
    await git(dir, ['add', '-A'], env);
    await git(dir, ['commit', '-qm', 'seed'], env);
    const cli = (cwd: string, args: readonly string[]) =>
      runCli(args, { cwd, env: { ...env, XDG_CACHE_HOME: join(base, 'cache') } });
    const keys = fakeReceived(dir, 20, 'shared');
    const [good, bad] = [keys[3]!, keys[12]!];
    // a commit of each, on main
    for (const k of [good, bad]) {
      const applied = await cli(dir, ['apply', k, '--commit']);
      expect(applied.exitCode, applied.stderr).toBe(0);
    }
    await git(dir, ['push', '-q', `file://${bare}`, 'main'], env);
    expect((await cli(dir, ['push', `file://${bare}`])).exitCode).toBe(0);
    // whoever can push one ref moves the bad key's to a malformed commit
    const tree = await git(bare, ['mktree'], env, '');
    const evil = await git(
      bare,
      ['hash-object', '-t', 'commit', '--literally', '-w', '--stdin'],
      env,
      `tree ${tree}\nauthor evil\ncommitter evil\n\nforged\n`,
    );
    await git(bare, ['update-ref', `refs/genjob/keys/${bad}`, evil], env);
    // a contributor's clone, whose upload-pack for origin notes each of its runs (a listing or a fetch)
    const b = join(base, `gate-${worlds}-b`);
    await git(base, ['clone', '-q', `file://${bare}`, b], env);
    const runs = join(base, `gate-${worlds}-runs`);
    const uploadPack = join(base, `gate-${worlds}-upload-pack`);
    writeFileSync(uploadPack, `#!/bin/sh\necho run >> '${runs}'\nexec git-upload-pack "$@"\n`, {
      mode: 0o755,
    });
    await git(b, ['config', 'remote.origin.uploadpack', uploadPack], env);
    const r = await cli(b, ['pull', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: true,
      keys: keys.filter((k) => k !== bad),
      refused: [{ ref: `refs/genjob/keys/${bad}`, rule: expect.stringMatching(/missingEmail/) }],
    });
    expect(r.stderr).toMatch(new RegExp(`^genjob: warning: origin refs/genjob/keys/${bad}: .*missingEmail`));
    // the fetch of all, the listing, two fetches per halving of 20 refs: 12 at most, where one a ref is 22
    expect(readFileSync(runs, 'utf8').split('\n').filter(Boolean).length).toBeLessThanOrEqual(
      2 + 2 * Math.ceil(Math.log2(keys.length)),
    );
    const bHas = async (oid: string) =>
      (await execa('git', ['cat-file', '-e', oid], { cwd: b, env, reject: false })).exitCode === 0;
    expect(await bHas(evil)).toBe(false);
    // the gate: the good key's commit passes, the bad key's fails, named
    const [seed, ofGood, ofBad] = (await git(b, ['rev-list', '--reverse', 'HEAD'], env)).split('\n');
    const passed = await cli(b, ['verify', '--commits', `${seed}..${ofGood}`]);
    expect(passed.exitCode, passed.stderr).toBe(0);
    const failed = await cli(b, ['verify', '--commits', `${seed}..${ofBad}`]);
    expect(failed.exitCode, failed.stdout).toBe(3);
    expect(failed.stderr).toContain(`EGJ_COMMIT_RECEIPT_MISSING: commit ${ofBad!.slice(0, 12)}`);
  });
});

/** The built CLI with a guard against a hang: killed after 120 s (a pull with no bound never ends). */
const guarded = (cwd: string, args: readonly string[], extra: Record<string, string> = {}) =>
  execa(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...env, XDG_CACHE_HOME: join(base, 'cache'), GENJOB_DEBUG: '', ...extra },
    reject: false,
    stripFinalNewline: false,
    timeout: 120_000,
  });

describe('genjob pull from a remote that never answers', () => {
  let server: Server;
  let port: number;
  const held: Socket[] = [];
  beforeAll(async () => {
    // accepts every connection and says nothing, ever
    server = createServer((s) => {
      held.push(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => {
    for (const s of held) s.destroy();
    server.close();
  });

  it('hostile: a git:// server that accepts and stalls is stopped at --timeout (exit 75, EGJ_GIT_TIMEOUT); refs stay as they were', async () => {
    const w = await world(TRANSPORTS[0]!);
    const url = `git://127.0.0.1:${port}/stall.git`;
    const r = await guarded(w.b, ['pull', url, '--timeout', '3s', '--json']);
    expect(r.exitCode, String(r.stderr)).toBe(75);
    expect(String(r.stderr)).toBe(
      `genjob: EGJ_GIT_TIMEOUT: pull from ${url}: git fetch --quiet did not finish within 3 s; it was stopped, with every process it started; no ref changed and nothing it fetched was kept; try again, or give a longer --timeout than 3s\n`,
    );
    expect(JSON.parse(String(r.stdout))).toMatchObject({ ok: false, code: 'EGJ_GIT_TIMEOUT' });
    expect(await w.pulled()).toBe(w.before);
  });

  it('hostile: an ssh command that stalls is killed with every process it started at --timeout', async () => {
    const w = await world(TRANSPORTS[0]!);
    const started = join(base, `ssh-started-${worlds}`);
    // stands for ssh: starts a child of its own (marked by its argument) and waits on it for ever
    const ssh = join(base, `stall-ssh-${worlds}`);
    writeFileSync(ssh, `#!/bin/sh\nsleep 987.654 &\necho $! > '${started}'\nwait\n`, { mode: 0o755 });
    const r = await guarded(w.b, ['pull', 'ssh://evil.invalid/x.git', '--timeout', '5s'], {
      GIT_SSH_COMMAND: ssh,
      GIT_SSH_VARIANT: 'simple',
    });
    try {
      expect(r.exitCode, String(r.stderr)).toBe(75);
      expect(String(r.stderr)).toMatch(/^genjob: EGJ_GIT_TIMEOUT: pull from ssh:\/\/evil.invalid\/x.git: /);
      expect(existsSync(started), 'the stalling ssh ran').toBe(true);
      await expect.poll(() => liveProcesses(['sleep', '987.654'])).toEqual([]);
      expect(await w.pulled()).toBe(w.before);
    } finally {
      for (const pid of liveProcesses(['sleep', '987.654'])) process.kill(pid, 'SIGKILL');
    }
  });

  it.each(['SIGINT', 'SIGTERM'] as const)(
    'hostile: genjob stopped by %s while the fetch stalls takes the fetch and all it started with it',
    async (signal) => {
      const w = await world(TRANSPORTS[0]!);
      const started = join(base, `ssh-started-${worlds}`);
      const mark = ['sleep', `765.${worlds}`];
      const ssh = join(base, `stall-ssh-${worlds}`);
      writeFileSync(ssh, `#!/bin/sh\n${mark.join(' ')} &\necho $! > '${started}'\nwait\n`, { mode: 0o755 });
      // a signal sent to genjob alone (kill, a CI runner) reaches no process git started: genjob ends them
      const child = guarded(w.b, ['pull', 'ssh://evil.invalid/x.git', '--timeout', '10m'], {
        GIT_SSH_COMMAND: ssh,
        GIT_SSH_VARIANT: 'simple',
      });
      try {
        await expect.poll(() => existsSync(started)).toBe(true);
        child.kill(signal);
        const r = await child;
        expect(r.signal, String(r.stderr)).toBe(signal);
        await expect.poll(() => liveProcesses(mark)).toEqual([]);
        expect(await w.pulled()).toBe(w.before);
      } finally {
        for (const pid of liveProcesses(mark)) process.kill(pid, 'SIGKILL');
      }
    },
  );

  it('a remote that answers is not stopped: a pull well within --timeout fetches as before', async () => {
    const w = await world(TRANSPORTS[1]!);
    const r = await guarded(w.b, ['pull', '--timeout', '10m', '--json']);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(JSON.parse(String(r.stdout)).keys).toEqual([w.good]);
  });

  it('takes a --timeout above 0s and at most a week, and a --max-bytes above 0', async () => {
    const w = await world(TRANSPORTS[0]!);
    for (const [args, message] of [
      [
        ['--timeout', '0s'],
        'genjob: EGJ_BAD_DURATION: --timeout "0s": give a time above 0s and at most a week (7d)\n',
      ],
      [
        ['--timeout', '8d'],
        'genjob: EGJ_BAD_DURATION: --timeout "8d": give a time above 0s and at most a week (7d)\n',
      ],
      [['--timeout', '10'], /^genjob: EGJ_BAD_DURATION: --timeout "10": give a whole number and a unit/],
      [['--max-bytes', '0'], /--max-bytes <size>' argument '0' is invalid. takes a size above 0/],
      [['--max-bytes', '1T'], /--max-bytes <size>' argument '1T' is invalid/],
    ] as const) {
      const r = await w.cli(w.b, ['pull', ...args]);
      expect(r.exitCode, r.stderr).toBe(2);
      if (typeof message === 'string') expect(r.stderr).toBe(message);
      else expect(r.stderr).toMatch(message);
    }
    expect(await w.pulled()).toBe(w.before);
  });
});

/** `sh` words quoted for a command line `script -c` runs. */
const sq = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;

describe('genjob pull over ssh, run from a terminal', () => {
  /** The built CLI under `script` (util-linux): a pseudo-terminal its controlling terminal, as in a shell. */
  const inTerminal = (cwd: string, args: readonly string[], extra: Record<string, string>) =>
    execa('script', ['-qec', [process.execPath, CLI, ...args].map(sq).join(' '), '/dev/null'], {
      cwd,
      env: { ...env, XDG_CACHE_HOME: join(base, 'cache'), GENJOB_DEBUG: '', ...extra },
      reject: false,
      timeout: 120_000,
    });

  it('ssh keeps the terminal: it can open /dev/tty to ask for a passphrase or a host key', async () => {
    const w = await world(TRANSPORTS[0]!);
    const said = join(base, `tty-${worlds}`);
    // stands for ssh: says whether its controlling terminal opens, then fails as an unreachable host would
    const ssh = join(base, `tty-ssh-${worlds}`);
    writeFileSync(
      ssh,
      `#!/bin/sh
if (: </dev/tty) 2>/dev/null; then echo opens > '${said}'; else echo none > '${said}'; fi
exit 255
`,
      { mode: 0o755 },
    );
    const r = await inTerminal(w.b, ['pull', 'ssh://host.invalid/x.git', '--timeout', '1m'], {
      GIT_SSH_COMMAND: ssh,
      GIT_SSH_VARIANT: 'simple',
    });
    expect(r.exitCode, String(r.stdout)).toBe(2);
    expect(readFileSync(said, 'utf8')).toBe('opens\n');
    expect(await w.pulled()).toBe(w.before);
  });

  it('hostile: Ctrl-C at the terminal while the fetch stalls leaves nothing git started behind, even a process that ignores SIGINT and SIGHUP', async () => {
    const w = await world(TRANSPORTS[0]!);
    const started = join(base, `ssh-started-${worlds}`);
    const mark = ['sleep', `766.${worlds}`];
    // a child that ignores SIGINT and SIGHUP: neither the terminal's Ctrl-C nor its hang-up ends it
    const ssh = join(base, `stall-ssh-${worlds}`);
    writeFileSync(ssh, `#!/bin/sh\ntrap '' INT HUP\n${mark.join(' ')} &\necho $! > '${started}'\nwait\n`, {
      mode: 0o755,
    });
    const child = execa(
      'script',
      [
        '-qec',
        [process.execPath, CLI, 'pull', 'ssh://evil.invalid/x.git', '--timeout', '10m'].map(sq).join(' '),
        '/dev/null',
      ],
      {
        cwd: w.b,
        env: {
          ...env,
          XDG_CACHE_HOME: join(base, 'cache'),
          GENJOB_DEBUG: '',
          GIT_SSH_COMMAND: ssh,
          GIT_SSH_VARIANT: 'simple',
        },
        reject: false,
        timeout: 120_000,
      },
    );
    try {
      await expect.poll(() => existsSync(started), { timeout: 30_000 }).toBe(true);
      child.stdin!.write('\x03');
      const r = await child;
      expect(r.exitCode, String(r.stdout)).toBe(130);
      await expect.poll(() => liveProcesses(mark)).toEqual([]);
      expect(await w.pulled()).toBe(w.before);
    } finally {
      child.kill('SIGKILL');
      for (const pid of liveProcesses(mark)) process.kill(pid, 'SIGKILL');
    }
  });
});
