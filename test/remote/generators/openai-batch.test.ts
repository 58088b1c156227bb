import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildJob, DEFAULT_CONSTRAINTS, type Job } from '../../../src/core/job.js';
import { sha256Hex } from '../../../src/core/sha256.js';
import { batchLine, lineOutcome, parseResultFile } from '../../../src/remote/generators/openai-batch.js';
import { fileContent } from '../../../src/remote/generators/openai-batch-api.js';
import { readOpenAiConfig } from '../../../src/remote/generators/openai-config.js';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../../helpers/fake-openai.js';
import { tempDir } from '../../helpers/temp-store.js';

const ORIGINAL = 'export const foo = 1;\n';
let root: string;
let job: Job;

beforeEach(() => {
  root = tempDir('genjob-openai-batch-');
  mkdirSync(join(root, 'src'));
  writeFileSync(join(root, 'src/a.ts'), ORIGINAL);
  job = buildJob('rename foo', [{ path: 'src/a.ts', sha256: sha256Hex(ORIGINAL) }]);
});

const config = () => {
  const c = readOpenAiConfig({
    GENJOB_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
    GENJOB_OPENAI_MODEL: 'm',
    XDG_CONFIG_HOME: root,
  });
  if (!c.ok) throw new Error(c.problem);
  return c.config;
};

const target = () => ({ workspace: root, job, rawAnswerDir: join(root, 'raw') });
const okLine = (content: string) => ({
  custom_id: job.key,
  status_code: 200,
  body: chatCompletion(structuredAnswer([{ path: 'src/a.ts', content }]), {
    usage: { prompt_tokens: 7, completion_tokens: 3 },
  }),
  error: null,
});

describe('batchLine', () => {
  it('names the job key as custom_id and carries the interactive request body', () => {
    const built = batchLine(config(), job, root, 'structured');
    if (!('line' in built)) throw new Error('no line');
    const line = JSON.parse(built.line);
    expect(line).toMatchObject({ custom_id: job.key, method: 'POST', url: '/v1/chat/completions' });
    expect(line.body.model).toBe('m');
    expect(line.body.response_format.json_schema.name).toBe('genjob_changes');
    expect(line.body.messages[1].content).toContain(ORIGINAL);
  });

  it('refuses to send a file whose bytes changed since mint', () => {
    writeFileSync(join(root, 'src/a.ts'), 'export const foo = 2;\n');
    expect(batchLine(config(), job, root, 'structured')).toEqual({ changed: 'src/a.ts' });
  });

  it('refuses to send a read file whose bytes changed since mint', () => {
    writeFileSync(join(root, 'config.ini'), 'timeout = 5\n');
    const withRead = buildJob('use the timeout', job.inputs, DEFAULT_CONSTRAINTS, [
      { path: 'config.ini', sha256: sha256Hex('timeout = 5\n') },
    ]);
    expect('line' in batchLine(config(), withRead, root, 'structured')).toBe(true);
    writeFileSync(join(root, 'config.ini'), 'timeout = 5\ntoken = "canary"\n');
    expect(batchLine(config(), withRead, root, 'structured')).toEqual({ changed: 'config.ini' });
  });

  it('follows no symlink on the way to a file, even to bytes that match the minted digest', () => {
    const outside = tempDir('genjob-openai-batch-outside-');
    writeFileSync(join(outside, 'a.ts'), ORIGINAL);
    symlinkSync(outside, join(root, 'lib'));
    const linked = buildJob('rename foo', [{ path: 'lib/a.ts', sha256: sha256Hex(ORIGINAL) }]);
    const built = batchLine(config(), linked, root, 'structured');
    expect(built).toEqual({
      problem: expect.stringMatching(/^lib\/a\.ts: lib \(on the way to it\) is now a symlink/),
    });
  });
});

describe('parseResultFile', () => {
  it('reads output and error lines by custom_id; an output line wins over an error line', () => {
    const text = [
      JSON.stringify({
        custom_id: 'k2',
        response: null,
        error: { code: 'batch_expired', message: 'not run' },
      }),
      JSON.stringify({ custom_id: 'k1', response: { status_code: 200, body: { x: 1 } }, error: null }),
      'not json',
      JSON.stringify({ custom_id: 'k1', response: null, error: { code: 'e', message: 'm' } }),
    ].join('\n');
    const lines = parseResultFile(text);
    expect(lines.get('k1')).toEqual({ custom_id: 'k1', status_code: 200, body: { x: 1 }, error: null });
    expect(lines.get('k2')?.error).toEqual({ code: 'batch_expired', message: 'not run' });
    expect(lines.size).toBe(2);
  });
});

describe('lineOutcome', () => {
  it('reads a 200 line like an interactive answer: files written, usage counted, raw answer kept', () => {
    const out = lineOutcome(okLine('export const bar = 1;\n'), 'structured', target(), 'batch_1');
    expect(out).toEqual({
      status: 'ok',
      reason: null,
      usage: { prompt_tokens: 7, completion_tokens: 3, requests: 1 },
      version: 'fake-model-1',
    });
    expect(readFileSync(join(root, 'src/a.ts'), 'utf8')).toBe('export const bar = 1;\n');
    expect(readFileSync(join(root, 'raw', 'answer-1.txt'), 'utf8')).toContain('export const bar');
  });

  it('rejects an answer naming a path outside the job, writing nothing', () => {
    const line = okLine('x');
    line.body = chatCompletion(structuredAnswer([{ path: '../evil', content: 'x' }]));
    const out = lineOutcome(line, 'structured', target(), 'batch_1');
    expect(out.status).toBe('rejected');
    expect(out.reason).toMatch(/"\.\.\/evil", which is not one of the job's paths/);
    expect(readFileSync(join(root, 'src/a.ts'), 'utf8')).toBe(ORIGINAL);
  });

  it('aborts a failed line with the provider error, counting its request', () => {
    const out = lineOutcome(
      {
        custom_id: job.key,
        status_code: 429,
        body: { error: { message: 'slow down', code: 'rate_limit' } },
        error: null,
      },
      'structured',
      target(),
      'batch_9',
    );
    expect(out.status).toBe('aborted');
    expect(out.reason).toBe(
      'builtin:openai: batch batch_9 answered this request with an error (HTTP 429): rate_limit: slow down',
    );
    expect(out.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, requests: 1 });
  });
});

describe('fileContent', () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it('refuses a result file that grows past the cap while it streams (no length declared), returning none of it', async () => {
    fake = await startFakeOpenAi([], {
      batch: { answer: () => 'unanswered', downloads: ['chunked', 'chunked'] },
    });
    fake.batch!.files.set('out-1', { id: 'out-1', purpose: 'batch_output', content: 'x'.repeat(2000) });
    const c = { ...config(), endpoint: new URL(`${fake.url}/chat/completions`) };
    await expect(fileContent(c, 'out-1', 1000)).rejects.toThrow(
      /GET \S+\/files\/out-1\/content: HTTP 200: the answer is larger than 1000 bytes; genjob reads none of it/,
    );
    expect(await fileContent(c, 'out-1', 2000)).toBe('x'.repeat(2000));
  });
});
