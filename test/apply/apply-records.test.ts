// The apply records a crash is finished from: what readApplying/readApplied accept, and the exact
// EGJ_RECORD_INVALID message a user sees for each way a record in .gen/ can be damaged.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyJob } from '../../src/apply/apply-job.js';
import { readApplied, readApplying } from '../../src/apply/apply-records.js';
import { UsageError } from '../../src/core/errors.js';
import { buildJob, jobDigest } from '../../src/core/job.js';
import { thrown } from '../helpers/thrown.js';
import { makeFixture, removeTempDirs } from './fixture.js';

afterEach(removeTempDirs);

async function appliedFixture() {
  const f = makeFixture({
    files: { 'src/a.ts': 'a = 1\n' },
    inputs: ['src/a.ts', 'src/b.ts'],
    outputs: { 'src/a.ts': 'a = 2\n', 'src/b.ts': 'b\n' },
  });
  await applyJob(f.v, {});
  const file = f.v.store.layout.jobFile('applied', f.v.job.key);
  const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  return { f, file, record, key: f.v.job.key };
}

function invalidOf(read: () => unknown): UsageError {
  const err = thrown<UsageError>(read);
  expect(err).toBeInstanceOf(UsageError);
  expect(err.code).toBe('EGJ_RECORD_INVALID');
  expect(err.exitCode).toBe(2);
  return err;
}

describe('readApplied and readApplying', () => {
  it('read nothing when the key has no record', async () => {
    const { f, key } = await appliedFixture();
    expect(readApplying(f.v.store, key)).toBeUndefined();
    expect(readApplied(f.v.store, 'f'.repeat(64))).toBeUndefined();
  });

  it('read back the applied record exactly as it is on disk', async () => {
    const { f, record, key } = await appliedFixture();
    expect(readApplied(f.v.store, key)).toEqual(record);
  });

  it('read an applying record from applying/<key>.json, and only one of its own schema', async () => {
    const { f, record, key } = await appliedFixture();
    const { applied_at: _, ...rest } = record;
    const applyingFile = f.v.store.layout.applying(key);
    mkdirSync(dirname(applyingFile), { recursive: true });
    writeFileSync(applyingFile, JSON.stringify({ ...rest, schema: 'genjob/applying@1' }));
    expect(readApplying(f.v.store, key)).toEqual({ ...rest, schema: 'genjob/applying@1' });
    // an applied record where the write-ahead intent belongs is refused, naming the field
    writeFileSync(applyingFile, JSON.stringify(record));
    expect(invalidOf(() => readApplying(f.v.store, key)).message).toMatch(
      new RegExp(`^${applyingFile}: not a valid apply record: schema: .*genjob/applying@1`),
    );
  });

  it('refuses a record that is not JSON, quoting the parser', async () => {
    const { f, file, key } = await appliedFixture();
    writeFileSync(file, '{"schema": ');
    const message = invalidOf(() => readApplied(f.v.store, key)).message;
    expect(message).toMatch(new RegExp(`^${file}: not a valid apply record: malformed JSON \\(.+\\)$`));
    expect(message).toContain(`(${thrown(() => JSON.parse('{"schema": ')).message})`);
  });

  it('refuses a record that is not an object, naming the whole document', async () => {
    const { f, file, key } = await appliedFixture();
    writeFileSync(file, '[]');
    expect(invalidOf(() => readApplied(f.v.store, key)).message).toMatch(
      new RegExp(`^${file}: not a valid apply record: \\(document\\): `),
    );
  });

  it('names the dotted path of a bad field deep in the record', async () => {
    const { f, file, record, key } = await appliedFixture();
    const writes = record.writes as Array<Record<string, unknown>>;
    writes[1]!.mode = 0o1000;
    writeFileSync(file, JSON.stringify(record));
    expect(invalidOf(() => readApplied(f.v.store, key)).message).toMatch(
      new RegExp(`^${file}: not a valid apply record: writes\\.1\\.mode: `),
    );
  });

  it.each([
    { name: 'the record names another key', field: 'key' },
    { name: 'its embedded job has another key', field: 'job' },
  ])('refuses a record filed under a key it is not of: $name', async ({ field }) => {
    const { f, file, record, key } = await appliedFixture();
    const other = buildJob('another job', [{ path: 'x.ts', sha256: null }]);
    if (field === 'key') record.key = other.key;
    else Object.assign(record, { job: other, job_digest: jobDigest(other) });
    writeFileSync(file, JSON.stringify(record));
    expect(invalidOf(() => readApplied(f.v.store, key)).message).toBe(
      `${file}: not a valid apply record: it is not the record of key ${key}`,
    );
  });

  it('refuses a record whose job_digest is not the digest of the job it embeds', async () => {
    const { f, file, record, key } = await appliedFixture();
    record.job_digest = 'e'.repeat(64);
    writeFileSync(file, JSON.stringify(record));
    expect(invalidOf(() => readApplied(f.v.store, key)).message).toBe(
      `${file}: not a valid apply record: job_digest is not the digest of its job`,
    );
  });

  it('refuses a write outside the contract paths, so revert or recovery never touches it', async () => {
    const { f, file, record, key } = await appliedFixture();
    const writes = record.writes as Array<Record<string, unknown>>;
    writes[1]!.path = '../outside.ts';
    writeFileSync(file, JSON.stringify(record));
    expect(invalidOf(() => readApplied(f.v.store, key)).message).toBe(
      `${file}: not a valid apply record: write "../outside.ts": path has a '..' component`,
    );
  });

  it('reads created_dirs only of directories of the files the job creates, each once: revert removes them', async () => {
    const { f, file, record, key } = await appliedFixture(); // src/a.ts replaced, src/b.ts created
    writeFileSync(file, JSON.stringify({ ...record, created_dirs: ['src'] }));
    expect(readApplied(f.v.store, key)?.created_dirs).toEqual(['src']);
    for (const [dirs, why] of [
      [['elsewhere'], 'created directory "elsewhere": not a directory of a file its job creates'],
      [['..'], 'created directory "..": not a directory of a file its job creates'],
      [['src', 'src'], 'created directory "src": listed twice'],
    ] as const) {
      writeFileSync(file, JSON.stringify({ ...record, created_dirs: dirs }));
      expect(invalidOf(() => readApplied(f.v.store, key)).message).toBe(
        `${file}: not a valid apply record: ${why}`,
      );
    }
  });

  it("refuses a record whose job's key is not the sha256 of its work order (another job under this key)", async () => {
    const { f, file, record, key } = await appliedFixture();
    const job = { ...(record.job as Record<string, unknown>), instruction: 'another instruction' };
    Object.assign(record, { job, job_digest: jobDigest(job as never) });
    writeFileSync(file, JSON.stringify(record));
    expect(invalidOf(() => readApplied(f.v.store, key)).message).toBe(
      `${file}: not a valid apply record: its job's key is not the sha256 of its work order`,
    );
  });

  it.each([
    {
      name: 'a path its job does not name',
      edit: (w: Array<Record<string, unknown>>) => {
        w[1]!.path = 'src/c.ts';
      },
      rule: `write "src/c.ts": not one of its job's allowed paths`,
    },
    {
      name: 'a path twice',
      edit: (w: Array<Record<string, unknown>>) => {
        w.push({ ...w[0]! });
      },
      rule: `write "src/a.ts": listed twice`,
    },
    {
      name: 'a before other than the minted digest',
      edit: (w: Array<Record<string, unknown>>) => {
        w[0]!.before = 'e'.repeat(64);
      },
      rule: `write "src/a.ts": "before" is not the digest its job was minted with`,
    },
    {
      name: 'a before for a file the job creates',
      edit: (w: Array<Record<string, unknown>>) => {
        w[1]!.before = 'e'.repeat(64);
      },
      rule: `write "src/b.ts": "before" is not the digest its job was minted with`,
    },
    {
      name: 'no before for a file the job replaces',
      edit: (w: Array<Record<string, unknown>>) => {
        w[0]!.before = null;
      },
      rule: `write "src/a.ts": "before" is not the digest its job was minted with`,
    },
    {
      name: 'a before_mode with a bit the apply did not add',
      edit: (w: Array<Record<string, unknown>>) => {
        Object.assign(w[0]!, { mode: 0o755, before_mode: 0o775 }); // group write: not the apply's
      },
      rule: `write "src/a.ts": "before_mode" differs from "mode" in more than the executable bits`,
    },
  ])('refuses a write no apply of its job makes: $name', async ({ edit, rule }) => {
    const { f, file, record, key } = await appliedFixture();
    edit(record.writes as Array<Record<string, unknown>>);
    writeFileSync(file, JSON.stringify(record));
    expect(invalidOf(() => readApplied(f.v.store, key)).message).toBe(
      `${file}: not a valid apply record: ${rule}`,
    );
  });

  it('reads a write whose before_mode is its mode without the executable bits (an output made executable)', async () => {
    const { f, file, record, key } = await appliedFixture();
    Object.assign((record.writes as Array<Record<string, unknown>>)[0]!, { mode: 0o755, before_mode: 0o644 });
    writeFileSync(file, JSON.stringify(record));
    expect(readApplied(f.v.store, key)).toEqual(record);
  });
});
