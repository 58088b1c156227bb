// The tar state machine on its own: which entries (name, size, bytes) it hands out for any chunking,
// how pax and GNU extensions name and size the next entry, and for every malformed shape the code and
// the message an archive's sender is refused with. Archives are built byte by byte (test/helpers/hostile-tar.ts).
import { describe, expect, it } from 'vitest';
import { ArchiveRejectedError } from '../../src/transport/archive-errors.js';
import { TarReader } from '../../src/transport/tar-reader.js';
import {
  BLOCK,
  base256Huge,
  endBlocks,
  fileEntry,
  gnuLongName,
  padded,
  paxHeader,
  rawHeader,
  tarOf,
} from '../helpers/hostile-tar.js';

interface Seen {
  name: string;
  size: number;
  data: string;
  ended: number;
}

/** Feed `archive` in chunks of `chunk` bytes and finish; the entries seen, as they were handed out. */
function read(archive: Buffer, chunk = archive.length || 1): Seen[] {
  const seen: Seen[] = [];
  const reader = new TarReader((name, size) => {
    const s: Seen = { name, size, data: '', ended: 0 };
    seen.push(s);
    return {
      write: (b) => {
        expect(s.ended).toBe(0);
        s.data += b.toString('latin1');
      },
      end: () => {
        s.ended += 1;
      },
    };
  });
  for (let at = 0; at < archive.length; at += chunk) reader.push(archive.subarray(at, at + chunk));
  reader.finish();
  return seen;
}

/** The refusal reading `archive` ends in: code, entry and message. */
function refusal(archive: Buffer, chunk?: number) {
  try {
    read(archive, chunk);
  } catch (err) {
    expect(err).toBeInstanceOf(ArchiveRejectedError);
    const e = err as ArchiveRejectedError;
    return { code: e.code, entry: e.entry, message: e.message };
  }
  throw new Error('the archive was read');
}

const refused = (code: string, rule: string, entry?: string) => ({
  code,
  entry,
  message: entry === undefined ? `archive: ${rule}` : `archive entry ${JSON.stringify(entry)}: ${rule}`,
});

/** `b` with its header checksum computed again, after a test rewrote a field. */
function withChecksum(b: Buffer): Buffer {
  b.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of b) sum += byte;
  b.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'latin1');
  return b;
}

/** `header` with its size field rewritten in base-256 as -1 (all bits set). */
function negativeSize(header: Buffer): Buffer {
  const b = Buffer.from(header);
  b.fill(0xff, 124, 136);
  return withChecksum(b);
}

describe('TarReader reads', () => {
  const archive = tarOf(
    fileEntry('a.txt', 'hello'),
    fileEntry('empty', ''),
    fileEntry('b.bin', 'x'.repeat(BLOCK + 3)),
  );
  const expected = [
    { name: 'a.txt', size: 5, data: 'hello', ended: 1 },
    { name: 'empty', size: 0, data: '', ended: 1 },
    { name: 'b.bin', size: BLOCK + 3, data: 'x'.repeat(BLOCK + 3), ended: 1 },
  ];

  it.each([1, 7, 100, BLOCK - 1, BLOCK, BLOCK + 1, 3000])(
    'every entry with its name, size and bytes, ended once, in chunks of %i bytes',
    (chunk) => {
      expect(read(archive, chunk)).toEqual(expected);
    },
  );

  it('the whole archive in one chunk', () => {
    expect(read(archive)).toEqual(expected);
  });

  it('an archive that ends in up to 64 KiB of zeros after its end blocks', () => {
    const padding = Buffer.concat([archive, Buffer.alloc(64 * 1024)]);
    expect(read(padding, 4096)).toEqual(expected);
    expect(read(padding)).toEqual(expected);
  });

  it('a ustar name prefix joined with a slash, and no prefix for a non-ustar header', () => {
    const ustar = rawHeader({ name: 'c.txt', prefix: 'deep/dir', size: 0 });
    expect(read(tarOf(ustar)).map((s) => s.name)).toEqual(['deep/dir/c.txt']);
    const old = Buffer.from(ustar);
    old.write('ustar  \0', 257, 8, 'latin1'); // old GNU magic: the prefix field means something else
    expect(read(tarOf(withChecksum(old))).map((s) => s.name)).toEqual(['c.txt']);
  });

  it('the name and size of a pax header for the next entry only', () => {
    const seen = read(
      tarOf(
        paxHeader({ path: 'long/päx name.txt', size: '3' }),
        fileEntry('placeholder', 'abc', { size: 0 }),
        fileEntry('next', 'n'),
      ),
      BLOCK,
    );
    expect(seen.map(({ name, size, data }) => ({ name, size, data }))).toEqual([
      { name: 'long/päx name.txt', size: 3, data: 'abc' },
      { name: 'next', size: 1, data: 'n' },
    ]);
  });

  it('a pax size of fifteen digits', () => {
    const seen: string[] = [];
    const reader = new TarReader((name, size) => {
      seen.push(`${name} ${size}`);
      throw new Error('stop');
    });
    expect(() =>
      reader.push(
        Buffer.concat([paxHeader({ size: '000000000000007' }), fileEntry('f', 'abcdefg', { size: 0 })]),
      ),
    ).toThrow('stop');
    expect(seen).toEqual(['f 7']);
  });

  it('a GNU long name for the next entry only, with or without NUL padding', () => {
    const withNul = gnuLongName(`${'n'.repeat(150)}`);
    const body = Buffer.from('bare-long-name');
    const bare = Buffer.concat([
      rawHeader({ name: '././@LongLink', type: 'L', size: body.length }),
      padded(body),
    ]);
    const nuls = Buffer.from('padded\0\0\0');
    const padded3 = Buffer.concat([
      rawHeader({ name: '././@LongLink', type: 'L', size: nuls.length }),
      padded(nuls),
    ]);
    const names = read(
      tarOf(
        withNul,
        fileEntry('x', '1'),
        bare,
        fileEntry('y', '2'),
        padded3,
        fileEntry('z', '3'),
        fileEntry('w', '4'),
      ),
    ).map((s) => s.name);
    expect(names).toEqual(['n'.repeat(150), 'bare-long-name', 'padded', 'w']);
  });

  it('an extended header of exactly 16 KiB, and eight global headers', () => {
    const big = Buffer.alloc(16 * 1024);
    const rec = (n: number) => {
      // one comment record filling exactly n bytes
      const body = ` comment=${'c'.repeat(n - 10 - String(n).length)}\n`;
      return Buffer.from(`${n}${body}`);
    };
    rec(16 * 1024).copy(big);
    const globals = Array.from({ length: 8 }, () => paxHeader({ comment: 'g' }, { global: true }));
    const x = Buffer.concat([rawHeader({ name: 'PaxHeader', type: 'x', size: big.length }), big]);
    expect(read(tarOf(...globals, x, fileEntry('f', 'ok'))).map((s) => s.name)).toEqual(['f']);
  });
});

describe('TarReader refuses', () => {
  it('a header with a wrong checksum', () => {
    expect(refusal(tarOf(rawHeader({ name: 'a', badChecksum: true })))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'header checksum mismatch: not a tar stream, or damaged'),
    );
  });

  it('a header node-tar cannot decode (a base-256 size above 2^53)', () => {
    expect(refusal(tarOf(base256Huge(rawHeader({ name: 'a' }), 'size'))).message).toBe(
      'archive: unreadable header: parsed number outside of javascript safe integer range',
    );
  });

  it('a negative size (base-256), naming the entry', () => {
    expect(refusal(tarOf(negativeSize(rawHeader({ name: 'neg', size: 1 }))))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'unreadable size field', 'neg'),
    );
  });

  it('a lone zero block inside the archive', () => {
    expect(refusal(Buffer.concat([Buffer.alloc(BLOCK), fileEntry('a', 'x'), endBlocks()]))).toEqual(
      refused(
        'EGJ_ARCHIVE_CORRUPT',
        'a lone zero block inside the archive (concatenated archives are refused)',
      ),
    );
  });

  it.each([
    [
      'a pax header',
      () => paxHeader({ path: 'p' }),
      'an extended header is followed by the end of the archive',
    ],
    ['a GNU long name', () => gnuLongName('p'), 'an extended header is followed by the end of the archive'],
  ])('%s followed by the end of the archive', (_what, ext, rule) => {
    expect(refusal(tarOf(ext()))).toEqual(refused('EGJ_ARCHIVE_CORRUPT', rule));
  });

  it('a pax path and a GNU long name for one entry', () => {
    expect(
      refusal(tarOf(paxHeader({ path: 'from-pax' }), gnuLongName('from-gnu'), fileEntry('f', ''))),
    ).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'both a pax path and a GNU long name for one entry', 'from-pax'),
    );
  });

  it('two pax headers, or two GNU long names, for one entry', () => {
    expect(refusal(tarOf(paxHeader({ path: 'a' }), paxHeader({ path: 'b' }), fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'two pax headers for one entry'),
    );
    expect(
      refusal(tarOf(paxHeader({ comment: 'no path' }), paxHeader({ path: 'b' }), fileEntry('f'))),
    ).toEqual(refused('EGJ_ARCHIVE_CORRUPT', 'two pax headers for one entry'));
    expect(refusal(tarOf(gnuLongName('a'), gnuLongName('b'), fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'two GNU long names for one entry'),
    );
  });

  it('a pax header and a GNU long name are each allowed once per entry, again for the next', () => {
    const names = read(
      tarOf(
        paxHeader({ path: 'a' }),
        fileEntry('f'),
        paxHeader({ path: 'b' }),
        fileEntry('g'),
        gnuLongName('c'),
        fileEntry('h'),
        gnuLongName('d'),
        fileEntry('i'),
      ),
    ).map((s) => s.name);
    expect(names).toEqual(['a', 'b', 'c', 'd']);
  });

  it('a GNU long name, then a pax header without a path, for one entry: the long name names it', () => {
    const names = read(tarOf(gnuLongName('long-one'), paxHeader({ mtime: '1' }), fileEntry('short'))).map(
      (s) => s.name,
    );
    expect(names).toEqual(['long-one']);
  });

  it('an extended header without a name, cut short, is refused as truncated naming the empty name', () => {
    const cut = Buffer.concat([rawHeader({ name: '', type: 'x', size: 100 }), Buffer.alloc(10)]);
    expect(refusal(cut)).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends mid-entry, 90 bytes short', ''),
    );
  });

  it('an empty pax header (size 0) is read as no records', () => {
    const names = read(tarOf(paxHeader(Buffer.alloc(0)), fileEntry('f'))).map((s) => s.name);
    expect(names).toEqual(['f']);
  });

  it('more than eight global pax headers', () => {
    const globals = Array.from({ length: 9 }, () => paxHeader({ comment: 'g' }, { global: true }));
    expect(refusal(tarOf(...globals, fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'more than 8 global pax headers'),
    );
  });

  it('an extended header over 16 KiB, before reading its body', () => {
    const header = rawHeader({ name: 'PaxHeader', type: 'x', size: 16 * 1024 + 1 });
    expect(refusal(header)).toEqual(refused('EGJ_ARCHIVE_TOO_LARGE', 'an extended header over 16384 bytes'));
    const gnu = rawHeader({ name: '././@LongLink', type: 'L', size: 16 * 1024 + 1 });
    expect(refusal(gnu)).toEqual(refused('EGJ_ARCHIVE_TOO_LARGE', 'an extended header over 16384 bytes'));
  });

  it('an extended header whose size field is unreadable', () => {
    for (const type of ['x', 'g', 'L'])
      expect(refusal(negativeSize(rawHeader({ name: 'PaxHeader', type, size: 10 })))).toEqual(
        refused('EGJ_ARCHIVE_CORRUPT', 'unreadable size of an extended header'),
      );
  });

  it('a GNU long name with bytes after its NUL', () => {
    const body = Buffer.from('name\0junk');
    const entry = Buffer.concat([
      rawHeader({ name: '././@LongLink', type: 'L', size: body.length }),
      padded(body),
    ]);
    expect(refusal(tarOf(entry, fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'GNU long name with bytes after its NUL'),
    );
  });

  it('a sparse file announced in pax, naming the entry', () => {
    expect(refusal(tarOf(paxHeader({ path: 's.bin', 'GNU.sparse.major': '1' }), fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_TYPE', 'sparse files are not accepted', 's.bin'),
    );
  });

  it('a pax linkpath, naming the entry', () => {
    expect(refusal(tarOf(paxHeader({ path: 'l', linkpath: '/etc/passwd' }), fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_LINK', 'a pax linkpath: links are not accepted', 'l'),
    );
    expect(refusal(tarOf(paxHeader({ linkpath: '/etc/passwd' }, { global: true }), fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_LINK', 'a pax linkpath: links are not accepted'),
    );
  });

  it('a global pax header that sets a path or a size', () => {
    for (const rec of [{ path: 'p' }, { size: '1' }] as Array<Record<string, string>>)
      expect(refusal(tarOf(paxHeader(rec, { global: true }), fileEntry('f')))).toEqual(
        refused('EGJ_ARCHIVE_CORRUPT', 'a global pax header sets path or size'),
      );
  });

  it.each(['', '-1', '1e3', '12a', '0x10', '1234567890123456', ' 1'])('a pax size %j', (size) => {
    expect(refusal(tarOf(paxHeader({ path: 'p', size }), fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'malformed pax size', 'p'),
    );
  });

  it('non-zero bytes after the end blocks, wherever the chunks split', () => {
    const tail = Buffer.concat([tarOf(fileEntry('a', 'x')), Buffer.alloc(100), Buffer.from('!')]);
    for (const chunk of [tail.length, BLOCK, 1])
      expect(refusal(tail, chunk)).toEqual(
        refused('EGJ_ARCHIVE_TRAILING', 'non-zero bytes after the end-of-archive blocks'),
      );
  });

  it('more than 64 KiB of zeros after the end blocks', () => {
    const tail = Buffer.concat([tarOf(fileEntry('a', 'x')), Buffer.alloc(64 * 1024 + 1)]);
    for (const chunk of [tail.length, 4096])
      expect(refusal(tail, chunk)).toEqual(
        refused('EGJ_ARCHIVE_TRAILING', 'more than 65536 bytes after the end-of-archive blocks'),
      );
  });
});

describe('TarReader refuses text that is not UTF-8', () => {
  const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // 'café' in latin-1

  it('in an entry name', () => {
    expect(refusal(tarOf(rawHeader({ name: latin1 })))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'an entry name is not valid UTF-8'),
    );
  });

  it('in a ustar name prefix', () => {
    const h = rawHeader({ name: 'x' });
    latin1.copy(h, 345);
    expect(refusal(tarOf(withChecksum(h)))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'an entry name prefix is not valid UTF-8'),
    );
  });

  it('in a GNU long name', () => {
    const long = Buffer.concat([
      rawHeader({ name: '././@LongLink', type: 'L', size: latin1.length }),
      padded(latin1),
    ]);
    expect(refusal(tarOf(long, fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'a GNU long name is not valid UTF-8'),
    );
  });
});

describe('TarReader and a GNU long name that starts with NUL', () => {
  const longName = (body: Buffer) =>
    Buffer.concat([rawHeader({ name: '././@LongLink', type: 'L', size: body.length }), padded(body)]);

  it('names the next entry with the empty name', () => {
    expect(read(tarOf(longName(Buffer.from('\0\0')), fileEntry('f', 'x'))).map((e) => e.name)).toEqual(['']);
  });

  it('is refused when bytes follow the NUL', () => {
    expect(refusal(tarOf(longName(Buffer.from('\0x')), fileEntry('f')))).toEqual(
      refused('EGJ_ARCHIVE_CORRUPT', 'GNU long name with bytes after its NUL'),
    );
  });
});

describe('TarReader.finish refuses a stream that ends', () => {
  const whole = tarOf(fileEntry('a.txt', 'hello'));

  it('mid-entry, naming the entry and the bytes missing', () => {
    expect(refusal(whole.subarray(0, BLOCK + 2))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends mid-entry, 3 bytes short', 'a.txt'),
    );
    expect(refusal(whole.subarray(0, BLOCK))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends mid-entry, 5 bytes short', 'a.txt'),
    );
  });

  it('mid-way through an extended header, naming it', () => {
    const pax = paxHeader({ path: 'p' });
    expect(refusal(pax.subarray(0, BLOCK + 1))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends mid-entry, 8 bytes short', 'PaxHeader'),
    );
  });

  it('inside the padding of an entry', () => {
    expect(refusal(whole.subarray(0, BLOCK + 100))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends inside the padding of an entry'),
    );
  });

  it('inside a header block', () => {
    expect(refusal(whole.subarray(0, 2 * BLOCK + 10))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends inside a header block'),
    );
    expect(refusal(whole.subarray(0, 100))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends inside a header block'),
    );
  });

  it('right after an entry that needs no padding, or after an empty entry: before the end blocks', () => {
    const exact = tarOf(fileEntry('full', 'x'.repeat(BLOCK)));
    expect(refusal(exact.subarray(0, 2 * BLOCK))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends before its two end-of-archive zero blocks'),
    );
    expect(refusal(rawHeader({ name: 'empty', size: 0 }))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends before its two end-of-archive zero blocks'),
    );
  });

  it('before its two end-of-archive zero blocks, or after only one', () => {
    expect(refusal(whole.subarray(0, 2 * BLOCK))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends before its two end-of-archive zero blocks'),
    );
    expect(refusal(whole.subarray(0, 3 * BLOCK))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends before its two end-of-archive zero blocks'),
    );
    expect(refusal(Buffer.alloc(0))).toEqual(
      refused('EGJ_ARCHIVE_TRUNCATED', 'archive ends before its two end-of-archive zero blocks'),
    );
  });
});
