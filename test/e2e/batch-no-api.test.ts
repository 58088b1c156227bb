// work --batch against an OpenAI-compatible endpoint that has no batch API (POST /files answers 404,
// as a server serving only /chat/completions does; the suite's fake provider on loopback): the run
// says so and names interactive mode, puts the job back unspent and leaves no batch record. A batch
// intent that never reached the provider (left by an older genjob, or a crash) is ended by the next
// --batch-poll against such an endpoint, by `genjob cancel` of one of its jobs, and by `genjob gc`.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { beginAttempt } from '../../src/store/attempts.js';
import { readRecord, recordIntent } from '../../src/store/batch-outbox.js';
import { claimNext } from '../../src/store/claim.js';
import { readJournal } from '../../src/store/journal.js';
import { thisProcess } from '../../src/store/process-identity.js';
import { Store } from '../../src/store/store.js';
import { type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { genDir, gj, makeRepo, mintBump, type Repo } from './trust-helpers.js';

const FILES = { 'src/a.ts': 'export const a = 1;\n', 'src/b.ts': 'export const b = 1;\n' };
const NOT_FOUND = { status: 404, body: { error: { message: 'Not Found' } } };

let fake: FakeOpenAi | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** A repository whose builtin:openai endpoint answers the given steps (no batch endpoints at all). */
async function setup(steps: Array<typeof NOT_FOUND>): Promise<Repo> {
  fake = await startFakeOpenAi(steps);
  const repo = makeRepo(FILES);
  repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' };
  return repo;
}

const mint = mintBump;

/** An unsent intent holding `keys`, as a `work --batch` of an older genjob (or a crash) left it. */
function leaveIntent(repo: Repo, keys: readonly string[], createdAt = new Date()): string {
  const store = new Store(repo.root);
  const run = '20260101T000000000Z-0ld000';
  const worker = { ...thisProcess(), id: 'old-worker' };
  const jobs = keys.map(() => {
    const key = claimNext(store, worker.id)!;
    expect(keys).toContain(key);
    const lease = beginAttempt(store, key, worker, 3600, `batch ${run}`);
    return { key, epoch: lease.epoch, job_digest: 'x'.repeat(64), format: 'structured' as const };
  });
  recordIntent(
    store,
    {
      run,
      state: 'intent',
      created_at: createdAt.toISOString(),
      jobs,
      file_id: null,
      batch_id: null,
      provider_status: null,
    },
    Buffer.from('{}\n'),
  );
  return run;
}

const requeuedUnspent = (repo: Repo, key: string) =>
  readJournal(new Store(repo.root), key)
    .filter((e) => e.event === 'requeued')
    .map((e) => e.attempt_spent);

describe('work --batch against an endpoint without a batch API', () => {
  it('says the endpoint has no /files and to use interactive mode, puts the job back unspent, leaves no batch record', async () => {
    const repo = await setup([NOT_FOUND]);
    const key = await mint(repo, 'src/a.ts');
    const r = await gj(repo, ['work', '--batch', '--generator', 'builtin:openai']);
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr)).toMatch(
      /^genjob: EGJ_NO_BATCH_API: POST http:\/\/127\.0\.0\.1:\d+\/v1\/files: HTTP 404: the endpoint has no \/files, so no batch API; use interactive mode \(genjob work --drain --generator builtin:openai\); nothing was submitted, 1 job\(s\) back in the queue$/m,
    );
    expect(String(r.stdout)).not.toContain('queue empty');
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
    expect([genDir(repo, 'running'), genDir(repo, 'batches'), genDir(repo, 'leases')]).toEqual([[], [], []]);
    expect(requeuedUnspent(repo, key)).toEqual([false]);
    // nothing is left to poll, warn about or show
    const poll = await gj(repo, ['work', '--batch-poll']);
    expect(poll.exitCode, String(poll.stderr)).toBe(0);
    expect(String(poll.stdout)).toContain('0 batch(es) open');
    const status = await gj(repo, ['status', '--json']);
    expect(JSON.parse(String(status.stdout)).batches ?? []).toEqual([]);
  });

  it('--batch-poll ends an unsent intent an older genjob left there: its jobs back in the queue', async () => {
    const repo = await setup([NOT_FOUND]);
    const keys = [await mint(repo, 'src/a.ts'), await mint(repo, 'src/b.ts')].sort();
    leaveIntent(repo, keys);
    const poll = await gj(repo, ['work', '--batch-poll', '--json']);
    expect(poll.exitCode, String(poll.stderr)).toBe(0);
    const out = JSON.parse(String(poll.stdout));
    expect(out.outcomes.map((x: { key: string; outcome: string }) => [x.key, x.outcome]).sort()).toEqual(
      keys.map((k) => [k, 'requeued']),
    );
    expect(out.open).toEqual([]);
    expect(genDir(repo, 'queue')).toEqual(keys.map((k) => `${k}.json`));
    expect(genDir(repo, 'batches')).toEqual([]);
    for (const k of keys) expect(requeuedUnspent(repo, k)).toEqual([false]);
  });
});

describe('a batch record of another shape (a branch can commit .gen/batches/)', () => {
  it('is no record: job "keys" and epochs that name paths are never written to', async () => {
    const repo = await setup([NOT_FOUND]);
    await mint(repo, 'src/a.ts');
    const run = '20260101T000000000Z-abcdef';
    const dir = join(repo.root, '.gen', 'batches', run);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'input.jsonl'), '{}\n');
    const record = (jobs: unknown[]) =>
      JSON.stringify({
        run,
        state: 'intent',
        created_at: '2026-01-01T00:00:00.000Z',
        jobs,
        file_id: null,
        batch_id: null,
        provider_status: null,
      });
    const parent = join(repo.root, '..');
    for (const jobs of [
      [{ key: '../..', epoch: 1, job_digest: 'x', format: 'structured' }], // .gen/attempts/../.. is the repository
      [{ key: '../../..', epoch: 7, job_digest: 'x', format: 'structured' }], // its parent
      [{ key: 'a'.repeat(64), epoch: '../../../../escaped', job_digest: 'x', format: 'structured' }],
    ]) {
      writeFileSync(join(dir, 'record.json'), record(jobs));
      expect(readRecord(new Store(repo.root), run)).toBeUndefined();
      const poll = await gj(repo, ['work', '--batch-poll']);
      expect(poll.exitCode, String(poll.stderr)).toBe(0);
      expect(String(poll.stdout)).toContain('0 batch(es) open');
    }
    expect(existsSync(join(repo.root, '1.unspent'))).toBe(false);
    expect(existsSync(join(parent, '7.unspent'))).toBe(false);
    expect(existsSync(join(parent, 'escaped.unspent'))).toBe(false);
    expect(readdirSync(repo.root).filter((n) => n.endsWith('.unspent'))).toEqual([]);
  });
});

describe('an unsent batch intent is ended by cancel and by gc', () => {
  it('genjob cancel of one of its jobs: that job is cancelled, the intent ends, its other job goes back', async () => {
    const repo = makeRepo(FILES);
    const [a, b] = [await mint(repo, 'src/a.ts'), await mint(repo, 'src/b.ts')];
    const run = leaveIntent(repo, [a!, b!]);
    const r = await gj(repo, ['cancel', a!, '--json']);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(JSON.parse(String(r.stdout))).toMatchObject({
      was: 'running',
      batch_ended: { run, requeued: [b] },
    });
    expect(genDir(repo, 'queue')).toEqual([`${b}.json`]);
    expect(genDir(repo, 'batches')).toEqual([]);
    expect(genDir(repo, 'dead').some((n) => n.startsWith(`${a}.job.`))).toBe(true);
    const poll = await gj(repo, ['work', '--batch-poll']); // nothing open: no endpoint needed
    expect(poll.exitCode, String(poll.stderr)).toBe(0);
  });

  it('genjob gc ends an intent older than its window (--dry-run only lists it); a younger one is left alone', async () => {
    const repo = makeRepo(FILES);
    const key = await mint(repo, 'src/a.ts');
    const run = leaveIntent(repo, [key], new Date(Date.now() - 2 * 86_400_000));
    const young = await gj(repo, ['gc', '--older-than', '3d']);
    expect(young.exitCode, String(young.stderr)).toBe(0);
    expect(readRecord(new Store(repo.root), run)?.state).toBe('intent');
    const dry = await gj(repo, ['gc', '--older-than', '1d', '--dry-run', '--json']);
    expect(JSON.parse(String(dry.stdout)).batch_intents).toEqual([
      expect.objectContaining({ run, keys: [key] }),
    ]);
    expect(readRecord(new Store(repo.root), run)?.state).toBe('intent');
    const r = await gj(repo, ['gc', '--older-than', '1d']);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(String(r.stdout)).toContain(`batch run ${run} (never sent, since `);
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
    expect(existsSync(join(repo.root, '.gen', 'batches', run))).toBe(false);
  });
});
