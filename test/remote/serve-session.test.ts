// serve-session and the worker's ServeClient talking in-process over pipes: the real protocol,
// real bundle packing and extraction, a real shell generator and the real result cache.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { buildJob, jobDigest } from '../../src/core/job.js';
import { decodeReceipt } from '../../src/core/receipt-decode.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { ResultCache } from '../../src/remote/result-cache.js';
import { serveSession } from '../../src/remote/serve-session.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import type { ServeLauncher } from '../../src/transport/launcher.js';
import { FrameReader, FrameWriter } from '../../src/transport/protocol.js';
import { safeExtract } from '../../src/transport/safe-extract.js';
import { packTar } from '../../src/transport/tar-pack.js';
import { openCheckedSession } from '../../src/worker/preflight.js';
import { ServeClient } from '../../src/worker/serve-client.js';
import { quietStderr } from '../helpers/quiet-stderr.js';

/** Deadlines of the session (hello, request, generator): guards against a hang only, never a pass condition. */
const LIMIT_MS = 600_000;

// serve's warnings (tampered cache entries, a cache it could not write) go to its stderr: kept here
const serveStderr = quietStderr();

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'gj-serve-'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

function inProcess(cache: ResultCache, pinned: string | null = null): ServeLauncher {
  return {
    destination: 'in-process',
    start(args) {
      // as serve.ts reads --check-generator[=command]
      const asked = args.find((a) => a.startsWith('--check-generator'));
      const check = asked === undefined ? {} : { check: { generator: asked.split('=')[1] ?? null } };
      const toServe = new PassThrough();
      const fromServe = new PassThrough();
      const stderr = new PassThrough();
      const exited = serveSession(toServe, fromServe, {
        cache,
        pinnedGenerator: pinned,
        encodeReceipt: (r) => canonicalBytes(r),
        ...check,
        // the test's generators log their runs in tmp; the cache inside it stays hidden
        policy: {
          kind: 'bwrap',
          network: false,
          envNames: [],
          binds: [],
          bindsRw: [tmp],
          hidden: [cache.dir, cache.workDir],
        },
      })
        .then(() => fromServe.end())
        .then(
          () => ({ exitCode: 0, signal: null }),
          // a killed session (its stdin destroyed) ends serve early; `exited` never rejects
          () => ({ exitCode: 1, signal: null }),
        );
      return { stdin: toServe, stdout: fromServe, stderr, exited, kill: () => toServe.destroy() };
    },
    shipmentFacts: async () => ({}),
    close: async () => {},
  };
}

const source = 'def f():\n    return 1\n';
const job = buildJob('add a comment', [
  { path: 'src/a.py', sha256: sha256Hex(source) },
  { path: 'src/new.py', sha256: null },
]);
const digest = jobDigest(job);

function request(type: 'run' | 'fetch', generator: string, epoch = 1) {
  return { type, key: job.key, job_digest: digest, epoch, worker_id: 'w1', generator, timeout_ms: LIMIT_MS };
}

async function run(
  client: ServeClient,
  generator: string,
  epoch = 1,
  bytes = source,
  extra: Record<string, unknown> = {},
) {
  writeFileSync(join(tmp, 'a.py'), bytes);
  const answer = await client.request(
    { ...request('run', generator, epoch), ...extra },
    LIMIT_MS,
    async (w) => {
      await packTar(
        [
          { name: 'job.json', bytes: jobFileBytes(job) },
          { name: 'files/src/a.py', file: join(tmp, 'a.py') },
        ],
        (c) => w.chunk(c),
      );
      await w.end();
    },
  );
  return answer;
}

async function take(answer: Awaited<ReturnType<ServeClient['request']>>) {
  if (answer.type !== 'result') throw new Error(`expected a result, got ${JSON.stringify(answer)}`);
  const receipt = decodeReceipt(answer.receiptBytes, 'receipt');
  const staged = await safeExtract(answer.tar, {
    stagingParent: tmp,
    prefix: 'files/',
    allowed: new Set(['src/a.py', 'src/new.py']),
    maxEntries: 2,
    maxFileBytes: 1 << 20,
    maxTotalBytes: 1 << 20,
  });
  return { receipt, staged };
}

describe('genjob serve session', () => {
  it('generates, answers with a receipt for the requested epoch, and ships exactly the outputs', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const client = await ServeClient.open(inProcess(cache), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    const gen = `printf '# %s\\n' "$GENJOB_INSTRUCTION" >> src/a.py && echo new > src/new.py && test -f "$GENJOB_JOB" && test "$GENJOB_KEY" = ${job.key}`;
    const { receipt, staged } = await take(await run(client, gen, 7));
    expect(receipt).toMatchObject({
      key: job.key,
      job_digest: digest,
      epoch: 7,
      status: 'ok',
      cached: false,
      reason: null,
    });
    expect(receipt.outputs.map((o) => o.path)).toEqual(['src/a.py', 'src/new.py']);
    expect(readFileSync(join(staged.dir, 'src/a.py'), 'utf8')).toBe(`${source}# add a comment\n`);
    expect(readFileSync(join(staged.dir, 'src/new.py'), 'utf8')).toBe('new\n');
    await client.close();
  });

  it('answers a redelivery from its cache without running the generator again', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const log = join(tmp, 'runs.log');
    const gen = `echo run >> ${log} && echo changed > src/a.py`;
    const client = await ServeClient.open(inProcess(cache), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    const first = await take(await run(client, gen, 1));
    const second = await take(await run(client, gen, 2));
    const fetched = await take(await client.request(request('fetch', gen, 3), LIMIT_MS));
    expect(readFileSync(log, 'utf8')).toBe('run\n');
    expect([second.receipt.cached, fetched.receipt.cached]).toEqual([true, true]);
    expect([second.receipt.epoch, fetched.receipt.epoch]).toEqual([2, 3]);
    expect(second.receipt.outputs).toEqual(first.receipt.outputs);
    await client.close();
  });

  it('generates a fresh generation (a promoted or retried job) apart from the ok result it keeps, and answers its redelivery from its own entry', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const log = join(tmp, 'runs.log');
    const gen = `echo run >> ${log} && wc -l < ${log} > src/a.py`;
    const client = await ServeClient.open(inProcess(cache), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    const first = await take(await run(client, gen, 1));
    expect(first.receipt).toMatchObject({ status: 'ok', cached: false });
    const fresh = { fresh: sha256Hex('promoted or retried') };
    const second = await take(await run(client, gen, 2, source, fresh));
    expect(second.receipt).toMatchObject({ status: 'ok', cached: false, epoch: 2 });
    expect(readFileSync(join(second.staged.dir, 'src/a.py'), 'utf8')).toBe('2\n');
    // the same fresh generation again (a redelivery): its own entry, nothing run
    const again = await take(await run(client, gen, 3, source, fresh));
    const fetched = await take(await client.request({ ...request('fetch', gen, 4), ...fresh }, LIMIT_MS));
    expect([again.receipt.cached, fetched.receipt.cached]).toEqual([true, true]);
    expect(again.receipt.outputs).toEqual(second.receipt.outputs);
    // a request without it still gets the key's first result
    expect((await take(await run(client, gen, 5))).receipt.outputs).toEqual(first.receipt.outputs);
    expect(readFileSync(log, 'utf8')).toBe('run\nrun\n');
    await client.close();
  });

  it('answers a fresh result as it built it: the entry it just stored is not read back and hashed again', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const reads = vi.spyOn(cache, 'read');
    const client = await ServeClient.open(inProcess(cache), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    const { receipt, staged } = await take(await run(client, 'echo changed > src/a.py', 1));
    expect(receipt).toMatchObject({ status: 'ok', cached: false });
    expect(readFileSync(join(staged.dir, 'src/a.py'), 'utf8')).toBe('changed\n');
    // the look before reading the bundle, and the one under the entry's lock: none after storing
    expect(reads).toHaveBeenCalledTimes(2);
    expect(await cache.read(reads.mock.calls[0]![0])).toMatchObject({ outputs: receipt.outputs });
    await client.close();
  });

  it('answers "none" to a fetch for a job it never generated', async () => {
    const client = await ServeClient.open(inProcess(new ResultCache(join(tmp, 'cache'))), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    expect(await client.request(request('fetch', 'true'), LIMIT_MS)).toEqual({ type: 'none' });
    await client.close();
  });

  it.each([
    {
      name: 'a generator that fails',
      gen: 'echo boom >&2; exit 3',
      status: 'aborted',
      reason: /exited with status 3: boom/,
    },
    {
      name: 'a generator that writes outside the contract',
      gen: 'echo x > src/other.py',
      status: 'rejected',
      reason: /src\/other\.py.*outside/,
    },
  ])('reports $name in the receipt', async ({ gen, status, reason }) => {
    const client = await ServeClient.open(inProcess(new ResultCache(join(tmp, 'cache'))), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    const { receipt, staged } = await take(await run(client, gen));
    expect(receipt.status).toBe(status);
    expect(receipt.reason).toMatch(reason);
    expect(receipt.outputs).toEqual([]);
    expect(readdirSync(staged.dir)).toEqual([]);
    await client.close();
  });

  it('refuses a bundle whose file does not match the job, and keeps serving', async () => {
    const client = await ServeClient.open(inProcess(new ResultCache(join(tmp, 'cache'))), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    const bad = await run(client, 'true', 1, 'tampered\n');
    expect(bad).toMatchObject({ type: 'error', code: 'EGJ_BUNDLE_MISMATCH' });
    const good = await take(await run(client, 'true', 1));
    expect(good.receipt.status).toBe('ok');
    await client.close();
  });

  it('hostile: a request naming a generator no process can start (a NUL) is refused before anything is recorded, so the job is not left in doubt', async () => {
    const client = await ServeClient.open(inProcess(new ResultCache(join(tmp, 'cache'))), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    // before, the request was taken, the generation recorded as started, and Node's refusal to start the
    // process left it in doubt: every later request for the job was refused until someone consented
    const refused = await run(client, 'true\0--bind / /');
    expect(refused).toMatchObject({ type: 'error', code: 'EGJ_BAD_REQUEST' });
    expect((refused as { message: string }).message).toMatch(
      /^bad request: must be a command of at most 4096 characters, not blank, with no NUL/,
    );
    const good = await take(await run(client, 'echo changed > src/a.py'));
    expect(good.receipt.status).toBe('ok');
    await client.close();
  });

  it('refuses a request for another generator than the pinned one', async () => {
    const client = await ServeClient.open(inProcess(new ResultCache(join(tmp, 'cache')), 'true'), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    expect(await run(client, 'rm -rf /')).toMatchObject({ type: 'error', code: 'EGJ_GENERATOR_PINNED' });
    await client.close();
  });
});

describe('a cancel sent while a run generates', () => {
  it('kills the generator, answers the run aborted without caching it, and the session goes on', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const client = await ServeClient.open(inProcess(cache), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    const started = join(tmp, 'started');
    // a generator that would outlive the test: only the cancel can end it
    const slow = `touch ${started}; sleep 3600; echo late > src/a.py`;
    const pending = run(client, slow);
    while (!existsSync(started)) await new Promise((r) => setTimeout(r, 25));
    client.cancel(LIMIT_MS);
    const { receipt } = await take(await pending);
    expect(receipt).toMatchObject({ status: 'aborted', outputs: [], cached: false });
    expect(receipt.reason).toMatch(/^cancelled: /);
    expect(readdirSync(join(cache.dir, 'results'))).toEqual([]);
    expect(readdirSync(join(cache.dir, 'started'))).toEqual([]); // not "in doubt" either
    // the same session answers the next request, and the job generates again
    const again = await take(await run(client, 'echo fresh > src/new.py'));
    expect(again.receipt.status).toBe('ok');
    await client.close();
  });

  it('is ignored when it comes after the answer it meant to stop: no answer of its own', async () => {
    const toServe = new PassThrough();
    const fromServe = new PassThrough();
    const served = serveSession(toServe, fromServe, {
      cache: new ResultCache(join(tmp, 'cache')),
      pinnedGenerator: null,
      encodeReceipt: (r) => canonicalBytes(r),
      policy: { kind: 'none', network: false, envNames: [], binds: [], bindsRw: [], hidden: [] },
    });
    const writer = new FrameWriter(toServe);
    const reader = new FrameReader(fromServe, 1 << 20);
    expect(await reader.readHeader()).toMatchObject({ type: 'hello' });
    await reader.drain(reader.body());
    await writer.message({ type: 'cancel' });
    await writer.message(request('fetch', 'true'));
    expect(await reader.readHeader()).toMatchObject({ type: 'none' });
    await reader.drain(reader.body());
    toServe.end();
    await served; // ends at the end of input, with nothing more said
    fromServe.end();
    expect(await reader.readHeader()).toBeNull();
  });
});

describe('aborted results', () => {
  it('are answered from the cache on redelivery, and generated again when the worker asks to retry them', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const log = join(tmp, 'runs.log');
    const flag = join(tmp, 'fixed');
    // fails until the flag file exists, like a generator whose endpoint was down
    const gen = `echo run >> ${log}; test -f ${flag} || exit 9; echo fixed > src/a.py`;
    const client = await ServeClient.open(inProcess(cache), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    expect((await take(await run(client, gen, 1))).receipt.status).toBe('aborted');
    writeFileSync(flag, '');
    expect((await take(await run(client, gen, 2))).receipt).toMatchObject({
      status: 'aborted',
      cached: true,
    });
    const retry = await client.request(
      { ...request('run', gen, 3), retry_aborted: true },
      LIMIT_MS,
      async (w) => {
        writeFileSync(join(tmp, 'a.py'), source);
        await packTar(
          [
            { name: 'job.json', bytes: jobFileBytes(job) },
            { name: 'files/src/a.py', file: join(tmp, 'a.py') },
          ],
          (c) => w.chunk(c),
        );
        await w.end();
      },
    );
    expect((await take(retry)).receipt).toMatchObject({ status: 'ok', cached: false, epoch: 3 });
    expect(readFileSync(log, 'utf8')).toBe('run\nrun\n');
    await client.close();
  });
});

describe('generator configuration', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of ['GENJOB_OPENAI_BASE_URL', 'GENJOB_OPENAI_MODEL', 'XDG_CONFIG_HOME']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  async function open(pinned: string | null = null) {
    const cache = new ResultCache(join(tmp, 'cache'));
    const client = await ServeClient.open(inProcess(cache, pinned), [], {
      maxAnswerBytes: 1 << 30,
      helloTimeoutMs: LIMIT_MS,
    });
    return { cache, client };
  }

  const sessionOpts = { maxAnswerBytes: 1 << 30, helloTimeoutMs: LIMIT_MS };

  it('answers the generator check in its hello: the generator it would run, pinned or requested', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const pinned = await openCheckedSession(inProcess(cache, 'true'), null, sessionOpts);
    expect(pinned.hello?.check).toEqual({ ok: true, generator: 'true', pinned: true });
    await pinned.close();
    const free = await openCheckedSession(inProcess(cache), 'my-coder --apply', sessionOpts);
    expect(free.hello?.check).toEqual({ ok: true, generator: 'my-coder --apply', pinned: false });
    await free.close();
    // a first word naming a file this host does not have is found at the check, before any claim
    await expect(openCheckedSession(inProcess(cache), './no-such-gen.sh', sessionOpts)).rejects.toMatchObject(
      {
        code: 'EGJ_GENERATOR_CONFIG',
        message: expect.stringContaining(`no such file ${join(process.cwd(), 'no-such-gen.sh')}`),
      },
    );
    await expect(openCheckedSession(inProcess(cache), null, sessionOpts)).rejects.toMatchObject({
      code: 'EGJ_NO_GENERATOR',
    });
    await expect(openCheckedSession(inProcess(cache, 'true'), './gen.sh', sessionOpts)).rejects.toMatchObject(
      {
        code: 'EGJ_GENERATOR_PINNED',
      },
    );
  });

  it.each([
    { name: 'no base URL', base: undefined, says: 'GENJOB_OPENAI_BASE_URL is not set' },
    { name: 'an htp:// typo', base: 'htp://localhost:1/v1', says: 'must be http:// or https://' },
  ])('refuses builtin:openai with $name, at the check and at a run, and caches nothing', async (c) => {
    process.env.XDG_CONFIG_HOME = join(tmp, 'config'); // no openai.json there
    process.env.GENJOB_OPENAI_MODEL = 'm';
    if (c.base === undefined) delete process.env.GENJOB_OPENAI_BASE_URL;
    else process.env.GENJOB_OPENAI_BASE_URL = c.base;
    const check = await openCheckedSession(
      inProcess(new ResultCache(join(tmp, 'cache'))),
      'builtin:openai',
      sessionOpts,
    ).catch((e: unknown) => e);
    expect(check).toMatchObject({ code: 'EGJ_GENERATOR_CONFIG' });
    expect((check as Error).message).toContain(c.says);
    const { cache, client } = await open();
    expect(await run(client, 'builtin:openai')).toMatchObject({
      type: 'error',
      code: 'EGJ_GENERATOR_CONFIG',
    });
    expect(readdirSync(join(cache.dir, 'results'))).toEqual([]);
    await client.close();
  });
});

describe('the host cache is serve-only and the outbox rule holds', () => {
  async function open(cache: ResultCache) {
    return ServeClient.open(inProcess(cache), [], { maxAnswerBytes: 1 << 30, helloTimeoutMs: LIMIT_MS });
  }

  it('does not serve an entry changed outside serve (bytes and result.json alike): it is quarantined and generated again', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const log = join(tmp, 'runs.log');
    const gen = `echo run >> ${log} && echo honest > src/a.py`;
    const client = await open(cache);
    const first = await take(await run(client, gen, 1));
    const entry = cache.entryDir(cache.entryName(job.key, gen, digest));
    // rewrite the entry consistently, as an attacker with write access to the cache would
    const evil = 'poisoned\n';
    writeFileSync(join(entry, 'files/src/a.py'), evil);
    const result = JSON.parse(readFileSync(join(entry, 'result.json'), 'utf8'));
    result.outputs[0].sha256 = sha256Hex(evil);
    result.outputs[0].bytes = evil.length;
    writeFileSync(join(entry, 'result.json'), JSON.stringify(result));
    const again = await take(await run(client, gen, 2));
    expect(again.receipt).toMatchObject({ status: 'ok', cached: false });
    expect(again.receipt.outputs).toEqual(first.receipt.outputs);
    expect(readFileSync(join(again.staged.dir, 'src/a.py'), 'utf8')).toBe('honest\n');
    expect(readFileSync(log, 'utf8')).toBe('run\nrun\n');
    expect(readdirSync(join(cache.dir, 'quarantine'))).toHaveLength(1);
    expect(serveStderr()).toMatch(/EGJ_CACHE_TAMPERED: .* set aside in .*quarantine/);
    // a fetch never answers with a tampered entry either
    writeFileSync(join(entry, 'files/src/a.py'), evil);
    expect(await client.request(request('fetch', gen, 3), LIMIT_MS)).toEqual({ type: 'none' });
    await client.close();
  });

  it('says a generation that started and never finished is in doubt, and runs it again only with consent', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    await cache.init();
    const log = join(tmp, 'runs.log');
    const gen = `echo run >> ${log} && echo done > src/a.py`;
    // recorded by a serve that lives on (this process): its generation may have been delivered unstored
    await cache.markStarted(cache.entryName(job.key, gen, digest));
    const client = await open(cache);
    expect(await run(client, gen, 1)).toMatchObject({ type: 'error', code: 'EGJ_GENERATION_IN_DOUBT' });
    expect(existsSync(log)).toBe(false);
    const retry = await client.request(
      { ...request('run', gen, 2), retry_aborted: true },
      LIMIT_MS,
      async (w) => {
        writeFileSync(join(tmp, 'a.py'), source);
        await packTar(
          [
            { name: 'job.json', bytes: jobFileBytes(job) },
            { name: 'files/src/a.py', file: join(tmp, 'a.py') },
          ],
          (c) => w.chunk(c),
        );
        await w.end();
      },
    );
    expect((await take(retry)).receipt).toMatchObject({ status: 'ok', cached: false });
    expect(readFileSync(log, 'utf8')).toBe('run\n');
    expect(readdirSync(join(cache.dir, 'started'))).toEqual([]);
    await client.close();
  });

  it('delivers a result it cannot store, saying so, and does not silently generate it again', async () => {
    const cache = new ResultCache(join(tmp, 'cache'));
    const log = join(tmp, 'runs.log');
    const gen = `echo run >> ${log} && echo kept > src/a.py`;
    const client = await open(cache);
    rmSync(join(cache.dir, 'results'), { recursive: true });
    writeFileSync(join(cache.dir, 'results'), 'not a directory'); // every commit now fails
    const answer = await run(client, gen, 1);
    expect(answer).toMatchObject({ type: 'result', cacheError: expect.stringMatching(/could not store/) });
    expect(serveStderr()).toMatch(/^genjob serve: the host could not store this result in its cache: /m);
    const { receipt, staged } = await take(answer);
    expect(receipt).toMatchObject({ status: 'ok', cached: false });
    expect(readFileSync(join(staged.dir, 'src/a.py'), 'utf8')).toBe('kept\n');
    expect(await run(client, gen, 2)).toMatchObject({ type: 'error', code: 'EGJ_GENERATION_IN_DOUBT' });
    expect(readFileSync(log, 'utf8')).toBe('run\n');
    await client.close();
  });
});
