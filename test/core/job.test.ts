import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { UsageError } from '../../src/core/errors.js';
import {
  allowedPaths,
  buildJob,
  contractProblem,
  DEFAULT_CONSTRAINTS,
  instructionProblem,
  JOB_SCHEMA,
  JobInvalidError,
  jobDigest,
  MAX_INPUTS,
  MAX_INSTRUCTION_BYTES,
  shippedFiles,
  workOrderKey,
} from '../../src/core/job.js';
import { parseJob } from '../../src/core/job-schema.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

describe('job identity', () => {
  it('gives the same key and digest to the same work order whatever the input order', () => {
    const one = buildJob('do it', [
      { path: 'src/b.py', sha256: B },
      { path: 'src/a.py', sha256: A },
    ]);
    const two = buildJob('do it', [
      { path: 'src/a.py', sha256: A },
      { path: 'src/b.py', sha256: B },
    ]);
    expect(one.key).toBe(two.key);
    expect(jobDigest(one)).toBe(jobDigest(two));
    expect(one.inputs.map((i) => i.path)).toEqual(['src/a.py', 'src/b.py']);
  });

  it.each([
    {
      change: 'one byte of the instruction',
      instruction: 'do it!',
      inputs: [{ path: 'src/a.py', sha256: A }],
    },
    { change: 'the digest of an input', instruction: 'do it', inputs: [{ path: 'src/a.py', sha256: B }] },
    {
      change: 'an input that must be created',
      instruction: 'do it',
      inputs: [{ path: 'src/a.py', sha256: null }],
    },
    { change: 'the path of an input', instruction: 'do it', inputs: [{ path: 'src/A.py', sha256: A }] },
  ])('changes the key when $change changes', ({ instruction, inputs }) => {
    const base = buildJob('do it', [{ path: 'src/a.py', sha256: A }]);
    expect(buildJob(instruction, inputs).key).not.toBe(base.key);
  });

  it('keys a work order whose path is __proto__ without touching any prototype', () => {
    const key = workOrderKey('x', [{ path: '__proto__', sha256: A }]);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(key).not.toBe(workOrderKey('x', []));
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('round-trips through its canonical file bytes with the same digest', () => {
    const job = buildJob('do it', [{ path: 'src/a.py', sha256: A }]);
    const parsed = parseJob(Buffer.from(canonicalJson(job)), 'job.json');
    expect(parsed.digest).toBe(jobDigest(job));
  });
});

describe('parseJob', () => {
  const good = buildJob('do it', [{ path: 'src/a.py', sha256: A }]);
  const mutate = (f: (j: Record<string, unknown>) => void) => {
    const doc = JSON.parse(JSON.stringify(good));
    f(doc);
    return Buffer.from(JSON.stringify(doc));
  };
  it.each([
    { name: 'malformed JSON', bytes: Buffer.from('{"schema":'), rule: /malformed JSON/ },
    { name: 'an unknown schema', bytes: mutate((j) => (j.schema = 'genjob/job@9')), rule: /schema/ },
    { name: 'an extra field', bytes: mutate((j) => (j.extra = 1)), rule: /Unrecognized key/ },
    {
      name: 'a key that is not its work order',
      bytes: mutate((j) => (j.key = B)),
      rule: /key is not the sha256/,
    },
    {
      name: 'a path with ..',
      bytes: mutate((j) => ((j.inputs as Array<{ path: string }>)[0]!.path = '../x')),
      rule: /'\.\.' component/,
    },
    {
      name: 'an absolute path',
      bytes: mutate((j) => ((j.inputs as Array<{ path: string }>)[0]!.path = '/etc/passwd')),
      rule: /absolute/,
    },
    {
      name: 'an upper-case digest',
      bytes: mutate((j) => ((j.inputs as Array<{ sha256: string }>)[0]!.sha256 = A.toUpperCase())),
      rule: /hex/,
    },
  ])('refuses $name, naming the file and the rule', ({ bytes, rule }) => {
    expect(() => parseJob(bytes, 'queue/x.json')).toThrow(JobInvalidError);
    expect(() => parseJob(bytes, 'queue/x.json')).toThrow(rule);
    expect(() => parseJob(bytes, 'queue/x.json')).toThrow(/^queue\/x\.json: /);
  });
});

describe('contract paths of a job', () => {
  it.each([
    { name: 'case twins', paths: ['src/A.py', 'src/a.py'], rule: /differ only in case/ },
    { name: 'NFC/NFD twins', paths: ['caf\u00e9', 'cafe\u0301'], rule: /differ only in case or Unicode/ },
    {
      name: 'a file that is also a directory',
      paths: ['src', 'src/a.py'],
      rule: /both a file and the directory/,
    },
    { name: 'a path inside .git', paths: ['.git/config'], rule: /inside \.git/ },
    { name: 'a path inside .gen', paths: ['.gen/queue/x.json'], rule: /inside \.gen/ },
  ])('refuses $name', ({ paths, rule }) => {
    expect(() =>
      buildJob(
        'x',
        paths.map((path) => ({ path, sha256: A })),
      ),
    ).toThrow(rule);
  });
});

const sha256Of = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The UsageError buildJob throws, as "<code> <message>". */
function refusal(instruction: string, paths: string[]): string {
  try {
    buildJob(
      instruction,
      paths.map((path) => ({ path, sha256: A })),
    );
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    return `${(err as UsageError).code} ${(err as UsageError).message}`;
  }
  throw new Error('expected buildJob to refuse');
}

describe('the job document, byte for byte', () => {
  it('keys a work order by the sha256 of canonical {instruction, inputs: {path: sha256|null}}', () => {
    const inputs = [
      { path: 'b', sha256: null },
      { path: 'a', sha256: A },
    ];
    expect(workOrderKey('do it', inputs)).toBe(
      sha256Of(`{"inputs":{"a":"${A}","b":null},"instruction":"do it"}`),
    );
  });

  it('writes schema, key, instruction, sorted inputs and the default limits (64 MiB a file, 512 MiB in all)', () => {
    const job = buildJob('do it', [
      { path: 'src/c.py', sha256: null },
      { path: 'src/a.py', sha256: A },
      { path: 'src/b.py', sha256: B },
    ]);
    expect(job).toEqual({
      schema: 'genjob/job@1',
      key: workOrderKey('do it', job.inputs),
      instruction: 'do it',
      inputs: [
        { path: 'src/a.py', sha256: A },
        { path: 'src/b.py', sha256: B },
        { path: 'src/c.py', sha256: null },
      ],
      constraints: { max_file_bytes: 67_108_864, max_total_bytes: 536_870_912 },
    });
    expect(JOB_SCHEMA).toBe('genjob/job@1');
    expect(DEFAULT_CONSTRAINTS).toEqual({ max_file_bytes: 67_108_864, max_total_bytes: 536_870_912 });
    expect(jobDigest(job)).toBe(sha256Of(canonicalJson(job)));
  });

  it('caps an instruction at what a generator can be given in its environment, and a job at 10 000 inputs', () => {
    expect(MAX_INSTRUCTION_BYTES).toBe(131_052);
    expect(MAX_INPUTS).toBe(10_000);
  });

  it('the cap is what Linux starts a program with: an instruction of the cap reaches one, one byte more cannot', () => {
    const start = (instruction: string) =>
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, never a template
      spawnSync('sh', ['-c', 'printf %s "${#GENJOB_INSTRUCTION}"'], {
        env: { PATH: process.env.PATH, GENJOB_INSTRUCTION: instruction },
      });
    const at = start('x'.repeat(MAX_INSTRUCTION_BYTES));
    expect(at.stdout.toString()).toBe(String(MAX_INSTRUCTION_BYTES));
    expect((start('x'.repeat(MAX_INSTRUCTION_BYTES + 1)).error as NodeJS.ErrnoException).code).toBe('E2BIG');
  });

  it('counts an instruction in bytes of UTF-8: fewer characters than the cap can be too many bytes', () => {
    expect(instructionProblem('x'.repeat(MAX_INSTRUCTION_BYTES))).toBeNull();
    expect(instructionProblem('é'.repeat(MAX_INSTRUCTION_BYTES / 2))).toBeNull(); // 2 bytes each: the cap
    expect(instructionProblem(`${'é'.repeat(MAX_INSTRUCTION_BYTES / 2)}x`)).toBe(
      'the instruction is 131,053 bytes of UTF-8, more than the 131,052 a generator can be given (it gets the instruction in its environment, as GENJOB_INSTRUCTION): put the long part in a file and pass it with --read FILE',
    );
    expect(instructionProblem('')).toBe('the instruction is empty');
    expect(instructionProblem('f\0i\0x\0')).toBe(
      "the instruction holds a NUL character (character 2), which a generator's environment cannot carry: save it as UTF-8 text",
    );
    expect(() => buildJob('€'.repeat(43_685), [{ path: 'a.txt', sha256: A }])).toThrow(
      expect.objectContaining({ code: 'EGJ_BAD_INPUT', message: expect.stringMatching(/131,055 bytes/) }),
    );
  });

  it('builds no job with more allowed paths or read files than a job file may hold', () => {
    const paths = (n: number, dir: string) =>
      Array.from({ length: n }, (_, i) => ({ path: `${dir}/f${String(i).padStart(5, '0')}`, sha256: A }));
    expect(buildJob('x', paths(MAX_INPUTS, 'a')).inputs).toHaveLength(MAX_INPUTS);
    expect(() => buildJob('x', paths(MAX_INPUTS + 1, 'a'))).toThrow(
      expect.objectContaining({
        code: 'EGJ_BAD_INPUT',
        message:
          '10,001 allowed paths, more than the 10,000 a job may have: split the work into several jobs (mint --each makes one per file)',
      }),
    );
    expect(() => buildJob('x', paths(1, 'a'), undefined, paths(MAX_INPUTS + 1, 'r'))).toThrow(
      /^10,001 read files, more than the 10,000/,
    );
  });

  it('tamper: a job file (from a branch, a pull, an older genjob) whose instruction no generator could be given is not a valid job', () => {
    const job = buildJob('x', [{ path: 'a.txt', sha256: A }]);
    for (const instruction of ['é'.repeat(MAX_INSTRUCTION_BYTES / 2 + 1), 'fix\0it']) {
      const bad = { ...job, instruction, key: workOrderKey(instruction, job.inputs) };
      expect(() => parseJob(Buffer.from(JSON.stringify(bad)), 'queue/bad.json')).toThrow(
        /queue\/bad\.json: .*instruction: must be at most 131052 bytes of UTF-8 with no NUL/,
      );
    }
  });

  it('sorts inputs by path in code-unit order whatever order they come in', () => {
    const paths = ['c/z', 'Z', 'a', 'c/a', 'a.txt', 'b'].map((p) => `x/${p}`);
    for (const order of [
      paths,
      [...paths].reverse(),
      [paths[3]!, paths[0]!, paths[5]!, paths[1]!, paths[4]!, paths[2]!],
    ]) {
      const job = buildJob(
        'x',
        order.map((path) => ({ path, sha256: A })),
      );
      expect(job.inputs.map((i) => i.path)).toEqual(['x/Z', 'x/a', 'x/a.txt', 'x/b', 'x/c/a', 'x/c/z']);
    }
  });

  it('copies the constraints it is given, so changing them later cannot change the job', () => {
    const limits = { max_file_bytes: 10, max_total_bytes: 20 };
    const job = buildJob('x', [{ path: 'a', sha256: A }], limits);
    limits.max_file_bytes = 99;
    expect(job.constraints).toEqual({ max_file_bytes: 10, max_total_bytes: 20 });
  });

  it('allows exactly the paths of its inputs', () => {
    const job = buildJob('x', [
      { path: 'b', sha256: A },
      { path: 'a', sha256: null },
    ]);
    expect(allowedPaths(job)).toEqual(new Set(['a', 'b']));
  });
});

describe('why a contract is refused, in words', () => {
  it('names the path and the path rule it breaks', () => {
    expect(refusal('x', ['ok', '../x'])).toBe(`EGJ_BAD_PATH "../x": path has a '..' component`);
  });

  it('names a path given twice', () => {
    expect(refusal('x', ['a', 'src/a.py', 'src/a.py'])).toBe(
      'EGJ_BAD_PATH inputs are not sorted by path or repeat "src/a.py"',
    );
  });

  it('names a parsed contract whose inputs are out of order (a job file is never re-sorted)', () => {
    expect(
      contractProblem({
        inputs: [
          { path: 'b', sha256: A },
          { path: 'a', sha256: A },
        ],
      }),
    ).toBe('inputs are not sorted by path or repeat "a"');
    expect(
      contractProblem({
        inputs: [
          { path: 'a', sha256: A },
          { path: 'b', sha256: A },
        ],
      }),
    ).toBeNull();
    expect(contractProblem({ inputs: [] })).toBeNull();
  });

  it('names both twins that differ only in case or Unicode form', () => {
    expect(refusal('x', ['src/a.py', 'src/A.py'])).toBe(
      'EGJ_BAD_PATH "src/a.py" and "src/A.py" differ only in case or Unicode form',
    );
    expect(refusal('x', ['b/x', 'a', 'B/x'])).toBe(
      'EGJ_BAD_PATH "b/x" and "B/x" differ only in case or Unicode form',
    );
  });

  it('names the file that is also a directory, however deep', () => {
    expect(refusal('x', ['src', 'src/a.py'])).toBe(
      'EGJ_BAD_PATH "src" is both a file and the directory of "src/a.py"',
    );
    expect(refusal('x', ['z', 'a/b', 'a/b/c/d'])).toBe(
      'EGJ_BAD_PATH "a/b" is both a file and the directory of "a/b/c/d"',
    );
  });

  it('accepts siblings that only share a prefix', () => {
    expect(() =>
      buildJob(
        'x',
        ['a', 'a.b', 'ab/c', 'a-b/c'].map((path) => ({ path, sha256: A })),
      ),
    ).not.toThrow();
  });
});

describe('files read for context (--read)', () => {
  const C = 'c'.repeat(64);

  it('joins the key as a third map only when there are reads; a job without them keeps its old key and document', () => {
    const inputs = [{ path: 'a', sha256: A }];
    expect(workOrderKey('do it', inputs, [])).toBe(workOrderKey('do it', inputs));
    expect(workOrderKey('do it', inputs, [{ path: 'types.py', sha256: C }])).toBe(
      sha256Of(`{"inputs":{"a":"${A}"},"instruction":"do it","reads":{"types.py":"${C}"}}`),
    );
    const plain = buildJob('do it', inputs);
    expect('reads' in plain).toBe(false);
    expect(buildJob('do it', inputs, DEFAULT_CONSTRAINTS, [])).toEqual(plain);
  });

  it('changes the key when a read file changes, and sorts the reads by path', () => {
    const one = buildJob('x', [{ path: 'a', sha256: A }], DEFAULT_CONSTRAINTS, [
      { path: 'z.py', sha256: B },
      { path: 'm.py', sha256: C },
    ]);
    expect(one.reads).toEqual([
      { path: 'm.py', sha256: C },
      { path: 'z.py', sha256: B },
    ]);
    const two = buildJob('x', [{ path: 'a', sha256: A }], DEFAULT_CONSTRAINTS, [
      { path: 'z.py', sha256: A },
      { path: 'm.py', sha256: C },
    ]);
    expect(two.key).not.toBe(one.key);
    expect(parseJob(Buffer.from(canonicalJson(one)), 'job.json')).toEqual({
      job: one,
      digest: jobDigest(one),
    });
  });

  it('never allows a read file: the generator may change only the inputs', () => {
    const job = buildJob('x', [{ path: 'a', sha256: A }], DEFAULT_CONSTRAINTS, [{ path: 'r', sha256: B }]);
    expect(allowedPaths(job)).toEqual(new Set(['a']));
    expect(shippedFiles(job)).toEqual([
      { path: 'a', sha256: A },
      { path: 'r', sha256: B },
    ]);
    expect(shippedFiles(buildJob('x', [{ path: 'n', sha256: null }]))).toEqual([]);
  });

  it.each([
    {
      name: 'a read that is also allowed',
      reads: ['a'],
      rule: '"a" is both read and allowed; a file the generator may change is shipped anyway',
    },
    {
      name: 'a read twin of an input',
      reads: ['A'],
      rule: '"A" and "a" differ only in case or Unicode form',
    },
    {
      name: 'a read that is the directory of an input',
      reads: ['d'],
      rule: '"d" is both a file and the directory of "d/x"',
    },
    { name: 'a bad read path', reads: ['../x'], rule: `"../x": path has a '..' component` },
    { name: 'a read given twice', reads: ['r', 'r'], rule: 'reads are not sorted by path or repeat "r"' },
  ])('refuses $name', ({ reads, rule }) => {
    const inputs = [
      { path: 'a', sha256: A },
      { path: 'd/x', sha256: A },
    ];
    expect(contractProblem({ inputs, reads: reads.map((path) => ({ path, sha256: B })) })).toBe(rule);
  });

  it.each([
    { name: 'an empty reads list', patch: { reads: [] }, rule: /reads/ },
    { name: 'a read without a digest', patch: { reads: [{ path: 'r', sha256: null }] }, rule: /reads/ },
    {
      name: 'reads out of order',
      patch: {
        reads: [
          { path: 's', sha256: B },
          { path: 'r', sha256: B },
        ],
      },
      rule: /reads are not sorted/,
    },
  ])('parseJob refuses $name', ({ patch, rule }) => {
    const job = { ...buildJob('x', [{ path: 'a', sha256: A }]), ...patch };
    expect(() => parseJob(Buffer.from(JSON.stringify(job)), 'job.json')).toThrow(rule);
  });

  it('parseJob refuses reads the key was not made with (forged: a read added after mint)', () => {
    const job = { ...buildJob('x', [{ path: 'a', sha256: A }]), reads: [{ path: 'r', sha256: B }] };
    expect(() => parseJob(Buffer.from(JSON.stringify(job)), 'job.json')).toThrow(/key is not the sha256/);
  });
});
