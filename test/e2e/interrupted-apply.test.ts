// A job whose apply was killed (-9) after its write-ahead record applying/<key>.json belongs to that
// apply until `genjob apply` finishes it. drop, retry and remint used to take it anyway, and the next
// `apply --all` finished the apply regardless: a dropped job ended applied without its receipt, a retried
// one in queue/ and applied/ at once. They now refuse (exit 4) and name the record; apply finishes the job,
// after which revert and drop work as usual.
import { readdirSync, readFileSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
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
