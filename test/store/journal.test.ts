// The journal's files: one segment per writing process under .gen/journal.d/, read back merged in `at`
// order with the older files (journal.jsonl of 0.1, gc's journal.1.jsonl and its leftovers), a key's
// events found by a byte search, and gc folding every segment into the rotated file.
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RecordUnreadableError } from '../../src/core/errors.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { type FsPort, nodeFs } from '../../src/store/fs-port.js';
import { journal, readJournal } from '../../src/store/journal.js';
import { compactJournal } from '../../src/store/journal-compact.js';
import { readKeyJournal, recentKeyTimes } from '../../src/store/journal-read.js';
import { thisProcess } from '../../src/store/process-identity.js';
import { Store } from '../../src/store/store.js';
import { tempRepo, tempStore } from '../helpers/temp-store.js';

const CLI = fileURLToPath(new URL('../../bin/genjob.js', import.meta.url));

const K1 = 'a'.repeat(64);
const K2 = 'b'.repeat(64);

function segments(store: Store): string[] {
  const dir = store.layout.dir('journal.d');
  return existsSync(dir) ? readdirSync(dir).sort() : [];
}

const line = (ev: Record<string, unknown>) => `${JSON.stringify(ev)}\n`;

/** The pid of a process that has exited (its pid is free, so its segment's owner is gone). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(r.stdout);
}

describe('journal segments', () => {
  it('appends every event of one process to its own <host>-<pid>-<start>.jsonl, nothing to journal.jsonl', () => {
    const store = tempStore('genjob-journal-');
    journal(store, { event: 'minted', key: K1 });
    journal(store, { event: 'claimed', key: K1 });
    journal(new Store(store.root), { event: 'received', key: K1 }); // another handle, same process
    const { pid, start } = thisProcess();
    const host = hostname().replace(/[^A-Za-z0-9._]/g, '_');
    expect(segments(store)).toEqual([`${host}-${pid}-${start}.jsonl`]);
    expect(existsSync(store.layout.journal)).toBe(false);
    const text = readFileSync(join(store.layout.dir('journal.d'), segments(store)[0]!), 'utf8');
    expect(
      text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).event),
    ).toEqual(['minted', 'claimed', 'received']);
  });

  it('lets a later process take over the segment of one that has ended (the built CLI run twice)', () => {
    const { root, store } = tempRepo('genjob-journal-', { 'a.txt': 'a\n' });
    for (const n of [1, 2]) {
      const r = spawnSync(process.execPath, [CLI, 'mint', '-m', `job ${n}`, 'a.txt'], {
        cwd: root,
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
    }
    const second = readJournal(store).at(-1)?.pid;
    expect(readJournal(store).map((e) => e.event)).toEqual(['minted', 'minted']);
    expect(segments(store)).toEqual([expect.stringMatching(new RegExp(`-${second}-\\d+\\.jsonl$`))]);
  });

  it("takes over a gone process's segment of this host instead of adding one, and leaves a live one alone", () => {
    const store = tempStore('genjob-journal-');
    const dir = store.layout.dir('journal.d');
    const host = hostname().replace(/[^A-Za-z0-9._]/g, '_');
    mkdirSync(dir);
    const gone = `${host}-${deadPid()}-123.jsonl`;
    const live = `${host}-${process.ppid}-0.jsonl`; // our parent runs (start 0: not known, never judged gone)
    const elsewhere = `other-box-${deadPid()}-1.jsonl`; // another host's: never judged gone here
    writeFileSync(join(dir, gone), line({ at: '2026-01-01T00:00:00.000Z', event: 'minted', key: K1 }));
    writeFileSync(join(dir, live), line({ at: '2026-01-01T00:00:01.000Z', event: 'claimed', key: K1 }));
    writeFileSync(join(dir, elsewhere), line({ at: '2026-01-01T00:00:02.000Z', event: 'shipped', key: K1 }));
    journal(store, { event: 'received', key: K1 });
    const { pid, start } = thisProcess();
    expect(segments(store)).toEqual([`${host}-${pid}-${start}.jsonl`, live, elsewhere].sort());
    expect(readFileSync(join(dir, `${host}-${pid}-${start}.jsonl`), 'utf8')).toMatch(
      /"minted".*\n.*"received"/,
    );
    expect(readJournal(store, K1).map((e) => e.event)).toEqual(['minted', 'claimed', 'shipped', 'received']);
  });

  it('ends the half line a killed process left in the segment it takes over, so its own first line is whole', () => {
    const store = tempStore('genjob-journal-');
    const dir = store.layout.dir('journal.d');
    const host = hostname().replace(/[^A-Za-z0-9._]/g, '_');
    mkdirSync(dir);
    const gone = `${host}-${deadPid()}-123.jsonl`;
    const torn = '{"at":"2026-01-01T00:00:01.000Z","event":"appl'; // killed mid-append
    writeFileSync(
      join(dir, gone),
      `${line({ at: '2026-01-01T00:00:00.000Z', event: 'minted', key: K1 })}${torn}`,
    );
    journal(store, { event: 'received', key: K1 });
    const { pid, start } = thisProcess();
    const taken = readFileSync(join(dir, `${host}-${pid}-${start}.jsonl`), 'utf8');
    expect(taken).toMatch(new RegExp(`^.*"minted".*\n${torn}\n{.*"received".*}\n$`));
    expect(readJournal(store, K1).map((e) => e.event)).toEqual(['minted', 'received']);
  });
});

// readKeyJournal (show's reader: the next chunk read while this one is searched) must find what
// readJournal finds for a key, in every case readJournal is held to
const readers = [
  { reader: 'readJournal', read: async (store: Store, key: string) => readJournal(store, key) },
  { reader: 'readKeyJournal', read: readKeyJournal },
];

describe.each(readers)('$reader', ({ read }) => {
  it('merges every file ordered by `at`, ties in file order, a line in two files once', async () => {
    const store = tempStore('genjob-journal-');
    const gen = store.layout.gen;
    const dir = store.layout.dir('journal.d');
    mkdirSync(dir);
    const at = (s: number) => `2026-01-01T00:00:0${s}.000Z`;
    writeFileSync(join(gen, 'journal.1.jsonl'), line({ at: at(0), event: 'minted', key: K1 }));
    const dup = line({ at: at(1), event: 'claimed', key: K1 });
    writeFileSync(join(gen, 'journal.compacting-7-0.jsonl'), dup);
    writeFileSync(join(gen, 'journal.1.jsonl'), line({ at: at(0), event: 'minted', key: K1 }) + dup, {
      flag: 'w',
    });
    writeFileSync(store.layout.journal, line({ at: at(5), event: 'applied', key: K1 }));
    writeFileSync(
      join(dir, 'box-b-2-2.jsonl'),
      line({ at: at(3), event: 'received', key: K1 }) + line({ at: at(3), event: 'tie-second', key: K1 }),
    );
    writeFileSync(
      join(dir, 'box-a-1-1.jsonl'),
      line({ at: at(2), event: 'shipped', key: K1 }) +
        line({ at: at(3), event: 'tie-first', key: K1 }) +
        line({ at: at(4), event: 'other', key: K2 }),
    );
    expect((await read(store, K1)).map((e) => e.event)).toEqual([
      'minted',
      'claimed',
      'shipped',
      'tie-first',
      'received',
      'tie-second',
      'applied',
    ]);
    expect(readJournal(store)).toHaveLength(8);
  });

  it('still finds the events of a segment renamed between the listing and its reading (a take-over)', async () => {
    const root = tempStore('genjob-journal-').root;
    const dir = join(root, '.gen', 'journal.d');
    mkdirSync(dir);
    const a = join(dir, 'box-1-1.jsonl');
    writeFileSync(a, line({ at: '2026-01-01T00:00:00.000Z', event: 'minted', key: K1 }));
    writeFileSync(
      join(dir, 'box-2-2.jsonl'),
      line({ at: '2026-01-01T00:00:01.000Z', event: 'claimed', key: K1 }),
    );
    let renamed = false;
    const takingOver: FsPort = {
      ...nodeFs,
      openSync: ((path: string, ...rest: unknown[]) => {
        if (path === a && !renamed) {
          renamed = true;
          renameSync(a, join(dir, 'box-3-3.jsonl')); // another process takes it over just now
        }
        return (nodeFs.openSync as (...args: unknown[]) => number)(path, ...rest);
      }) as FsPort['openSync'],
    };
    expect((await read(new Store(root, takingOver), K1)).map((e) => e.event)).toEqual(['minted', 'claimed']);
    expect(renamed).toBe(true);
  });

  it("finds only the key's own events: not a line naming it in another field, not a torn line", async () => {
    const store = tempStore('genjob-journal-');
    writeFileSync(
      store.layout.journal,
      line({ at: '2026-01-01T00:00:00.000Z', event: 'batch-intent', keys: [K1, K2] }) +
        line({ at: '2026-01-01T00:00:01.000Z', event: 'minted', key: K1 }) +
        line({ at: '2026-01-01T00:00:02.000Z', event: 'minted', key: K2, note: `"key":"${K1}"` }) +
        `{"at":"2026-01-01T00:00:03.000Z","event":"claimed","key":"${K1}"`, // torn by a crash
    );
    expect((await read(store, K1)).map((e) => e.event)).toEqual(['minted']);
  });

  it('refuses a journal file that is a directory or a link, naming it, instead of following it', async () => {
    for (const name of ['journal.1.jsonl', 'journal.jsonl', join('journal.d', 'box-1-1.jsonl')]) {
      for (const kind of ['directory', 'link'] as const) {
        const store = tempStore('genjob-journal-');
        mkdirSync(store.layout.dir('journal.d'));
        writeFileSync(
          join(store.layout.dir('journal.d'), 'box-0-0.jsonl'),
          line({ at: '2026-01-01T00:00:00.000Z', event: 'minted', key: K1 }),
        );
        const file = join(store.layout.gen, name);
        if (kind === 'directory') mkdirSync(file);
        else symlinkSync('/dev/zero', file);
        const reading = read(store, K1);
        await expect(reading, `${name} as a ${kind}`).rejects.toBeInstanceOf(RecordUnreadableError);
        await expect(reading).rejects.toThrow(file);
      }
    }
  });

  it('reads lines across read chunks and a line longer than a chunk whole', async () => {
    const store = tempStore('genjob-journal-');
    const filler = 'x'.repeat(1000);
    const many = (from: number) =>
      Array.from({ length: 9000 }, (_, i) =>
        line({ at: '2026-01-01T00:00:00.000Z', event: 'other', key: K2, i: from + i, filler }),
      ).join(''); // ~9 MiB: several 1 MiB chunks, lines cut at their edges
    const huge = line({ at: '2026-01-01T00:00:01.000Z', event: 'huge', key: K1, blob: 'y'.repeat(9 << 20) });
    writeFileSync(
      store.layout.journal,
      many(0) +
        huge +
        huge + // a second one right after: carried over whole from a grown buffer
        many(9000) +
        line({ at: '2026-01-01T00:00:02.000Z', event: 'last', key: K1 }).trimEnd(), // no final newline
    );
    expect((await read(store, K1)).map((e) => e.event)).toEqual(['huge', 'huge', 'last']);
    const k2 = await read(store, K2);
    expect(k2.map((e) => e.i)).toEqual(Array.from({ length: 18_000 }, (_, i) => i));
  });
});

describe('a journal file that is a FIFO', () => {
  it('is refused by show naming it, not waited on for ever (the built CLI, killed after 20 s)', () => {
    const { root, store } = tempRepo('genjob-journal-', { 'a.txt': 'a\n' });
    const minted = spawnSync(process.execPath, [CLI, 'mint', '-m', 'job', 'a.txt'], {
      cwd: root,
      encoding: 'utf8',
    });
    const key = minted.stdout.split('\n')[0]!;
    for (const name of ['journal.1.jsonl', 'journal.jsonl']) {
      const file = join(store.layout.gen, name);
      expect(spawnSync('mkfifo', [file]).status).toBe(0);
      const r = spawnSync(process.execPath, [CLI, 'show', key], {
        cwd: root,
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(r.signal, `show with ${name} a FIFO`).toBeNull();
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`EGJ_RECORD_UNREADABLE: ${file}: is a FIFO`);
      rmSync(file);
    }
  });
});

describe('compactJournal (gc)', () => {
  it('folds every segment and the 0.1 journal into journal.1.jsonl sorted by key then `at`, dropping pruned keys past the cutoff', () => {
    const store = tempStore('genjob-journal-');
    writeFileSync(store.layout.journal, line({ at: '2026-01-01T00:00:00.000Z', event: 'minted', key: K2 }));
    journal(store, { event: 'minted', key: K1 });
    const dir = store.layout.dir('journal.d');
    writeFileSync(
      join(dir, 'other-box-9-9.jsonl'),
      line({ at: '2026-01-01T00:00:01.000Z', event: 'applied', key: K2 }),
    );
    const before = readJournal(store);
    const cut = compactJournal(store, new Set(), Date.parse('2020-01-01'), 0);
    expect(cut).toEqual({ kept: 3, dropped: 0 });
    expect(segments(store)).toEqual([]);
    expect(existsSync(store.layout.journal)).toBe(false);
    expect(readdirSync(store.layout.gen).filter((n) => n.startsWith('journal'))).toEqual([
      'journal.1.jsonl',
      'journal.d',
    ]);
    expect(readJournal(store)).toEqual(before);
    const rotated = readFileSync(join(store.layout.gen, 'journal.1.jsonl'), 'utf8').trim().split('\n');
    expect(rotated.map((l) => [JSON.parse(l).event, JSON.parse(l).key])).toEqual([
      ['journal-sorted', undefined],
      ['minted', K1],
      ['minted', K2],
      ['applied', K2],
    ]);

    // this process's next event starts its segment afresh; a second gc drops the pruned key's old events
    journal(store, { event: 'claimed', key: K1 });
    expect(segments(store)).toHaveLength(1);
    expect(compactJournal(store, new Set([K2]), Date.now(), 0)).toEqual({ kept: 2, dropped: 2 });
    expect(readJournal(store).map((e) => [e.event, e.key])).toEqual([
      ['minted', K1],
      ['claimed', K1],
    ]);
  });

  it('merges the leftovers of an interrupted gc, each line once, and keeps none of them', () => {
    const store = tempStore('genjob-journal-');
    const gen = store.layout.gen;
    const a = line({ at: '2026-01-01T00:00:00.000Z', event: 'minted', key: K1 });
    const b = line({ at: '2026-01-01T00:00:01.000Z', event: 'claimed', key: K1 });
    writeFileSync(join(gen, 'journal.1.jsonl'), a + b);
    writeFileSync(join(gen, 'journal.compacting-12.jsonl'), b); // 0.1's name for a sealed file
    writeFileSync(join(gen, 'journal.compacting-12-0.jsonl'), a);
    compactJournal(store, new Set(), 0, 0);
    expect(readdirSync(gen).filter((n) => n.startsWith('journal'))).toEqual(['journal.1.jsonl']);
    const text = readFileSync(join(gen, 'journal.1.jsonl'), 'utf8');
    expect(text.slice(text.indexOf('\n') + 1)).toBe(a + b);
  });

  it('lets show find a key in the rotated file by a binary search, reading a few KiB of megabytes', () => {
    const store = tempStore('genjob-journal-');
    const keys = Array.from({ length: 4000 }, (_, i) => sha256Hex(`key ${i}`));
    const events: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const key = keys[(i * 7919) % keys.length]!;
      // some lines far longer than a probe read (16 KiB), some events without a key
      const extra = i % 997 === 0 ? { blob: 'z'.repeat(40_000) } : {};
      const ev = i % 501 === 0 ? { event: 'host-up' } : { event: `e${i}`, key, ...extra };
      events.push(line({ at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(), pid: 1, ...ev }));
    }
    mkdirSync(store.layout.dir('journal.d'));
    writeFileSync(join(store.layout.dir('journal.d'), 'box-1-1.jsonl'), events.join(''));
    const scanned = new Map(keys.map((k) => [k, readJournal(store, k)]));
    compactJournal(store, new Set(), 0, 0);
    const rotated = join(store.layout.gen, 'journal.1.jsonl');
    expect(statSync(rotated).size).toBeGreaterThan(3_000_000);
    let bytes = 0;
    const counting: FsPort = {
      ...nodeFs,
      readSync: ((...args: Parameters<typeof nodeFs.readSync>) => {
        const n = (nodeFs.readSync as (...a: unknown[]) => number)(...args);
        bytes += n;
        return n;
      }) as FsPort['readSync'],
    };
    const looking = new Store(store.root, counting);
    // every key, the first and the last included, gives what a scan of the segment gave
    for (const k of [...keys].sort()) expect(readJournal(looking, k), k).toEqual(scanned.get(k));
    expect(bytes / keys.length).toBeLessThan(100_000); // a scan reads the whole file each time
    expect(readJournal(looking, 'f'.repeat(64))).toEqual([]);
    expect(readJournal(looking, '')).toEqual([]);
  });

  it('scans a rotated file without the sorted first line (an older gc) instead of searching it', () => {
    const store = tempStore('genjob-journal-');
    writeFileSync(
      join(store.layout.gen, 'journal.1.jsonl'),
      line({ at: '2026-01-01T00:00:00.000Z', event: 'minted', key: K2 }) +
        line({ at: '2026-01-01T00:00:01.000Z', event: 'minted', key: K1 }),
    );
    expect(readJournal(store, K2).map((e) => e.event)).toEqual(['minted']);
    expect(readJournal(store, K1).map((e) => e.event)).toEqual(['minted']);
  });
});

describe('recentKeyTimes', () => {
  it("gives each key's newest event time from the tail of every live file, skipping the tail's partial first line", () => {
    const store = tempStore('genjob-recent-');
    const dir = store.layout.dir('journal.d');
    mkdirSync(dir, { recursive: true });
    const line = (key: string, at: string) => `${JSON.stringify({ at, event: 'x', key })}\n`;
    const old = line(K1, '2026-01-01T00:00:00.000Z');
    writeFileSync(
      join(dir, 'h-1-1.jsonl'),
      old + line(K2, '2026-01-02T00:00:00.000Z') + line(K2, '2026-01-03T00:00:00.000Z'),
    );
    writeFileSync(join(dir, 'h-2-1.jsonl'), line(K1, '2026-01-04T00:00:00.000Z') + '{"torn');
    expect(recentKeyTimes(store)).toEqual(
      new Map([
        [K2, Date.parse('2026-01-03T00:00:00.000Z')],
        [K1, Date.parse('2026-01-04T00:00:00.000Z')],
      ]),
    );
    // a tail that starts inside the first file's first line: that line is not half-read
    const tail = readFileSync(join(dir, 'h-1-1.jsonl')).length - old.length + 5;
    const times = recentKeyTimes(store, tail);
    expect(times.get(K2)).toBe(Date.parse('2026-01-03T00:00:00.000Z'));
    expect(times.get(K1)).toBe(Date.parse('2026-01-04T00:00:00.000Z'));
  });
});
