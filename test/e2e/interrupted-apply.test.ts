// A job whose apply was killed (-9) after its write-ahead record applying/<key>.json belongs to that
// apply until `genjob apply` finishes it. drop, retry and remint used to take it anyway, and the next
// `apply --all` finished the apply regardless: a dropped job ended applied without its receipt, a retried
// one in queue/ and applied/ at once. They now refuse (exit 4) and name the record; apply finishes the job,
// after which revert and drop work as usual.
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob, jobDigest } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { mintJob } from '../../src/store/mint-job.js';
import { spawnCli, workerRepo } from './worker-helpers.js';

const PRELOAD = join(import.meta.dirname, '../helpers/crash-preload.mjs');
const ORIGINAL: Record<string, string> = { 'm/a.txt': 'a\n', 'm/b.txt': 'b\n' };

/** A received job over m/a.txt and m/b.txt whose apply was killed after replacing m/a.txt. */
async function interrupted() {
  const gen = `for p in $GENJOB_INSTRUCTION; do printf 'new %s\\n' "$p" > "$p"; done\n`;
  const { base, root, store, generator } = workerRepo('genjob-interrupted-', gen, ORIGINAL);
  const paths = ['m/a.txt', 'm/b.txt'];
  const job = buildJob(
    paths.join(' '),
    paths.map((p) => ({ path: p, sha256: sha256Hex(ORIGINAL[p]!) })),
  );
  expect(mintJob(store, job).minted).toBe(true);
  const env = { ...process.env, XDG_CACHE_HOME: join(base, 'cache') };
  const genjob = (args: string[], crash?: unknown) =>
    spawnCli(
      root,
      args,
      crash ? { ...env, GENJOB_CRASH: JSON.stringify(crash) } : env,
      crash ? PRELOAD : undefined,
    );
  expect((await genjob(['work', '--drain', '--quiet', ...generator])).exitCode).toBe(0);
  const killed = await genjob(['apply', job.key], {
    call: 'renameSync',
    match: '/m/a\\.txt$',
    arg: 1,
    when: 'after',
    nth: 1,
  });
  expect(killed.signal).toBe('SIGKILL');
  // the killed apply's lock goes stale after 10 s: age it instead of waiting
  const past = new Date(Date.now() - 60_000);
  for (const name of readdirSync(store.layout.dir('locks')))
    utimesSync(join(store.layout.dir('locks'), name), past, past);
  expect(readdirSync(store.layout.dir('applying'))).toEqual([`${job.key}.json`]);
  const tree = () => paths.map((p) => readFileSync(join(root, p), 'utf8'));
  expect(tree()).toEqual(['new m/a.txt\n', 'b\n']);
  const ls = (d: string) => readdirSync(store.layout.dir(d)).sort();
  return { key: job.key, store, genjob, tree, ls };
}

describe('a job whose apply was interrupted', () => {
  it('is refused by drop, retry and remint (exit 4) until apply finishes it; then revert and drop work', async () => {
    const { key, store, genjob, tree, ls } = await interrupted();
    const applying = store.layout.applying(key);
    for (const [verb, code] of [
      ['drop', 'EGJ_NOT_DROPPABLE'],
      ['retry', 'EGJ_NOT_RETRYABLE'],
      ['remint', 'EGJ_NOT_REMINTABLE'],
    ] as const) {
      const r = await genjob([verb, key]);
      expect(r.exitCode, `${verb}: ${r.stderr}`).toBe(4);
      expect(r.stderr).toBe(
        `genjob: ${code}: ${applying}: an apply of this job was interrupted; run genjob apply to finish it first (genjob revert then undoes it), not ${verb}`,
      );
    }
    // nothing moved: the job is received with its receipt and outputs, no successor minted
    expect(ls('received')).toEqual([`${key}.json`]);
    expect(ls('queue')).toEqual([]);
    expect(ls('receipts')).toEqual([`${key}.json`]);
    expect(ls('out')).toEqual([key]);
    expect(ls('dead')).toEqual([]);

    const finish = await genjob(['apply', '--all']);
    expect(finish.exitCode, finish.stderr).toBe(0);
    expect(tree()).toEqual(['new m/a.txt\n', 'new m/b.txt\n']);
    expect(ls('applied')).toEqual([`${key}.json`]);
    for (const d of ['applying', 'received', 'queue']) expect(ls(d)).toEqual([]);
    expect((await genjob(['verify', key])).exitCode).toBe(0);

    expect((await genjob(['revert', key])).exitCode).toBe(0);
    expect(tree()).toEqual(['a\n', 'b\n']);
    const drop = await genjob(['drop', key]);
    expect(drop.exitCode, drop.stderr).toBe(0);
    for (const d of ['applied', 'reverted', 'received', 'queue']) expect(ls(d)).toEqual([]);
  });
});

describe('an apply record committed on a branch (applying/ names any job and any writes)', () => {
  /** `bytes` kept as an object the way apply keeps them, so a forged write has bytes to take. */
  const keepObject = (store: { layout: { object: (s: string) => string } }, bytes: string) => {
    const sha = sha256Hex(bytes);
    writeFileSync(store.layout.object(sha), bytes);
    return sha;
  };

  it('is finished only when the job and receipt verify now and back every write; else exit 3 and nothing written', async () => {
    const { key, store, genjob, tree, ls } = await interrupted();
    const applying = store.layout.applying(key);
    const real = readFileSync(applying);
    const record = JSON.parse(real.toString('utf8')) as { writes: Array<Record<string, unknown>> };
    const evil = keepObject(store, 'EVIL\n');
    const root = join(store.layout.gen, '..');
    const refused = async (forged: unknown, why: RegExp, code = 'EGJ_APPLYING_UNVERIFIED', exit = 3) => {
      writeFileSync(applying, JSON.stringify(forged));
      const r = await genjob(['apply', '--all']);
      expect(r.exitCode, r.stderr).toBe(exit);
      expect(r.stderr).toMatch(new RegExp(`${code}: .*${key}\\.json: .*${why.source}`));
      expect(tree()).toEqual(['new m/a.txt\n', 'b\n']);
      expect(existsSync(join(root, 'm', 'evil.txt'))).toBe(false);
      expect(ls('applied')).toEqual([]);
    };
    // a write of a path the job does not name: no apply of it writes one, so the record is not read
    await refused(
      {
        ...record,
        writes: [...record.writes, { path: 'm/evil.txt', before: null, after: evil, mode: 0o644 }],
      },
      /write "m\/evil\.txt": not one of its job's allowed paths/,
      'EGJ_RECORD_INVALID',
      2,
    );
    // an output's path with other bytes
    await refused(
      { ...record, writes: record.writes.map((w) => (w.path === 'm/b.txt' ? { ...w, after: evil } : w)) },
      /its write of "m\/b\.txt" is not an output of the receipt/,
    );
    // another receipt
    await refused({ ...record, receipt_sha256: 'e'.repeat(64) }, /it is of receipt eeeeeeeeeeee/);

    // the record as the killed apply left it: finished
    writeFileSync(applying, real);
    const finish = await genjob(['apply', '--all']);
    expect(finish.exitCode, finish.stderr).toBe(0);
    expect(tree()).toEqual(['new m/a.txt\n', 'new m/b.txt\n']);
  });

  it('of a job that was never worked: verify refuses it, so apply writes nothing (exit 3)', async () => {
    const { store, genjob, tree } = await interrupted();
    const job = buildJob('m/b.txt', [{ path: 'm/b.txt', sha256: sha256Hex('b\n') }]);
    expect(mintJob(store, job).minted).toBe(true);
    const evil = keepObject(store, 'EVIL\n');
    writeFileSync(
      store.layout.applying(job.key),
      JSON.stringify({
        schema: 'genjob/applying@1',
        key: job.key,
        job_digest: jobDigest(job),
        receipt_sha256: 'e'.repeat(64),
        epoch: 1,
        writes: [{ path: 'm/b.txt', before: sha256Hex('b\n'), after: evil, mode: 0o644 }],
        job,
      }),
    );
    const r = await genjob(['apply', '--all']);
    expect(r.exitCode, r.stderr).toBe(3);
    expect(r.stderr).toContain(`EGJ_APPLYING_UNVERIFIED: ${store.layout.applying(job.key)}`);
    expect(r.stderr).toContain('job is still in queue/');
    expect(tree()).toEqual(['new m/a.txt\n', 'b\n']);
  });
});
