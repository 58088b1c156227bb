// work --batch / --batch-poll end to end: the fake OpenAI-compatible server (files + batches) runs in
// this process, the built CLI talks to it. Every rule of batch generation is driven through the CLI:
// one JSONL with the job keys as custom_id, answers read like interactive ones (ok, rejected, aborted
// with the provider's error), expiry requeues without spending an attempt, a 500 on create is resumed
// without a second batch, leases in a batch are not reaped, and status shows spend per mode and cost.
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { beginAttempt } from '../../src/store/attempts.js';
import { claimNext } from '../../src/store/claim.js';
import { thisProcess } from '../../src/store/process-identity.js';
import { Store } from '../../src/store/store.js';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import type { FakeBatchOptions } from '../helpers/fake-openai-batch.js';
import { genDir, gj, makeRepo, mintBump, mintedKey, type Repo } from './trust-helpers.js';

const FILES = {
  'src/a.ts': 'export const a = 1;\n',
  'src/b.ts': 'export const b = 1;\n',
  'src/c.ts': 'export const c = 1;\n',
};
const USAGE = { prompt_tokens: 1000, completion_tokens: 200 };

let fake: FakeOpenAi | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** The path the request for `body` is about (the first allowed file named in the user message). */
function pathOf(body: Record<string, unknown>): string {
  const user = (body.messages as Array<{ content: string }>)[1]!.content;
  return /=== FILE: (\S+) ===/.exec(user)![1]!;
}

/** A correct answer for any job: the file with `1` replaced by `2`. */
const rewrite = (_id: string, body: Record<string, unknown>) => {
  const path = pathOf(body);
  const content = (FILES as Record<string, string>)[path]!.replace('1', '2');
  return { body: chatCompletion(structuredAnswer([{ path, content }]), { usage: USAGE }) };
};

async function setup(batch: FakeBatchOptions, files: Record<string, string> = FILES): Promise<Repo> {
  fake = await startFakeOpenAi([], { batch });
  const repo = makeRepo(files);
  repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' };
  return repo;
}

const mint = mintBump;

const submit = (repo: Repo, extra: string[] = []) =>
  gj(repo, ['work', '--batch', '--generator', 'builtin:openai', '--json', ...extra]);
// biome-ignore lint/suspicious/noExplicitAny: JSON read back from the CLI and .gen/, checked by the assertions
type Json = Record<string, any>;
const poll = (repo: Repo, extra: string[] = []) => gj(repo, ['work', '--batch-poll', '--json', ...extra]);
const json = (r: { stdout: unknown }) => JSON.parse(String(r.stdout)) as Json;
const receipt = (repo: Repo, key: string) =>
  JSON.parse(readFileSync(join(repo.root, '.gen', 'receipts', `${key}.json`), 'utf8')) as Json;
const lease = (repo: Repo, key: string) =>
  JSON.parse(readFileSync(join(repo.root, '.gen', 'leases', `${key}.json`), 'utf8')) as Json;

describe('work --batch', () => {
  it('puts back every job it claimed when the disk fails while the batch is prepared (EGJ_IO, exit 5, no attempt spent)', async () => {
    const repo = await setup({ answer: rewrite });
    const keys = [await mint(repo, 'src/a.ts'), await mint(repo, 'src/b.ts'), await mint(repo, 'src/c.ts')];
    // the second open of any claimed job file fails with EIO: at least one job was prepared before it
    const watched = keys.flatMap((k) => ['-P', join(repo.root, '.gen', 'running', `${k}.json`)]);
    const inject = [
      'strace',
      '-f',
      '-qq',
      '-o',
      '/dev/null',
      ...watched,
      '-e',
      'inject=openat:error=EIO:when=2',
    ];
    const r = await gj(repo, ['work', '--batch', '--generator', 'builtin:openai'], { wrap: inject });
    expect(r.exitCode, String(r.stderr)).toBe(5);
    expect(String(r.stderr)).toMatch(
      /^genjob: EGJ_IO: \S+\/running\/[0-9a-f]{64}\.json: open failed: i\/o error \(EIO\)(; job [0-9a-f]{12} was put back in queue\/)+$/m,
    );
    expect(genDir(repo, 'queue').sort()).toEqual(keys.map((k) => `${k}.json`).sort());
    expect(genDir(repo, 'running')).toEqual([]);
    expect(genDir(repo, 'dead')).toEqual([]);
    expect(fake!.requests.filter((q) => q.path === '/v1/batches')).toEqual([]);
    // nothing was spent: the next run submits all three
    const again = await submit(repo);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect([...json(again).submitted.keys].sort()).toEqual([...keys].sort());
  });

  it('--batch-poll with no batch open still takes back the job of a batch worker that died before recording its run', async () => {
    const repo = await setup({ answer: rewrite });
    const key = await mint(repo, 'src/a.ts');
    // what a `work --batch` killed between its claim and its intent leaves: running/, a lease naming it
    const dead = await execa(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    const store = new Store(repo.root);
    expect(claimNext(store, 'dead-worker')).toBe(key);
    const worker = { ...thisProcess(), id: 'dead-worker', pid: Number(dead.stdout) };
    beginAttempt(store, key, worker, 3600, 'batch 20261201T000000000Z-dead00');
    const r = await poll(repo);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(json(r).reaped.map((x: Json) => x.key)).toEqual([key]);
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
    expect(genDir(repo, 'running')).toEqual([]);
  });

  it('submits the queued jobs as one JSONL keyed by job key and leaves each running with a lease naming the batch', async () => {
    const repo = await setup({ answer: rewrite });
    const keys = [await mint(repo, 'src/a.ts'), await mint(repo, 'src/b.ts')];
    const r = await submit(repo);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const out = json(r);
    const batchId = out.submitted.batch_id as string;
    expect(batchId).toMatch(/^batch-/);
    expect([...out.submitted.keys].sort()).toEqual([...keys].sort());

    const upload = fake!.requests.find((q) => q.path === '/v1/files')!;
    expect(String(upload.body)).toContain('name="purpose"\r\n\r\nbatch');
    const input = [...fake!.batch!.files.values()][0]!.content
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(input.map((l) => l.custom_id).sort()).toEqual([...keys].sort());
    expect(
      input.every((l) => l.url === '/v1/chat/completions' && l.method === 'POST' && l.body.model === 'm'),
    ).toBe(true);
    const create = fake!.requests.find((q) => q.method === 'POST' && q.path === '/v1/batches')!;
    expect(create.body).toMatchObject({
      endpoint: '/v1/chat/completions',
      metadata: { genjob_run: out.submitted.run },
    });

    expect(genDir(repo, 'queue')).toEqual([]);
    expect(genDir(repo, 'running')).toEqual(keys.map((k) => `${k}.json`).sort());
    for (const k of keys)
      expect(lease(repo, k)).toMatchObject({ batch: batchId, destination: `batch ${batchId}` });
    const record = JSON.parse(
      readFileSync(join(repo.root, '.gen', 'batches', out.submitted.run, 'record.json'), 'utf8'),
    );
    expect(record).toMatchObject({ state: 'submitted', batch_id: batchId });

    const s = await gj(repo, ['status']);
    expect(String(s.stdout)).toContain(`batch ${batchId}: 2 job(s)`);
  });

  it('turns mixed answers into receipts like interactive ones once the batch completes after a few polls', async () => {
    const repo = await setup({
      pollsToFinish: 3,
      answer: (id, body) => {
        const path = pathOf(body);
        if (path === 'src/b.ts') return { status: 400, code: 'context_length_exceeded', message: 'too long' };
        if (path === 'src/c.ts') return { body: chatCompletion('Sure! Here is the file.', { usage: USAGE }) };
        return rewrite(id, body);
      },
    });
    const [a, b, c] = [
      await mint(repo, 'src/a.ts'),
      await mint(repo, 'src/b.ts'),
      await mint(repo, 'src/c.ts'),
    ];
    const s = await submit(repo);
    const batchId = json(s).submitted.batch_id as string;

    for (let i = 1; i < 3; i++) {
      const p = await poll(repo);
      expect(p.exitCode, String(p.stderr)).toBe(0);
      expect(json(p).open).toHaveLength(1);
      expect(genDir(repo, 'running')).toHaveLength(3);
    }
    const done = await poll(repo);
    expect(done.exitCode, String(done.stderr)).toBe(0);
    expect(json(done).open).toEqual([]);
    expect(genDir(repo, 'received')).toEqual([a, b, c].map((k) => `${k}.json`).sort());
    expect(genDir(repo, 'leases')).toEqual([]);

    const ra = receipt(repo, a!);
    expect(ra).toMatchObject({
      status: 'ok',
      plane: 'live',
      batch: batchId,
      epoch: 1,
      cached: false,
      usage: { ...USAGE, requests: 1 },
    });
    expect(ra.generator).toEqual({ command: 'builtin:openai', version: 'fake-model-1' });
    expect(receipt(repo, b!)).toMatchObject({ status: 'aborted', batch: batchId });
    expect(receipt(repo, b!).reason).toMatch(/context_length_exceeded: too long/);
    expect(receipt(repo, c!)).toMatchObject({
      status: 'rejected',
      batch: batchId,
      usage: { ...USAGE, requests: 1 },
    });
    expect(receipt(repo, c!).reason).toMatch(/^answer could not be parsed: not JSON/);

    expect((await gj(repo, ['verify', a!])).exitCode).toBe(0);
    expect((await gj(repo, ['apply', a!])).exitCode).toBe(0);
    expect(readFileSync(join(repo.root, 'src/a.ts'), 'utf8')).toBe('export const a = 2;\n');
    expect((await gj(repo, ['verify', b!])).exitCode).toBe(3);
    expect([...fake!.batch!.submitted.values()]).toEqual([1, 1, 1]);
  });

  it('puts the jobs an expired batch never answered back in the queue without spending an attempt', async () => {
    const repo = await setup({
      pollsToFinish: 1,
      finalStatus: 'expired',
      answer: (id, body) => (pathOf(body) === 'src/a.ts' ? rewrite(id, body) : 'unanswered'),
    });
    const [a, b] = [await mint(repo, 'src/a.ts'), await mint(repo, 'src/b.ts')];
    await submit(repo);
    const p = await poll(repo);
    expect(p.exitCode, String(p.stderr)).toBe(0);
    expect(receipt(repo, a!).status).toBe('ok');
    expect(genDir(repo, 'queue')).toEqual([`${b}.json`]);
    expect(genDir(repo, 'leases')).toEqual([]);
    const unanswered = json(p).outcomes.find((o: { key: string }) => o.key === b);
    expect(unanswered).toMatchObject({ outcome: 'requeued' });
    expect(unanswered.reason).toMatch(/ended expired without answering this job/);

    // with --max-attempts 1 the unspent attempt does not count: the job is submitted again (epoch 2)
    const again = await submit(repo, ['--max-attempts', '1']);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(json(again).submitted.keys).toEqual([b]);
    expect(lease(repo, b!).epoch).toBe(2);
  });

  it('after a 500 on create, the next poll creates the batch once; a batch created despite the 500 is found by its metadata', async () => {
    for (const failure of ['500', '500-created'] as const) {
      const repo = await setup({ answer: rewrite, pollsToFinish: 1, creates: [failure] });
      const a = await mint(repo, 'src/a.ts');
      const s = await submit(repo);
      expect(s.exitCode).toBe(3);
      expect(json(s).problems.join('\n')).toMatch(/POST .*\/batches: HTTP 500/);
      expect(genDir(repo, 'running')).toEqual([`${a}.json`]);
      const p1 = await poll(repo);
      expect(p1.exitCode, String(p1.stderr)).toBe(0);
      const p2 = await poll(repo);
      expect(p2.exitCode, String(p2.stderr)).toBe(0);
      expect(receipt(repo, a).status).toBe('ok');
      expect(fake!.batch!.batches).toHaveLength(1);
      expect(fake!.batch!.submitted.get(a)).toBe(1);
      await fake!.close();
      fake = undefined;
    }
  });

  it('never uploads a --read file that changed after mint: the job is dead as stale and nothing is submitted', async () => {
    const repo = await setup({ answer: rewrite }, { ...FILES, 'config.ini': 'timeout = 5\n' });
    const m = await gj(repo, ['mint', '-m', 'use the timeout', '--read', 'config.ini', 'src/a.ts']);
    expect(m.exitCode, String(m.stderr)).toBe(0);
    const key = mintedKey(m);
    // a token mint would have refused, written into the read file after mint
    writeFileSync(join(repo.root, 'config.ini'), 'timeout = 5\ntoken = "batch-read-leak-canary"\n');
    const r = await submit(repo);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(json(r).outcomes).toEqual([
      expect.objectContaining({
        key,
        outcome: 'dead',
        reason: expect.stringMatching(/^config\.ini: changed since the job was minted/),
      }),
    ]);
    expect(fake!.requests.filter((q) => String(q.body).includes('batch-read-leak-canary'))).toEqual([]);
    expect([...fake!.batch!.files.values()]).toEqual([]);
    expect(genDir(repo, 'running')).toEqual([]);
    expect(genDir(repo, 'dead').some((n) => n.startsWith(key))).toBe(true);
  });

  it('a result file cut off in download settles nothing: the batch stays submitted and the next poll downloads it again', async () => {
    const repo = await setup({ answer: rewrite, pollsToFinish: 1, downloads: ['cut'] });
    const a = await mint(repo, 'src/a.ts');
    const s = await submit(repo);
    const run = json(s).submitted.run as string;
    const cut = await poll(repo);
    expect(cut.exitCode, String(cut.stderr)).toBe(3);
    expect(json(cut).problems.join('\n')).toMatch(
      /GET \S+\/files\/\S+\/content: HTTP 200: the answer broke off/,
    );
    // not "nothing answered": the job is still in the batch, not back in the queue
    expect(genDir(repo, 'queue')).toEqual([]);
    expect(genDir(repo, 'running')).toEqual([`${a}.json`]);
    const record = JSON.parse(readFileSync(join(repo.root, '.gen', 'batches', run, 'record.json'), 'utf8'));
    expect(record).toMatchObject({ state: 'submitted' });
    // a new --batch carries the open batch forward (downloading it whole) and submits nothing again
    const again = await submit(repo);
    expect(again.exitCode, String(again.stderr)).toBe(0);
    expect(json(again).submitted).toBeNull();
    expect(receipt(repo, a).status).toBe('ok');
    expect(fake!.batch!.submitted.get(a)).toBe(1);
  });

  it('refuses a result file longer than the download cap without reading it, and keeps the batch open', async () => {
    const repo = await setup({ answer: rewrite, pollsToFinish: 1, downloads: ['oversize'] });
    const a = await mint(repo, 'src/a.ts');
    await submit(repo);
    const big = await poll(repo);
    expect(big.exitCode, String(big.stderr)).toBe(3);
    expect(json(big).problems.join('\n')).toMatch(
      /GET \S+\/files\/\S+\/content: HTTP 200: the answer is larger than 268435456 bytes; genjob reads none of it/,
    );
    expect(genDir(repo, 'running')).toEqual([`${a}.json`]);
    expect(genDir(repo, 'received')).toEqual([]);
    const next = await poll(repo);
    expect(next.exitCode, String(next.stderr)).toBe(0);
    expect(receipt(repo, a).status).toBe('ok');
  });

  it('does not reap a job waiting in a batch, and the poll keeps its lease alive', async () => {
    const repo = await setup({ answer: rewrite, pollsToFinish: 5 });
    const a = await mint(repo, 'src/a.ts');
    await submit(repo);
    const leaseFile = join(repo.root, '.gen', 'leases', `${a}.json`);
    const old = new Date(Date.now() - 3600_000);
    utimesSync(leaseFile, old, old);
    const reaped = await gj(repo, ['reap', '--lease-ttl', '1', '--json']);
    expect(reaped.exitCode, String(reaped.stderr)).toBe(0);
    expect(genDir(repo, 'running')).toEqual([`${a}.json`]);
    expect(genDir(repo, 'queue')).toEqual([]);
    await poll(repo);
    expect(statSync(leaseFile).mtimeMs).toBeGreaterThan(old.getTime() + 3000_000);
  });

  it('shows tokens per mode and, with prices set, the cost and what it would have cost interactively', async () => {
    const repo = await setup({ answer: rewrite, pollsToFinish: 1 });
    await mint(repo, 'src/a.ts');
    await mint(repo, 'src/b.ts');
    await submit(repo);
    await poll(repo);
    const env = { GENJOB_PRICE_IN: '2', GENJOB_PRICE_OUT: '10' };
    const s = await gj(repo, ['status'], { env });
    expect(String(s.stdout)).toContain('tokens (batch): 2000 prompt + 400 completion in 2 request(s)');
    // 2000 in at 2/M + 400 out at 10/M = 0.008 interactively; batch at half
    expect(String(s.stdout)).toContain(
      'cost: 0.0040 (interactively: 0.0080; saved 0.0040; batch at 0.5× the price)',
    );
    const j = json(await gj(repo, ['status', '--json'], { env }));
    expect(j.spend.batch).toEqual({ prompt_tokens: 2000, completion_tokens: 400, requests: 2 });
    expect(j.spend.cost).toMatchObject({ total: 0.004, interactive_equivalent: 0.008 });
  });

  it('stops submitting once the answers polled in this run reach --max-tokens', async () => {
    const repo = await setup({ answer: rewrite, pollsToFinish: 1 });
    await mint(repo, 'src/a.ts');
    await submit(repo);
    const b = await mint(repo, 'src/b.ts');
    const r = await submit(repo, ['--max-tokens', '1000']);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(json(r)).toMatchObject({ tokens: 1200, budget_spent: true, submitted: null });
    expect(genDir(repo, 'queue')).toEqual([`${b}.json`]);
  });

  it('a watching worker polls open batches and stores their answers', async () => {
    const repo = await setup({ answer: rewrite, pollsToFinish: 2 });
    const a = await mint(repo, 'src/a.ts');
    await submit(repo);
    const child = gj(repo, [
      'work',
      '--watch',
      '--generator',
      'builtin:openai',
      '--batch-poll-interval',
      '0.2',
    ]) as unknown as ResultPromise;
    // waits on the answer landing, however slow the machine (the test's guard ends a wait for ever)
    while (!existsSync(join(repo.root, '.gen', 'received', `${a}.json`)))
      await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGTERM');
    const r = await child;
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(receipt(repo, a)).toMatchObject({ status: 'ok', batch: fake!.batch!.batches[0]!.id });
  });

  it('refuses --batch without builtin:openai or with --host (exit 2); --batch-poll with nothing open needs no endpoint', async () => {
    const repo = makeRepo(FILES);
    const noGen = await gj(repo, ['work', '--batch']);
    expect(noGen.exitCode).toBe(2);
    expect(String(noGen.stderr)).toMatch(/--batch needs --generator builtin:openai/);
    const host = await gj(repo, ['work', '--batch', '--generator', 'builtin:openai', '--host', 'h']);
    expect(host.exitCode).toBe(2);
    const idle = await gj(repo, ['work', '--batch-poll', '--json']);
    expect(idle.exitCode, String(idle.stderr)).toBe(0);
    expect(json(idle)).toMatchObject({ ok: true, open: [] });
  });
});
