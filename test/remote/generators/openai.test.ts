import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildJob, type Job } from '../../../src/core/job.js';
import { sha256Hex } from '../../../src/core/sha256.js';
import {
  type BuiltinGeneratorInput,
  type BuiltinGeneratorResult,
  OPENAI_GENERATOR_NAME,
  runOpenAiGenerator,
} from '../../../src/remote/generators/openai.js';
import { readOpenAiConfig } from '../../../src/remote/generators/openai-config.js';
import { formatTextAnswer } from '../../../src/remote/generators/openai-prompt.js';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../../helpers/fake-openai.js';

const ORIGINAL = 'export const foo = 1;\n';

let root: string;
let workspace: string;
let rawAnswerDir: string;
let job: Job;
let fake: FakeOpenAi | undefined;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'genjob-openai-'));
  workspace = join(root, 'ws');
  rawAnswerDir = join(root, 'raw');
  mkdirSync(join(workspace, 'src'), { recursive: true });
  writeFileSync(join(workspace, 'src/a.ts'), ORIGINAL);
  job = buildJob('rename foo to bar and add a helper', [
    { path: 'src/a.ts', sha256: sha256Hex(ORIGINAL) },
    { path: 'src/lib/helper.ts', sha256: null },
  ]);
});

afterEach(async () => {
  await fake?.close();
  fake = undefined;
  rmSync(root, { recursive: true, force: true });
});

/** The host's environment: config lives in a private XDG dir so the developer's own file is never read. */
function hostEnv(url: string | undefined, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    XDG_CONFIG_HOME: join(root, 'config'),
    ...(url === undefined ? {} : { GENJOB_OPENAI_BASE_URL: url }),
    GENJOB_OPENAI_MODEL: 'test-model',
    GENJOB_OPENAI_RETRY_BASE_MS: '10',
    ...extra,
  };
}

/** An answer that never comes while a test runs: only a deadline can end the wait for it. */
const NEVER_MS = 3_600_000;

/** The attempt's deadline defaults far above anything a loaded machine needs (a guard, not a condition). */
function run(env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<BuiltinGeneratorResult> {
  const input: BuiltinGeneratorInput = { workspace, job, env, timeoutMs, rawAnswerDir };
  return runOpenAiGenerator(input);
}

const GOOD_FILES = [
  { path: 'src/a.ts', content: 'export const bar = 1;\n' },
  { path: 'src/lib/helper.ts', content: 'export const help = () => 42;\n' },
];

function workspaceFile(p: string): string {
  return readFileSync(join(workspace, p), 'utf8');
}

describe('runOpenAiGenerator', () => {
  it('is named builtin:openai', () => {
    expect(OPENAI_GENERATOR_NAME).toBe('builtin:openai');
  });

  it('writes the files of a structured answer into the workspace, creating parent directories', async () => {
    fake = await startFakeOpenAi([
      {
        body: chatCompletion(structuredAnswer(GOOD_FILES), {
          model: 'llama-3-8b',
          usage: { prompt_tokens: 120, completion_tokens: 30 },
        }),
      },
    ]);
    const result = await run(hostEnv(fake.url, { GENJOB_OPENAI_API_KEY: 'sk-test' }));

    expect(result).toEqual({
      status: 'ok',
      reason: null,
      usage: { prompt_tokens: 120, completion_tokens: 30, requests: 1 },
      version: 'llama-3-8b',
    });
    expect(workspaceFile('src/a.ts')).toBe(GOOD_FILES[0]!.content);
    expect(workspaceFile('src/lib/helper.ts')).toBe(GOOD_FILES[1]!.content);
    expect(readFileSync(join(rawAnswerDir, 'answer-1.txt'), 'utf8')).toBe(structuredAnswer(GOOD_FILES));

    const [req] = fake.requests;
    expect(req?.method).toBe('POST');
    expect(req?.path).toBe('/v1/chat/completions');
    expect(req?.headers.authorization).toBe('Bearer sk-test');
    const body = req?.body as {
      model: string;
      messages: Array<{ role: string; content: string }>;
      response_format: { json_schema: { name: string; strict: boolean } };
    };
    expect(body.model).toBe('test-model');
    expect(body.response_format.json_schema.name).toBe('genjob_changes');
    expect(body.response_format.json_schema.strict).toBe(true);
    expect(body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(body.messages[1]!.content).toContain('rename foo to bar and add a helper');
    expect(body.messages[1]!.content).toContain(ORIGINAL);
    expect(body.messages[1]!.content).toContain(
      '=== FILE: src/lib/helper.ts === (does not exist yet; create it)',
    );
  });

  it('leaves files the answer does not mention unchanged', async () => {
    fake = await startFakeOpenAi([{ body: chatCompletion(structuredAnswer([GOOD_FILES[1]!])) }]);
    const result = await run(hostEnv(fake.url));
    expect(result.status).toBe('ok');
    expect(workspaceFile('src/a.ts')).toBe(ORIGINAL);
    expect(workspaceFile('src/lib/helper.ts')).toBe(GOOD_FILES[1]!.content);
  });

  it('asks again in the text format when the endpoint rejects response_format, and parses that', async () => {
    fake = await startFakeOpenAi([
      {
        rejectResponseFormat: true,
        body: chatCompletion(formatTextAnswer(GOOD_FILES), {
          usage: { prompt_tokens: 50, completion_tokens: 20 },
        }),
      },
    ]);
    const result = await run(hostEnv(fake.url));

    expect(result).toMatchObject({
      status: 'ok',
      usage: { prompt_tokens: 50, completion_tokens: 20, requests: 2 },
    });
    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]!.body).toHaveProperty('response_format');
    expect(fake.requests[1]!.body).not.toHaveProperty('response_format');
    expect(JSON.stringify(fake.requests[1]!.body)).toContain('=== FILE: <path> ===');
    expect(workspaceFile('src/a.ts')).toBe(GOOD_FILES[0]!.content);
    expect(readFileSync(join(rawAnswerDir, 'error-1.txt'), 'utf8')).toContain('response_format');
  });

  it('uses the text format from the start when GENJOB_OPENAI_STRUCTURED=off', async () => {
    fake = await startFakeOpenAi([{ body: chatCompletion(formatTextAnswer(GOOD_FILES)) }]);
    const result = await run(hostEnv(fake.url, { GENJOB_OPENAI_STRUCTURED: 'off' }));
    expect(result.status).toBe('ok');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.body).not.toHaveProperty('response_format');
  });

  it('aborts without a fallback when GENJOB_OPENAI_STRUCTURED=on and response_format is rejected', async () => {
    fake = await startFakeOpenAi([
      { rejectResponseFormat: true, body: chatCompletion(formatTextAnswer(GOOD_FILES)) },
    ]);
    const result = await run(hostEnv(fake.url, { GENJOB_OPENAI_STRUCTURED: 'on' }));
    expect(result.status).toBe('aborted');
    expect(result.reason).toMatch(/does not accept response_format/);
    expect(fake.requests).toHaveLength(1);
  });

  it.each([
    {
      name: 'prose instead of JSON',
      content: 'Sure! I renamed foo to bar.' as string | null,
      problem: /not JSON/,
    },
    { name: 'JSON of the wrong shape', content: '{"changes":[]}', problem: /files/ },
    { name: 'no message content', content: null, problem: /no message content/ },
  ])('rejects $name, keeps the raw answer and counts its tokens', async ({ content, problem }) => {
    fake = await startFakeOpenAi([
      { body: chatCompletion(content, { usage: { prompt_tokens: 100, completion_tokens: 7 } }) },
    ]);
    const result = await run(hostEnv(fake.url));

    expect(result.status).toBe('rejected');
    expect(result.reason).toMatch(/^answer could not be parsed: /);
    expect(result.reason).toMatch(problem);
    expect(result.usage).toEqual({ prompt_tokens: 100, completion_tokens: 7, requests: 1 });
    expect(result.version).toBe('fake-model-1');
    if (content !== null) expect(readFileSync(join(rawAnswerDir, 'answer-1.txt'), 'utf8')).toBe(content);
    expect(workspaceFile('src/a.ts')).toBe(ORIGINAL);
  });

  it('rejects an answer cut off at the token limit', async () => {
    fake = await startFakeOpenAi([
      { body: chatCompletion('{"files":[{"path":"src/a.ts","con', { finishReason: 'length' }) },
    ]);
    const result = await run(hostEnv(fake.url));
    expect(result).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/cut off at the token limit/),
    });
  });

  it('rejects a 200 response that is not a chat completion and keeps its body', async () => {
    fake = await startFakeOpenAi([{ body: '<html>gateway</html>' }]);
    const result = await run(hostEnv(fake.url));
    expect(result).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/^answer could not be parsed: /),
    });
    expect(readFileSync(join(rawAnswerDir, 'answer-1.txt'), 'utf8')).toBe('<html>gateway</html>');
  });

  it.each([
    { name: 'a path outside the job', path: () => 'src/other.ts' },
    { name: 'a parent escape', path: () => '../x' },
    { name: 'a deeper parent escape', path: () => 'src/../../x' },
    { name: 'an absolute path', path: () => join(root, 'x') },
  ])('rejects an answer naming $name and writes nothing at all', async ({ path }) => {
    const target = path();
    fake = await startFakeOpenAi([
      { body: chatCompletion(structuredAnswer([GOOD_FILES[0]!, { path: target, content: 'pwned\n' }])) },
    ]);
    const result = await run(hostEnv(fake.url));

    expect(result.status).toBe('rejected');
    expect(result.reason).toContain(JSON.stringify(target));
    expect(result.reason).toMatch(/not one of the job's paths/);
    expect(existsSync(join(root, 'x'))).toBe(false);
    expect(workspaceFile('src/a.ts')).toBe(ORIGINAL);
    expect(readdirSync(root).sort()).toEqual(['raw', 'ws']);
    expect(readdirSync(join(workspace, 'src'))).toEqual(['a.ts']);
  });

  it('refuses to write through a symlink the workspace holds at an allowed path', async () => {
    writeFileSync(join(root, 'outside.txt'), 'keep\n');
    mkdirSync(join(workspace, 'src/lib'));
    symlinkSync(join(root, 'outside.txt'), join(workspace, 'src/lib/helper.ts'));
    fake = await startFakeOpenAi([{ body: chatCompletion(structuredAnswer([GOOD_FILES[1]!])) }]);
    const result = await run(hostEnv(fake.url));
    expect(result.status).toBe('aborted');
    expect(result.reason).toMatch(/symlink/);
    expect(readFileSync(join(root, 'outside.txt'), 'utf8')).toBe('keep\n');
  });

  it('refuses to create a file under a directory symlink', async () => {
    mkdirSync(join(root, 'elsewhere'));
    symlinkSync(join(root, 'elsewhere'), join(workspace, 'src/lib'));
    fake = await startFakeOpenAi([{ body: chatCompletion(structuredAnswer([GOOD_FILES[1]!])) }]);
    const result = await run(hostEnv(fake.url));
    expect(result.status).toBe('aborted');
    expect(result.reason).toMatch(/src\/lib is not a directory/);
    expect(readdirSync(join(root, 'elsewhere'))).toEqual([]);
  });

  it('retries after a 429, honouring Retry-After, and sums the usage of both requests', async () => {
    fake = await startFakeOpenAi([
      {
        status: 429,
        headers: { 'retry-after': '1' },
        body: { error: { message: 'slow down' }, usage: { prompt_tokens: 0, completion_tokens: 0 } },
      },
      {
        body: chatCompletion(structuredAnswer(GOOD_FILES), {
          usage: { prompt_tokens: 80, completion_tokens: 20 },
        }),
      },
    ]);
    const started = Date.now();
    const result = await run(hostEnv(fake.url));

    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(result).toMatchObject({
      status: 'ok',
      usage: { prompt_tokens: 80, completion_tokens: 20, requests: 2 },
    });
    expect(fake.requests).toHaveLength(2);
  });

  it('gives up on 429 after GENJOB_OPENAI_MAX_RETRIES retries', async () => {
    const limited = { status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'quota' } } };
    fake = await startFakeOpenAi([limited, limited, limited, limited]);
    const result = await run(hostEnv(fake.url, { GENJOB_OPENAI_MAX_RETRIES: '2' }));
    expect(result).toMatchObject({ status: 'aborted', usage: { requests: 3 } });
    expect(result.reason).toMatch(/HTTP 429.*after 3 tries.*quota/);
    expect(fake.requests).toHaveLength(3);
  });

  it('retries a refused connection up to the cap, then aborts without counting a request', async () => {
    const closed = await startFakeOpenAi([]);
    await closed.close();
    const result = await run(hostEnv(closed.url, { GENJOB_OPENAI_MAX_RETRIES: '3' }));
    expect(result.status).toBe('aborted');
    expect(result.reason).toMatch(/connection refused .*\(4 tries\)/);
    expect(result.reason).not.toMatch(/in doubt/);
    expect(result.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, requests: 0 });
    expect(result.version).toBeNull();
  });

  it('succeeds when the endpoint starts listening while refused connections are being retried', async () => {
    const probe = await startFakeOpenAi([]);
    await probe.close();
    const later = setTimeout(async () => {
      fake = await startFakeOpenAi([{ body: chatCompletion(structuredAnswer(GOOD_FILES)) }], {
        port: probe.port,
      });
    }, 150);
    try {
      const result = await run(
        hostEnv(probe.url, { GENJOB_OPENAI_MAX_RETRIES: '8', GENJOB_OPENAI_RETRY_BASE_MS: '50' }),
      );
      expect(result).toMatchObject({ status: 'ok', usage: { requests: 1 } });
    } finally {
      clearTimeout(later);
    }
  });

  it('aborts "in doubt" when the answer is slower than the deadline, sends exactly one request and stops waiting', async () => {
    fake = await startFakeOpenAi([
      { delayMs: NEVER_MS, body: chatCompletion(structuredAnswer(GOOD_FILES)) },
      { body: chatCompletion(structuredAnswer(GOOD_FILES)) },
    ]);
    // the answer never comes: returning at all is stopping the wait at the deadline
    const result = await run(hostEnv(fake.url), 300);
    expect(result.status).toBe('aborted');
    expect(result.reason).toMatch(/^in doubt: /);
    expect(result.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, requests: 1 });
    await new Promise((r) => setTimeout(r, 200));
    expect(fake.requests).toHaveLength(1);
    expect(workspaceFile('src/a.ts')).toBe(ORIGINAL);
  });

  it('applies GENJOB_OPENAI_TIMEOUT_MS to a request within a longer attempt deadline', async () => {
    fake = await startFakeOpenAi([{ delayMs: NEVER_MS, body: chatCompletion(structuredAnswer(GOOD_FILES)) }]);
    const result = await run(hostEnv(fake.url, { GENJOB_OPENAI_TIMEOUT_MS: '200' }), 120_000);
    expect(result.reason).toMatch(/^in doubt: no complete answer within 200 ms/);
    expect(fake.requests).toHaveLength(1);
  });

  it.each([
    {
      name: 'a 500',
      step: { status: 500, body: { error: { message: 'boom' } } },
      reason: /^in doubt: HTTP 500.*boom/,
    },
    { name: 'a 503', step: { status: 503, body: 'overloaded' }, reason: /^in doubt: HTTP 503/ },
    { name: 'a reset mid-response', step: { destroy: true }, reason: /^in doubt: / },
  ])('aborts "in doubt" after $name with one request and no retry', async ({ step, reason }) => {
    fake = await startFakeOpenAi([step, { body: chatCompletion(structuredAnswer(GOOD_FILES)) }]);
    const result = await run(hostEnv(fake.url));
    expect(result.status).toBe('aborted');
    expect(result.reason).toMatch(reason);
    expect(result.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, requests: 1 });
    expect(fake.requests).toHaveLength(1);
  });

  it.each([
    {
      name: 'a 401',
      step: { status: 401, body: { error: { message: 'bad key' } } },
      reason: /^HTTP 401 .*bad key/,
    },
    { name: 'a 404', step: { status: 404, body: 'no such model' }, reason: /^HTTP 404 .*no such model/ },
  ])('aborts after $name without retrying', async ({ step, reason }) => {
    fake = await startFakeOpenAi([step, { body: chatCompletion(structuredAnswer(GOOD_FILES)) }]);
    const result = await run(hostEnv(fake.url));
    expect(result).toMatchObject({ status: 'aborted', usage: { requests: 1 } });
    expect(result.reason).toMatch(reason);
    expect(fake.requests).toHaveLength(1);
  });

  it.each([
    { name: 'base URL', env: { GENJOB_OPENAI_MODEL: 'm' }, variable: 'GENJOB_OPENAI_BASE_URL' },
    {
      name: 'model',
      env: { GENJOB_OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
      variable: 'GENJOB_OPENAI_MODEL',
    },
  ])('aborts naming the variable when the $name is not configured', async ({ env, variable }) => {
    const result = await run({ XDG_CONFIG_HOME: join(root, 'config'), ...env });
    expect(result).toEqual({
      status: 'aborted',
      reason: expect.stringContaining(`${variable} is not set`),
      usage: { prompt_tokens: 0, completion_tokens: 0, requests: 0 },
      version: null,
    });
  });

  it('aborts when an allowed file is not UTF-8 text, before sending anything', async () => {
    writeFileSync(join(workspace, 'src/a.ts'), Buffer.from([0xff, 0xfe, 0x00]));
    fake = await startFakeOpenAi([{ body: chatCompletion(structuredAnswer(GOOD_FILES)) }]);
    const result = await run(hostEnv(fake.url));
    expect(result).toMatchObject({
      status: 'aborted',
      reason: expect.stringMatching(/src\/a\.ts: is not UTF-8/),
    });
    expect(fake.requests).toHaveLength(0);
  });
});

describe('readOpenAiConfig', () => {
  function writeConfig(doc: unknown): void {
    mkdirSync(join(root, 'config/genjob'), { recursive: true });
    writeFileSync(join(root, 'config/genjob/openai.json'), JSON.stringify(doc));
  }

  it('reads the config file when the environment says nothing', () => {
    writeConfig({
      base_url: 'http://127.0.0.1:11434/v1/',
      model: 'qwen',
      api_key: 'k',
      max_retries: 1,
      structured: 'off',
    });
    const result = readOpenAiConfig({ XDG_CONFIG_HOME: join(root, 'config') });
    expect(result).toMatchObject({
      ok: true,
      config: { model: 'qwen', apiKey: 'k', maxRetries: 1, structured: 'off' },
    });
    if (result.ok) expect(result.config.endpoint.href).toBe('http://127.0.0.1:11434/v1/chat/completions');
  });

  it('finds the config file under $HOME/.config when XDG_CONFIG_HOME is unset', () => {
    mkdirSync(join(root, 'home/.config/genjob'), { recursive: true });
    writeFileSync(
      join(root, 'home/.config/genjob/openai.json'),
      '{"base_url":"http://127.0.0.1:1/v1","model":"m"}',
    );
    expect(readOpenAiConfig({ HOME: join(root, 'home') })).toMatchObject({
      ok: true,
      config: { model: 'm' },
    });
    // and when it is set empty or relative (the XDG spec: ignored), as genjob's own config file is found
    for (const XDG_CONFIG_HOME of ['', 'rel/config'])
      expect(readOpenAiConfig({ HOME: join(root, 'home'), XDG_CONFIG_HOME })).toMatchObject({
        ok: true,
        config: { model: 'm' },
      });
  });

  it.each([
    {
      name: 'the environment wins over the file',
      env: {
        GENJOB_OPENAI_MODEL: 'from-env',
        GENJOB_OPENAI_API_KEY: 'genjob-key',
        OPENAI_API_KEY: 'generic',
      },
      expected: { model: 'from-env', apiKey: 'genjob-key' },
    },
    {
      name: 'the file key wins over the generic OPENAI_API_KEY',
      env: { OPENAI_API_KEY: 'generic' },
      expected: { model: 'qwen', apiKey: 'file-key' },
    },
  ])('$name', ({ env, expected }) => {
    writeConfig({ base_url: 'http://127.0.0.1:1/v1', model: 'qwen', api_key: 'file-key' });
    const result = readOpenAiConfig({ XDG_CONFIG_HOME: join(root, 'config'), ...env });
    expect(result).toMatchObject({ ok: true, config: expected });
  });

  it('uses OPENAI_API_KEY when nothing genjob-specific names a key', () => {
    const result = readOpenAiConfig({
      XDG_CONFIG_HOME: join(root, 'config'),
      GENJOB_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
      GENJOB_OPENAI_MODEL: 'm',
      OPENAI_API_KEY: 'generic',
    });
    expect(result).toMatchObject({
      ok: true,
      config: { apiKey: 'generic', maxRetries: 3, structured: 'auto' },
    });
  });

  it.each([
    { name: 'a malformed file', file: '{', env: {}, problem: /openai\.json: malformed JSON/ },
    { name: 'an unknown key in the file', file: '{"base":"x"}', env: {}, problem: /openai\.json: .*base/ },
    {
      name: 'a non-numeric retry cap',
      file: null,
      env: { GENJOB_OPENAI_MAX_RETRIES: 'lots' },
      problem: /MAX_RETRIES/,
    },
    {
      name: 'a bad structured mode',
      file: null,
      env: { GENJOB_OPENAI_STRUCTURED: 'yes' },
      problem: /on, off or auto/,
    },
    // past ~24.8 days Node's timers fire at once: every request (a batch's, say) would time out at once
    {
      name: 'a request timeout past a week',
      file: null,
      env: { GENJOB_OPENAI_TIMEOUT_MS: '3000000000' },
      problem: /GENJOB_OPENAI_TIMEOUT_MS must be a whole number from 1 to 604800000, got "3000000000"/,
    },
    {
      name: 'a request timeout past a week in the file',
      file: '{"timeout_ms":3000000000}',
      env: {},
      problem: /openai\.json: .*timeout_ms/,
    },
    {
      name: 'a non-http base URL',
      file: null,
      env: { GENJOB_OPENAI_BASE_URL: 'file:///etc' },
      problem: /http/,
    },
  ])('reports $name', ({ file, env, problem }) => {
    if (file !== null) {
      mkdirSync(join(root, 'config/genjob'), { recursive: true });
      writeFileSync(join(root, 'config/genjob/openai.json'), file);
    }
    const result = readOpenAiConfig({
      XDG_CONFIG_HOME: join(root, 'config'),
      GENJOB_OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
      GENJOB_OPENAI_MODEL: 'm',
      ...env,
    });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problem).toMatch(problem);
  });
});
