// push's record of what it built (.gen/git-built.json) is a cache in .gen/, which a branch may commit:
// it is read as a record (a regular file, never through a link or from a FIFO), and anything else reads
// as no record, so push reads every receipt.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBuilt } from '../../src/git/built-record.js';
import { tempDir, tempStore } from '../helpers/temp-store.js';

const ENTRY = { oid: 'a'.repeat(40), receiptSha256: 'b'.repeat(64), stat: [1, 2, 3, 4] };
const RECORD = JSON.stringify({ ['c'.repeat(64)]: ENTRY });

describe('loadBuilt', () => {
  it('reads the entries of a regular record file', () => {
    const store = tempStore('genjob-built-');
    writeFileSync(join(store.layout.gen, 'git-built.json'), RECORD);
    expect([...loadBuilt(store).entries.values()]).toEqual([ENTRY]);
  });

  it('reads none through a link (to a good record) or from a directory', () => {
    const store = tempStore('genjob-built-');
    const elsewhere = join(tempDir('genjob-built-'), 'record.json');
    writeFileSync(elsewhere, RECORD);
    symlinkSync(elsewhere, join(store.layout.gen, 'git-built.json'));
    expect(loadBuilt(store).entries.size).toBe(0);
    const other = tempStore('genjob-built-');
    mkdirSync(join(other.layout.gen, 'git-built.json'));
    expect(loadBuilt(other).entries.size).toBe(0);
  });
});
