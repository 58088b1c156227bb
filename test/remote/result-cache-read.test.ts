// Reading a host cache entry: a disk that fails while the entry is read is EGJ_IO naming the file, and
// the entry stays where it is (a paid-for result is never set aside for a transient error); only an
// entry whose files are not what serve made (a MAC that does not match, a symlink planted) is
// quarantined. The fault is real: strace fails the reads of one file of the entry (-P) with EIO.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeEach, describe, expect, it } from 'vitest';
import { bundleChild } from '../helpers/bundle-child.js';
import { failingOn } from '../helpers/strace-fault.js';
import { tempDir } from '../helpers/temp-store.js';

const run = promisify(execFile);
const NAME = `${'a'.repeat(64)}.0123456789abcdef`;

const CHILD = `
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { ResultCache } from '../../src/remote/result-cache.js';
const [how, dir] = process.argv.slice(2);
const cache = new ResultCache(dir);
const name = ${JSON.stringify(NAME)};
cache.init().then(async () => {
if (how === 'store') {
  const built = await cache.tmpDir();
  mkdirSync(join(built, 'files'));
  writeFileSync(join(built, 'files', 'a.txt'), 'hello\\n');
  const sha256 = createHash('sha256').update('hello\\n').digest('hex');
  const result = { job_digest: 'd', status: 'ok', reason: null, outputs: [{ path: 'a.txt', sha256, bytes: 6 }],
    generator: { command: 'g', version: null }, timings: { started_at: '', finished_at: '', generate_ms: 0 } };
  writeFileSync(join(built, 'result.json'), JSON.stringify(result));
  await cache.commit(name, built);
  process.stdout.write('stored');
} else {
  cache.read(name).then(
    (r) => process.stdout.write(r === undefined ? 'none' : 'read ' + r.outputs[0].path),
    (err) => process.stdout.write('error ' + err.code + ' ' + err.message),
  );
}
});
`;

let dir: string;
let child: string;
let entry: string;
beforeEach(async () => {
  const base = tempDir('genjob-cache-read-');
  child = await bundleChild(CHILD, import.meta.dirname, base);
  dir = join(base, 'cache');
  mkdirSync(dir);
  expect((await run(process.execPath, [child, 'store', dir])).stdout).toBe('stored');
  entry = join(dir, 'results', NAME);
});

/** Read the entry in a child; with `failing`, every read of that file fails with EIO. */
async function readEntry(failing?: string): Promise<string> {
  const trace = failing ? ['strace', ...failingOn(failing, 'read', 'EIO', [])] : [];
  const [file, ...args] = [...trace, process.execPath, child, 'read', dir];
  return (await run(file!, args)).stdout;
}

const quarantined = () => readdirSync(join(dir, 'quarantine'));

describe('reading a host cache entry', () => {
  it('serves an intact entry', async () => {
    expect(await readEntry()).toBe('read a.txt');
  });

  for (const file of ['result.json', 'mac', 'files/a.txt']) {
    it(`a disk error reading its ${file} is EGJ_IO naming the file, and the entry stays`, async () => {
      expect(await readEntry(join(entry, file))).toBe(
        `error EGJ_IO ${join(entry, file)}: read failed: i/o error (EIO)`,
      );
      expect(quarantined()).toEqual([]);
      expect(await readEntry()).toBe('read a.txt');
    });
  }

  it('an entry whose output was swapped for a symlink is quarantined, not served', async () => {
    const out = join(entry, 'files', 'a.txt');
    unlinkSync(out);
    writeFileSync(join(dir, 'elsewhere'), 'hello\n');
    symlinkSync(join(dir, 'elsewhere'), out);
    expect(await readEntry()).toBe('none');
    expect(quarantined()).toHaveLength(1);
    expect(existsSync(entry)).toBe(false);
  });
});
