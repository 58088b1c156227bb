import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { buildJob, JobInvalidError, jobDigest, workOrderKey } from '../../src/core/job.js';
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
