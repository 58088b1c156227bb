// How a failed schema check reads: word for word what genjob printed while its schemas were full zod
// with its English messages loaded at start-up (the strings below were taken from that build), now that
// they are zod/mini and the messages are built only for a failure.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseChecker } from '../../src/check/checker.js';
import { decodeRecord } from '../../src/check/record.js';
import { loadConfigFile } from '../../src/cli/config-file.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { buildJob } from '../../src/core/job.js';
import { parseJob } from '../../src/core/job-schema.js';
import { PLANE } from '../../src/core/plane.js';
import { decodeSignedReceipt, NO_TRUST } from '../../src/core/receipt-envelope.js';
import { checkSchema, issueText } from '../../src/core/schema-check.js';
import { readOpenAiConfig } from '../../src/remote/generators/openai-config.js';
import { parseStructuredAnswer } from '../../src/remote/generators/openai-prompt.js';
import { checkRequest, RequestSchema } from '../../src/remote/serve-requests.js';
import { parseTrust } from '../../src/trust/trust-file.js';

const A = 'a'.repeat(64);
const messageOf = (f: () => unknown): string => {
  try {
    f();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('no error');
};
type Doc = Record<string, unknown>;
// a job file's document, loosely typed: each case breaks one rule of it
const jobWith = (edit: (j: Doc & { inputs: Doc[]; constraints?: Doc }) => void) => {
  const j = JSON.parse(JSON.stringify(buildJob('do it', [{ path: 'src/a.py', sha256: A }])));
  edit(j);
  return Buffer.from(JSON.stringify(j));
};
const trustWith = (entry: Record<string, unknown>) =>
  Buffer.from(
    JSON.stringify({
      schema: 'genjob/trust@1',
      keys: [{ name: 'a', key: 'ed25519:x', added: '2026-01-01', ...entry }],
    }),
  );
const dir = mkdtempSync(join(tmpdir(), 'gj-schema-words-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const configOf = (v: unknown) => {
  const file = join(dir, 'genjob.config.json');
  writeFileSync(file, JSON.stringify(v));
  return messageOf(() => loadConfigFile(file)).replace(dir, 'D');
};
const openAiOf = (v: unknown) => {
  mkdirSync(join(dir, 'genjob'), { recursive: true });
  writeFileSync(join(dir, 'genjob', 'openai.json'), JSON.stringify(v));
  const r = readOpenAiConfig({ XDG_CONFIG_HOME: dir });
  return r.ok ? 'ok' : r.problem.replace(dir, 'D');
};

describe('a failed schema check reads as it always has', () => {
  it.each([
    [
      () =>
        parseJob(
          jobWith((j) => (j.inputs = [])),
          'J',
        ),
      'inputs: Too small: expected array to have >=1 items',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.extra = 1)),
          'J',
        ),
      '(document): Unrecognized key: "extra"',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.inputs[0]!.mode = 5)),
          'J',
        ),
      'inputs.0: Unrecognized key: "mode"',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.key = 'xyz')),
          'J',
        ),
      'key: must be 64 lower-case hex digits',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.schema = 'genjob/job@2')),
          'J',
        ),
      'schema: Invalid input: expected "genjob/job@1"',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.constraints!.max_file_bytes = 1.5)),
          'J',
        ),
      'constraints.max_file_bytes: Invalid input: expected int, received number',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.constraints!.max_file_bytes = 0)),
          'J',
        ),
      'constraints.max_file_bytes: Too small: expected number to be >0',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.instruction = 7)),
          'J',
        ),
      'instruction: Invalid input: expected string, received number',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => (j.instruction = '')),
          'J',
        ),
      'instruction: Too small: expected string to have >=1 characters',
    ],
    [
      () =>
        parseJob(
          jobWith((j) => delete j.constraints),
          'J',
        ),
      'constraints: Invalid input: expected object, received undefined',
    ],
  ])('a job file: %#', (f, rule) => {
    expect(messageOf(f)).toBe(`J: not a valid job: ${rule}`);
  });

  it.each([
    ['null', '(document): Invalid input: expected object, received null'],
    [
      JSON.stringify({ schema: 'genjob/receipt@1', key: A, status: 'weird' }),
      'job_digest: Invalid input: expected string, received undefined',
    ],
  ])('a receipt: %s', (text, rule) => {
    expect(messageOf(() => decodeSignedReceipt(canonicalBytes(JSON.parse(text)), 'R', NO_TRUST))).toBe(
      `R: receipt breaks its schema at ${rule}`,
    );
  });

  it.each([
    [{ name: 'A B' }, 'keys.0.name: names are 1-64 of [a-z0-9._-]'],
    [{ key: 'rsa:x' }, 'keys.0.key: Invalid string: must start with "ed25519:"'],
    [{ for: ['pushes'] }, 'keys.0.for.0: Invalid option: expected one of "receipts"|"checks"'],
    [{ for: [] }, 'keys.0.for: Too small: expected array to have >=1 items'],
  ])('a trust file: %j', (entry, rule) => {
    expect(messageOf(() => parseTrust(trustWith(entry), 'T'))).toBe(`T: not a valid trust file: at ${rule}`);
  });

  it.each([
    [{ concurrency: 0 }, '"concurrency": Too small: expected number to be >0'],
    [{ hosts: [] }, '"hosts": Too small: expected array to have >=1 items'],
    [{ ssh: { port: 70000 } }, '"ssh.port": Too big: expected number to be <=65535'],
    [{ ssh: { bogus: 1 } }, 'unknown key "ssh.bogus"'],
    [{ timeout: 'x' }, '"timeout": Invalid input: expected number, received string'],
    [[], '"": Invalid input: expected object, received array'],
  ])('a config file: %j', (config, rule) => {
    expect(configOf(config)).toBe(`D/genjob.config.json: ${rule}`);
  });

  it.each([
    [{ run: 'x', pin: ['../a'] }, '"checkers.t.pin.0": not a relative path inside the repository'],
    [
      { run: 'x', timeout: '5x' },
      '"checkers.t.timeout": Invalid string: must match pattern /^\\d{1,6}[smh]$/',
    ],
    [{ run: 'x', attempts: 99 }, '"checkers.t.attempts": Too big: expected number to be <=20'],
    [{ run: 'x', colour: 1 }, '"checkers.t": unknown key "colour"'],
    [
      { judge: 'builtin:openai', model: 'm', rubric: 'r.md', samples: 0 },
      '"checkers.t.samples": Too small: expected number to be >=1',
    ],
    [
      { judge: 'other', model: 'm', rubric: 'r.md' },
      '"checkers.t.judge": Invalid input: expected "builtin:openai"',
    ],
  ])('a checker: %j', (raw, rule) => {
    expect(messageOf(() => parseChecker('t', raw, 'C'))).toBe(`C: ${rule}`);
  });

  it('a check record', () => {
    expect(messageOf(() => decodeRecord(canonicalBytes({ _type: 'x' }), 'K', []))).toBe(
      'K: not a valid check record: at _type: Invalid input: expected "https://in-toto.io/Statement/v1"',
    );
  });

  it('a model answer and the host settings of builtin:openai', () => {
    expect(parseStructuredAnswer('{"files":[{"path":1,"content":"x"}]}')).toEqual({
      ok: false,
      problem: 'files.0.path: Invalid input: expected string, received number',
    });
    expect(parseStructuredAnswer('{"files":[],"more":1}')).toEqual({
      ok: false,
      problem: '(answer): Unrecognized key: "more"',
    });
    expect(openAiOf({ max_retries: -1 })).toBe(
      'D/genjob/openai.json: max_retries: Too small: expected number to be >=0',
    );
    expect(openAiOf({ structured: 'yes' })).toBe(
      'D/genjob/openai.json: structured: Invalid option: expected one of "on"|"off"|"auto"',
    );
  });

  it('a request to serve', () => {
    const request = {
      type: 'run',
      key: A,
      job_digest: A,
      epoch: 1,
      worker_id: 'w',
      generator: null,
      timeout_ms: 1,
    };
    expect(checkRequest(request)).toEqual({ ok: true, data: request });
    const issue = (v: unknown) => {
      const r = checkRequest(v);
      return r.ok ? 'ok' : r.issue.message;
    };
    expect(issue({ ...request, epoch: 0 })).toBe('Too small: expected number to be >0');
    expect(issue({ ...request, type: 'push' })).toBe('Invalid option: expected one of "run"|"fetch"');
    expect(issue({ ...request, hello: 1 })).toBe('Unrecognized key: "hello"');
    // a command no process could be started with: refused before it is recorded as started
    expect(issue({ ...request, generator: 'true\0--bind / /' })).toBe(
      'must be a command of at most 4096 characters, not blank, with no NUL',
    );
  });
});

describe('checkSchema', () => {
  it('returns the data of a passing check and the first issue of a failing one, with its code and path', () => {
    const request = {
      type: 'fetch',
      key: A,
      job_digest: A,
      epoch: 2,
      worker_id: '',
      generator: 'g',
      timeout_ms: 5,
    };
    expect(checkSchema(RequestSchema, request)).toEqual({ ok: true, data: request });
    const failed = checkSchema(RequestSchema, { ...request, plane: 'nowhere', extra: true });
    expect(failed.ok).toBe(false);
    if (failed.ok) return;
    expect(failed.issue.code).toBe('invalid_format');
    expect(issueText(failed.issue)).toBe(`plane: Invalid string: must match pattern ${PLANE}`);
    expect(issueText({ ...failed.issue, path: [] }, '(answer)')).toMatch(/^\(answer\): /);
  });
});
