// Several worker boxes sharing one .gen/ over sshfs (docs/scale-out.md cites this test as its evidence).
// The suite's sshd serves a directory; two sshfs mounts of it stand for two machines. First the
// primitives genjob's claims and fencing rest on, raced from one process on each mount: O_EXCL create
// and rename of the same names. Then a repository on the share with JOBS jobs queued and three
// `genjob work --drain` on each mount at once: every key generated once and received once, every claim
// in the journal, and no torn journal line (each process appends to its own segment: O_APPEND alone
// is not atomic across sshfs clients). GENJOB_SSHFS_JOBS sets the number of jobs (default 150; docs/scale-out.md's figures are of 300).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/store/journal.js';
import { Store } from '../../src/store/store.js';
import { useSshd } from '../helpers/sshd.js';
import { afterTest, tempDir } from '../helpers/temp-store.js';
import { mintFileJobs, spawnCli } from './worker-helpers.js';

const JOBS = Number(process.env.GENJOB_SSHFS_JOBS ?? 150);
const WORKERS_PER_MOUNT = 3;

const sshd = useSshd();

/** `share` mounted at a fresh directory through the suite's sshd; unmounted after the test. */
function mount(share: string, at: string): string {
  mkdirSync(at, { recursive: true });
  const s = sshd();
  if (!existsSync('/dev/fuse'))
    throw new Error('sshfs needs /dev/fuse (modprobe fuse, or run the container with --device /dev/fuse)');
  // -F: the suite's client config (port, key, known_hosts, strict host key checking)
  execFileSync('sshfs', ['-F', s.sshConfigFile, `${s.hostAlias}:${share}`, at], { stdio: 'pipe' });
  afterTest(() => {
    try {
      execFileSync('fusermount', ['-u', at], { stdio: 'pipe' });
    } catch {
      execFileSync('umount', ['-l', at], { stdio: 'pipe' });
    }
  });
  return at;
}

/** Run `script` (node -e) with `args`, resolving to its stdout; fails on a non-zero exit. */
function node(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

// Tries, for i in 0..N-1, an O_EXCL create of excl/<i>, a link of a fresh file of its own to linked/<i>
// and a rename of src/<i> to won/<i>.<tag>; prints the indexes it won of each, and the errno of each loss.
const RACER = `
const fs = require('node:fs');
const [dir, tag, n] = process.argv.slice(1);
const won = { excl: [], linked: [], renamed: [] }, lost = {};
const attempt = (kind, i, f) => {
  try { f(); won[kind].push(i); } catch (e) { lost[kind + ' ' + e.code] = (lost[kind + ' ' + e.code] ?? 0) + 1; }
};
for (let i = 0; i < Number(n); i++) {
  attempt('excl', i, () => fs.closeSync(fs.openSync(dir + '/excl/' + i, 'wx')));
  const mine = dir + '/tmp/' + tag + '-' + i;
  fs.writeFileSync(mine, tag);
  attempt('linked', i, () => fs.linkSync(mine, dir + '/linked/' + i));
  fs.unlinkSync(mine);
  attempt('renamed', i, () => fs.renameSync(dir + '/src/' + i, dir + '/won/' + i + '.' + tag));
}
process.stdout.write(JSON.stringify({ won, lost }));
`;

// Appends its key to a log outside the share (one line per generation) and rewrites its input.
const GENERATOR = `printf '%s\\n' "$GENJOB_KEY" >> "$GEN_LOG"
for p in $GENJOB_INSTRUCTION; do printf 'new %s %s\\n' "$p" "$GENJOB_KEY" > "$p"; done
`;

describe('one .gen/ shared by two sshfs mounts', () => {
  it('O_EXCL create and rename each have exactly one winner across the two mounts', async () => {
    const base = tempDir('genjob-sshfs-');
    const share = join(base, 'share');
    const N = 300;
    for (const d of ['excl', 'linked', 'tmp', 'src', 'won']) mkdirSync(join(share, d), { recursive: true });
    for (let i = 0; i < N; i++) writeFileSync(join(share, 'src', String(i)), `${i}\n`);
    const mounts = [mount(share, join(base, 'm1')), mount(share, join(base, 'm2'))];
    const results = (
      await Promise.all(mounts.flatMap((m, j) => [0, 1].map((k) => node(RACER, [m, `${j}${k}`, String(N)]))))
    ).map((o) => JSON.parse(o) as { won: Record<string, number[]>; lost: Record<string, number> });
    for (const kind of ['excl', 'linked', 'renamed']) {
      const wins = results.flatMap((r) => r.won[kind] ?? []).sort((a, b) => a - b);
      expect(wins, `${kind}: each index won exactly once`).toEqual(Array.from({ length: N }, (_, i) => i));
    }
    const lost: Record<string, number> = {};
    for (const r of results) for (const [k, v] of Object.entries(r.lost)) lost[k] = (lost[k] ?? 0) + v;
    console.log(
      `sshfs primitives: ${N} names, 4 racers on 2 mounts; losses by errno: ${JSON.stringify(lost)}`,
    );
    expect(readdirSync(join(share, 'src'))).toEqual([]);
    expect(readdirSync(join(share, 'won'))).toHaveLength(N);
  });

  it(`drains ${JOBS} jobs with three workers on each mount: each generated once, received once, no torn journal line`, async () => {
    const base = tempDir('genjob-sshfs-');
    const share = join(base, 'share');
    const root = join(share, 'repo');
    mkdirSync(join(root, '.git'), { recursive: true });
    const store = new Store(root).ensure();
    const keys = mintFileJobs(store, JOBS);
    writeFileSync(join(base, 'gen.sh'), GENERATOR);
    const log = join(base, 'gen.log');
    const mounts = [mount(share, join(base, 'm1')), mount(share, join(base, 'm2'))];

    const started = Date.now();
    const workers = await Promise.all(
      mounts.flatMap((m, j) =>
        Array.from({ length: WORKERS_PER_MOUNT }, (_, k) =>
          spawnCli(
            join(m, 'repo'),
            [
              'work',
              '--drain',
              '--quiet',
              '--json',
              '--no-sandbox',
              '--generator',
              `sh ${join(base, 'gen.sh')}`,
              '--generator-env',
              'GEN_LOG',
            ],
            // a cache per worker: a job claimed twice would show as two generations, not one cache hit
            { ...process.env, XDG_CACHE_HOME: join(base, `cache-${j}-${k}`), GEN_LOG: log },
          ),
        ),
      ),
    );
    const seconds = (Date.now() - started) / 1000;
    expect(workers.map((w) => w.stderr).filter((e) => e !== '')).toEqual([]);
    expect(workers.map((w) => w.exitCode)).toEqual(Array(workers.length).fill(0));
    const taken = workers.map((w) => (JSON.parse(w.stdout) as { outcomes: unknown[] }).outcomes.length);
    expect(taken.reduce((a, b) => a + b, 0)).toBe(JOBS);

    // the generator ran exactly once per key
    const generated = readFileSync(log, 'utf8').trimEnd().split('\n');
    expect(generated.sort()).toEqual([...keys].sort());
    // exactly one receipt per key; every job received, none left queued or running
    expect(readdirSync(store.layout.dir('receipts')).sort()).toEqual(keys.map((k) => `${k}.json`).sort());
    expect(readdirSync(store.layout.dir('received')).sort()).toEqual(keys.map((k) => `${k}.json`).sort());
    expect([...readdirSync(store.layout.dir('queue')), ...readdirSync(store.layout.dir('running'))]).toEqual(
      [],
    );
    expect(readdirSync(store.layout.dir('dead'))).toEqual([]);

    // no torn line: every line of every journal file parses (one segment per process)
    const segmentDir = store.layout.dir('journal.d');
    const segments = readdirSync(segmentDir);
    expect(segments.length).toBeGreaterThanOrEqual(2 * WORKERS_PER_MOUNT);
    let lines = 0;
    for (const s of segments)
      for (const line of readFileSync(join(segmentDir, s), 'utf8').split('\n')) {
        if (line === '') continue;
        lines += 1;
        expect(() => JSON.parse(line), `${s}: ${line.slice(0, 120)}`).not.toThrow();
      }
    // every claim, attempt and receipt is in the journal, once per key
    const journal = readJournal(store);
    expect(journal).toHaveLength(lines);
    for (const event of ['claimed', 'attempt', 'received']) {
      const perKey = journal.filter((e) => e.event === event).map((e) => e.key);
      expect(perKey.sort(), event).toEqual([...keys].sort());
    }
    console.log(
      `sshfs: ${JOBS} jobs, ${workers.length} workers on 2 mounts, ${seconds.toFixed(1)} s, per-worker ${taken.join('/')}, ${lines} journal lines in ${segments.length} segments, 0 torn`,
    );
  });
});
