// builtin:openai end to end: the fake chat-completions server runs in this process, the built CLI's
// `work` starts its local serve child with GENJOB_OPENAI_BASE_URL pointing at it. A good answer is
// verified and applied; a malformed or out-of-contract answer is a rejected receipt (raw answer kept
// in the host cache); a 429 is retried, a timeout is not; usage flows into receipts, `status`,
// `show` and the --max-tokens budget.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  chatCompletion,
  type FakeOpenAi,
  type FakeStep,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import {
  errorLine,
  genDir,
  gj,
  makeRepo,
  mintedKey,
  publicKeyOfFile,
  type Repo,
  snapshot,
} from './trust-helpers.js';

const OLD = 'export const greet = (name: string) => "hi " + name;\n';
const NEW = 'export const greet = (name: string) => "hello, " + name;\n';
const USAGE = { prompt_tokens: 100, completion_tokens: 20 };

const good = (content = NEW): FakeStep => ({
  body: chatCompletion(structuredAnswer([{ path: 'src/greet.ts', content }]), { usage: USAGE }),
});

let fake: FakeOpenAi | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** A repository with src/greet.ts, a fake endpoint answering `script`, and the endpoint wired into the env. */
async function setup(script: FakeStep[]): Promise<{ repo: Repo; fake: FakeOpenAi }> {
  fake = await startFakeOpenAi(script);
  const repo = makeRepo({ 'src/greet.ts': OLD, 'README.md': '# demo\n' });
  repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm', GENJOB_OPENAI_RETRY_BASE_MS: '0' };
  return { repo, fake };
}

async function mint(repo: Repo, instruction = 'greet politely'): Promise<string> {
  const r = await gj(repo, ['mint', '-m', instruction, 'src/greet.ts']);
  expect(r.exitCode).toBe(0);
  return mintedKey(r);
}

function work(repo: Repo, extra: string[] = []) {
  return gj(repo, ['work', '--once', '--generator', 'builtin:openai', ...extra]);
}

function receipt(repo: Repo, key: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(repo.root, '.gen', 'receipts', `${key}.json`), 'utf8'));
}

/** The raw-answer directories of the host's result cache (the local serve's, under $XDG_CACHE_HOME). */
function rawDirs(repo: Repo): string[] {
  const results = join(repo.cache, 'genjob', 'results');
  return readdirSync(results).map((name) => join(results, name, 'raw'));
}

/** verify and apply refuse the received job with exit 3, changing nothing. */
async function expectNotApplied(repo: Repo, key: string, code: string): Promise<void> {
  const before = snapshot(repo.root);
  const v = await gj(repo, ['verify', key]);
  expect(v.exitCode).toBe(3);
  expect(errorLine(v)).toMatch(new RegExp(`^genjob: ${code}: `));
  const a = await gj(repo, ['apply', '--all']);
  expect(a.exitCode).toBe(3);
  expect(snapshot(repo.root)).toEqual(before);
  expect(readFileSync(join(repo.root, 'src/greet.ts'), 'utf8')).toBe(OLD);
}

describe('genjob work --generator builtin:openai', () => {
  it('turns a good answer into an ok receipt with usage, which verifies and applies', async () => {
    const { repo, fake } = await setup([good()]);
    const key = await mint(repo);
    const w = await work(repo);
    expect(w.exitCode).toBe(0);
    expect(w.stderr).toContain(`${key.slice(0, 12)} received ok`);

    expect(fake.requests).toHaveLength(1);
    const req = fake.requests[0]!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.body).toMatchObject({ model: 'm', stream: false });
    expect(JSON.stringify(req.body)).toContain('greet politely');
    expect(JSON.stringify(req.body)).not.toContain('# demo'); // only the job's files leave the machine

    expect(receipt(repo, key)).toMatchObject({
      status: 'ok',
      generator: { command: 'builtin:openai', version: 'fake-model-1' },
      usage: { prompt_tokens: 100, completion_tokens: 20, requests: 1 },
    });
    expect((await gj(repo, ['verify', '--all'])).exitCode).toBe(0);
    const a = await gj(repo, ['apply', '--all']);
    expect(a.exitCode).toBe(0);
    expect(readFileSync(join(repo.root, 'src/greet.ts'), 'utf8')).toBe(NEW);
    expect(readFileSync(join(repo.root, 'README.md'), 'utf8')).toBe('# demo\n');
  });

  it('keeps a malformed answer raw in the host cache and stores a rejected receipt that verify refuses', async () => {
    const prose = `Sure! Here is the file:\n\`\`\`ts\n${NEW}\`\`\`\n`;
    const { repo, fake } = await setup([{ body: chatCompletion(prose, { usage: USAGE }) }]);
    const key = await mint(repo);
    const w = await work(repo);
    expect(w.exitCode).toBe(0); // the job ended with a receipt, whatever its status
    expect(w.stderr).toContain(`${key.slice(0, 12)} received rejected: answer could not be parsed`);
    expect(fake.requests).toHaveLength(1);
    expect(receipt(repo, key)).toMatchObject({
      status: 'rejected',
      outputs: [],
      usage: { prompt_tokens: 100, completion_tokens: 20, requests: 1 },
    });

    const raw = rawDirs(repo);
    expect(raw).toHaveLength(1);
    expect(readFileSync(join(raw[0]!, 'answer-1.txt'), 'utf8')).toBe(prose);
    await expectNotApplied(repo, key, 'EGJ_STATUS_NOT_OK');
  });

  it('rejects an answer naming a path outside the job, and writes it nowhere', async () => {
    const evil = chatCompletion(structuredAnswer([{ path: '../escape.ts', content: 'pwned\n' }]), {
      usage: USAGE,
    });
    const { repo } = await setup([{ body: evil }]);
    const key = await mint(repo);
    const w = await work(repo);
    expect(w.exitCode).toBe(0);
    const r = receipt(repo, key);
    expect(r).toMatchObject({ status: 'rejected', outputs: [] });
    expect(String(r.reason)).toContain('../escape.ts');
    await expectNotApplied(repo, key, 'EGJ_STATUS_NOT_OK');
    expect(readdirSync(join(repo.root, '..')).sort()).toEqual(['cache', 'config', 'outside', 'repo']);
  });

  it('retries after a rate limit: ok, usage of both requests, two requests in the log', async () => {
    const limited: FakeStep = {
      status: 429,
      headers: { 'retry-after': '0' },
      body: { error: { message: 'slow down' } },
    };
    const { repo, fake } = await setup([limited, good()]);
    const key = await mint(repo);
    const w = await work(repo);
    expect(w.exitCode).toBe(0);
    expect(fake.requests).toHaveLength(2);
    expect(receipt(repo, key)).toMatchObject({
      status: 'ok',
      usage: { prompt_tokens: 100, completion_tokens: 20, requests: 2 },
    });
    expect((await gj(repo, ['apply', '--all'])).exitCode).toBe(0);
    expect(readFileSync(join(repo.root, 'src/greet.ts'), 'utf8')).toBe(NEW);
  });

  it('aborts an answer slower than --timeout as in doubt, after exactly one request (no retry)', async () => {
    // an answer that never comes while the test runs: only --timeout ends the wait
    const { repo, fake } = await setup([{ ...good(), delayMs: 3_600_000 }, good()]);
    const key = await mint(repo);
    const w = await work(repo, ['--timeout', '2']);
    expect(w.exitCode).toBe(0);
    const r = receipt(repo, key);
    expect(r).toMatchObject({
      status: 'aborted',
      outputs: [],
      usage: { prompt_tokens: 0, completion_tokens: 0, requests: 1 },
    });
    expect(String(r.reason)).toMatch(/^in doubt: /);
    expect(fake.requests).toHaveLength(1);
    await expectNotApplied(repo, key, 'EGJ_STATUS_NOT_OK');
  });
});

describe('the spend ledger', () => {
  it('genjob status totals the usage of the receipts', async () => {
    const limited: FakeStep = {
      status: 429,
      headers: { 'retry-after': '0' },
      body: { error: { message: 'slow down' } },
    };
    const { repo } = await setup([limited, good(), good()]);
    await mint(repo, 'greet politely');
    await mint(repo, 'greet warmly');
    expect((await gj(repo, ['work', '--drain', '--generator', 'builtin:openai'])).exitCode).toBe(0);

    const s = await gj(repo, ['status']);
    expect(s.exitCode).toBe(0);
    expect(s.stdout).toContain('tokens: 200 prompt + 40 completion in 3 request(s)');
    const sj = await gj(repo, ['status', '--json']);
    expect(JSON.parse(String(sj.stdout)).usage).toEqual({
      prompt_tokens: 200,
      completion_tokens: 40,
      requests: 3,
    });

    // applied receipts still count
    expect((await gj(repo, ['apply', '--all'])).exitCode).toBe(4); // the second job is stale once the first applied
    const after = JSON.parse(String((await gj(repo, ['status', '--json'])).stdout));
    expect(after.usage).toEqual({ prompt_tokens: 200, completion_tokens: 40, requests: 3 });
  });

  it('genjob show lists each attempt with its epoch, status and usage, from receipts/ and dead/', async () => {
    const { repo, fake } = await setup([good()]);
    const key = await mint(repo);
    // attempt 1: the answer is signed by a key other than the one trusted, so the worker dead-letters its receipt
    const keyFile = join(repo.outside, 'host.key');
    const otherKey = join(repo.outside, 'other.key');
    expect((await gj(repo, ['keygen', '--out', keyFile])).exitCode).toBe(0);
    expect((await gj(repo, ['keygen', '--out', otherKey])).exitCode).toBe(0);
    expect((await gj(repo, ['trust', 'add', 'free-box', publicKeyOfFile(keyFile).publicKey])).exitCode).toBe(
      0,
    );
    const signedByOther = await gj(repo, ['work', '--once', '--generator', 'builtin:openai'], {
      env: { GENJOB_SIGN_KEY: otherKey },
    });
    expect(signedByOther.exitCode).toBe(3);
    // attempt 2: trust removed; the host answers from its cache, no second request
    expect((await gj(repo, ['trust', 'remove', 'free-box'])).exitCode).toBe(0);
    expect((await work(repo)).exitCode).toBe(0);
    expect(fake.requests).toHaveLength(1);

    const deadReceipt = genDir(repo, 'dead').find(
      (n) => n.startsWith(`${key}.receipt.e1.`) && !n.endsWith('.why.json'),
    );
    expect(deadReceipt).toBeDefined();
    const sj = await gj(repo, ['show', key.slice(0, 8), '--json']);
    expect(sj.exitCode).toBe(0);
    const usage = { prompt_tokens: 100, completion_tokens: 20, requests: 1 };
    expect(JSON.parse(String(sj.stdout)).usage).toEqual([
      { epoch: 1, status: 'ok', cached: false, usage, source: `dead/${deadReceipt}` },
      { epoch: 2, status: 'ok', cached: true, usage, source: `receipts/${key}.json` },
    ]);
    const s = await gj(repo, ['show', key]);
    expect(s.stdout).toContain(
      `usage     epoch 1  ok        100 prompt + 20 completion tokens in 1 request(s)  dead/${deadReceipt}\n`,
    );
    expect(s.stdout).toContain(
      `          epoch 2  ok        100 prompt + 20 completion tokens in 1 request(s) (answered from the host cache)  receipts/${key}.json\n`,
    );
  });

  it('work --max-tokens stops claiming once the run has spent its budget', async () => {
    const { repo, fake } = await setup([good(), good(), good()]);
    const keys = [await mint(repo, 'one'), await mint(repo, 'two'), await mint(repo, 'three')];
    const w = await gj(repo, ['work', '--drain', '--generator', 'builtin:openai', '--max-tokens', '50']);
    expect(w.exitCode).toBe(0);
    expect(w.stdout).toBe('1 job(s) taken\ntoken budget spent (120 ≥ 50): stopped claiming');
    expect(fake.requests).toHaveLength(1);
    expect(genDir(repo, 'received')).toHaveLength(1);
    expect(genDir(repo, 'queue')).toHaveLength(2);
    expect([...genDir(repo, 'received'), ...genDir(repo, 'queue')].sort()).toEqual(
      keys.map((k) => `${k}.json`).sort(),
    );
  });

  it('work --max-tokens --json reports the tokens the run spent while under budget', async () => {
    const { repo } = await setup([good(), good()]);
    await mint(repo, 'one');
    await mint(repo, 'two');
    const w = await gj(repo, [
      'work',
      '--drain',
      '--generator',
      'builtin:openai',
      '--max-tokens',
      '1000',
      '--json',
    ]);
    expect(w.exitCode).toBe(0);
    expect(JSON.parse(String(w.stdout))).toMatchObject({ ok: true, tokens: 240, budget_spent: false });
  });
});
