// Dead letters, as an auditor reads them: the name (<base>.<ms>-<hex>), the .why.json beside the bytes
// (indented JSON, the reason plus when), the journal line naming the file; a move into dead/ that fails
// for another reason than a missing source is an error, and the source stays — one temp .gen/ per test.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IoError } from '../../src/core/errors.js';
import { deadLetterBytes, deadLetterFile } from '../../src/store/dead-letter.js';
import { readJournal } from '../../src/store/journal.js';
import { hookedStore, sysError } from '../helpers/hooked-fs.js';
import { tempStore } from '../helpers/temp-store.js';

const KEY = 'c'.repeat(64);

describe('deadLetterBytes', () => {
  it('names the letter <base>.<ms>-<6 hex>, writes an indented .why.json with the time, and journals the file', () => {
    const store = tempStore('genjob-dead-');
    const before = Date.now();
    const why = { key: KEY, code: 'EGJ_EPOCH_SUPERSEDED', reason: 'late receipt', epoch: 3 };
    const name = deadLetterBytes(store, `${KEY}.receipt.e3`, Buffer.from('raw'), why);
    const m = new RegExp(`^${KEY}\\.receipt\\.e3\\.(\\d+)-([0-9a-f]{6})$`).exec(name);
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThanOrEqual(before);
    expect(Number(m![1])).toBeLessThanOrEqual(Date.now());
    const text = readFileSync(join(store.layout.dir('dead'), `${name}.why.json`), 'utf8');
    const parsed = JSON.parse(text);
    expect(text).toBe(`${JSON.stringify(parsed, null, 2)}\n`);
    expect(parsed).toEqual({ ...why, at: parsed.at });
    expect(new Date(parsed.at).toISOString()).toBe(parsed.at);
    expect(Date.parse(parsed.at)).toBeGreaterThanOrEqual(before);
    const events = readJournal(store, KEY).filter((e) => e.event === 'dead-lettered');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ ...why, file: `dead/${name}` });
  });
});

describe('deadLetterFile', () => {
  it('fails with EGJ_IO and leaves the file where it was when the move fails for another reason than a missing file', () => {
    const store = tempStore('genjob-dead-');
    const from = store.layout.jobFile('queue', KEY);
    writeFileSync(from, '{"bad":');
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === from) throw sysError('EXDEV', -18, 'rename');
      return proceed();
    });
    let err: Error | undefined;
    try {
      deadLetterFile(failing, from, `${KEY}.job`, { key: KEY, code: 'EGJ_JOB_INVALID', reason: 'bad' });
    } catch (e) {
      err = e as Error;
    }
    expect(err).toBeInstanceOf(IoError);
    expect(err?.message).toMatch(
      new RegExp(
        `^${from} → ${store.layout.dir('dead')}/${KEY}\\.job\\.\\d+-[0-9a-f]{6}: rename failed: .*\\(EXDEV\\)`,
      ),
    );
    expect(existsSync(from)).toBe(true);
    expect(readdirSync(store.layout.dir('dead'))).toEqual([]);
    expect(readJournal(store, KEY).filter((e) => e.event === 'dead-lettered')).toEqual([]);
  });

  it('writes the .why.json and the journal line for a moved file, naming it', () => {
    const store = tempStore('genjob-dead-');
    const from = store.layout.jobFile('queue', KEY);
    writeFileSync(from, '{"bad":');
    const name = deadLetterFile(store, from, `${KEY}.job`, {
      key: KEY,
      code: 'EGJ_JOB_INVALID',
      reason: 'bad',
    });
    expect(readdirSync(store.layout.dir('dead')).sort()).toEqual([name, `${name}.why.json`]);
    expect(
      JSON.parse(readFileSync(join(store.layout.dir('dead'), `${name}.why.json`), 'utf8')),
    ).toMatchObject({
      key: KEY,
      code: 'EGJ_JOB_INVALID',
      reason: 'bad',
    });
    expect(readJournal(store, KEY).filter((e) => e.event === 'dead-lettered')).toEqual([
      expect.objectContaining({ key: KEY, code: 'EGJ_JOB_INVALID', reason: 'bad', file: `dead/${name}` }),
    ]);
  });

  it('publishes the reason before it moves the item, so an item in dead/ never lacks its reason', () => {
    const store = tempStore('genjob-dead-');
    const from = store.layout.jobFile('queue', KEY);
    writeFileSync(from, '{}');
    const calls: string[] = [];
    const recording = hookedStore(store, (call, args, proceed) => {
      if (call === 'linkSync' || call === 'renameSync') calls.push(`${call} ${String(args[1])}`);
      return proceed();
    });
    const name = deadLetterFile(recording, from, `${KEY}.job`, {
      key: KEY,
      code: 'EGJ_CANCELLED',
      reason: 'r',
    });
    const dead = store.layout.dir('dead');
    expect(calls).toEqual([`linkSync ${dead}/${name}.why.json`, `renameSync ${dead}/${name}`]);
  });

  it('keeps item and reason when the move fails after its rename (a directory fsync): EGJ_IO, nothing lost', () => {
    const store = tempStore('genjob-dead-');
    const from = store.layout.jobFile('queue', KEY);
    writeFileSync(from, '{}');
    let moved = false;
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'renameSync' && args[0] === from) moved = true;
      else if (call === 'fsyncSync' && moved) throw sysError('EIO', -5, 'fsync');
      return proceed();
    });
    expect(() =>
      deadLetterFile(failing, from, `${KEY}.job`, { key: KEY, code: 'EGJ_CANCELLED', reason: 'r' }),
    ).toThrow(/fsync failed: .*\(EIO\)/);
    const names = readdirSync(store.layout.dir('dead')).sort();
    expect(names).toHaveLength(2);
    expect(names[1]).toBe(`${names[0]}.why.json`);
    expect(existsSync(from)).toBe(false);
  });
});

describe('deadLetterBytes when the item cannot be written', () => {
  it('fails with EGJ_IO and leaves no reason without its item', () => {
    const store = tempStore('genjob-dead-');
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'linkSync' && !String(args[1]).endsWith('.why.json'))
        throw sysError('ENOSPC', -28, 'link');
      return proceed();
    });
    expect(() =>
      deadLetterBytes(failing, `${KEY}.receipt.e1`, Buffer.from('raw'), { key: KEY, code: 'X', reason: 'r' }),
    ).toThrow(/link failed: .*\(ENOSPC\)/);
    expect(readdirSync(store.layout.dir('dead'))).toEqual([]);
    expect(readJournal(store, KEY).filter((e) => e.event === 'dead-lettered')).toEqual([]);
  });
});

describe('a dead letter whose reason cannot be published', () => {
  it('leaves no reason behind when the directory fsync of the reason fails: run again, dead/ holds one item and one reason', () => {
    const store = tempStore('genjob-dead-');
    const from = store.layout.jobFile('queue', KEY);
    writeFileSync(from, '{}');
    let linked = false;
    let failed = false;
    const failing = hookedStore(store, (call, args, proceed) => {
      if (call === 'linkSync' && String(args[1]).endsWith('.why.json')) linked = true;
      else if (call === 'fsyncSync' && linked && !failed) {
        failed = true;
        throw sysError('EIO', -5, 'fsync');
      }
      return proceed();
    });
    const why = { key: KEY, code: 'EGJ_CANCELLED', reason: 'r' };
    expect(() => deadLetterFile(failing, from, `${KEY}.job`, why)).toThrow(/fsync failed: .*\(EIO\)/);
    expect(readdirSync(store.layout.dir('dead'))).toEqual([]);
    expect(existsSync(from)).toBe(true);
    const name = deadLetterFile(store, from, `${KEY}.job`, why);
    expect(readdirSync(store.layout.dir('dead')).sort()).toEqual([name, `${name}.why.json`]);
  });
});
