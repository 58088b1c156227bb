// submitBatch after its claims: when the run's intent cannot be recorded (the disk fails making its
// directory or writing its record), nothing can ever be sent, so every claimed job goes back to queue/
// at once with no attempt spent. Before, they stayed in running/ under a lease naming no batch until a
// reap's TTL. The provider is a real HTTP server on loopback; the store fails one call through its port.
import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { IoError } from '../../src/core/errors.js';
import { readOpenAiConfig } from '../../src/remote/generators/openai-config.js';
import type { Store } from '../../src/store/store.js';
import { submitBatch } from '../../src/worker/batch-submit.js';
import { newWorker } from '../../src/worker/work-loop.js';
import { mintFileJobs } from '../e2e/worker-helpers.js';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';

let fake: FakeOpenAi | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function context(failAt: (call: string, path: string) => boolean) {
  fake = await startFakeOpenAi([], {
    batch: { answer: () => ({ body: chatCompletion(structuredAnswer([])) }) },
  });
  const loaded = readOpenAiConfig({ GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' });
  if (!loaded.ok) throw new Error(loaded.problem);
  const plain = tempStore('genjob-batch-submit-');
  const keys = mintFileJobs(plain, 2);
  const store = hookedStore(plain, (call, args, proceed) => {
    if (failAt(call, args.map(String).join(' ')))
      throw sysError('EDQUOT', -122, call.replace(/Sync$/, ''), String(args[0]));
    return proceed();
  });
  const ctx = {
    store,
    worker: newWorker(),
    config: loaded.config,
    leaseTtlS: 600,
    maxAttempts: 3,
    timeoutMs: 600_000, // a guard against a hang only
    encodeReceipt: canonicalBytes,
    userSecret: randomBytes(32),
  };
  return { ctx, keys, store };
}

const ls = (store: Store, d: string) => readdirSync(store.layout.dir(d)).sort();

describe('work --batch when the run cannot be recorded', () => {
  for (const [what, failAt] of [
    [
      'its directory cannot be made',
      (call: string, path: string) => call === 'mkdirSync' && path.includes('/batches/'),
    ],
    [
      'its record cannot be written',
      (call: string, path: string) => call === 'linkSync' && path.includes('/batches/'),
    ],
  ] as const) {
    it(`puts every claimed job back, no attempt spent, nothing submitted, when ${what}`, async () => {
      const { ctx, keys, store } = await context(failAt);
      const err = await submitBatch(ctx, 10).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(IoError);
      expect((err as IoError).message).toMatch(
        /disk quota exceeded \(EDQUOT\)(; job [0-9a-f]{12} was put back in queue\/){2}$/,
      );
      expect(ls(store, 'queue')).toEqual(keys.map((k) => `${k}.json`).sort());
      expect(ls(store, 'running')).toEqual([]);
      expect(fake!.requests.filter((q) => q.path === '/v1/batches')).toEqual([]);
    });
  }
});
