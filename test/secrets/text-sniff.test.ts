import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BLOCK_BYTES, isBinaryBlock, sniffEncoding, utf16Decoder } from '../../src/secrets/text-sniff.js';

const json = '{\n  "ConnectionStrings": { "Main": "Server=db;Database=app" }\n}\n';
const le = (s: string) => Buffer.from(s, 'utf16le');
const be = (s: string) => Buffer.from(s, 'utf16le').swap16();

describe('sniffEncoding', () => {
  const cases: Array<{ name: string; head: Buffer; encoding: string; bom: number }> = [
    {
      name: 'UTF-16LE with a BOM',
      head: Buffer.concat([Buffer.of(0xff, 0xfe), le(json)]),
      encoding: 'utf16le',
      bom: 2,
    },
    {
      name: 'UTF-16BE with a BOM',
      head: Buffer.concat([Buffer.of(0xfe, 0xff), be(json)]),
      encoding: 'utf16be',
      bom: 2,
    },
    { name: 'UTF-16LE without a BOM', head: le(json), encoding: 'utf16le', bom: 0 },
    { name: 'UTF-16BE without a BOM', head: be(json), encoding: 'utf16be', bom: 0 },
    { name: 'UTF-8 with a BOM', head: Buffer.from(`\ufeff${json}`), encoding: 'utf8', bom: 3 },
    { name: 'plain UTF-8', head: Buffer.from(json), encoding: 'utf8', bom: 0 },
    { name: 'text with a stray NUL', head: Buffer.from(`a\0${json}`), encoding: 'utf8', bom: 0 },
    { name: 'random bytes', head: randomBytes(4096), encoding: 'utf8', bom: 0 },
    {
      name: 'UTF-16LE of Arabic with ASCII keys',
      head: le('{"greeting": "مرحبا بكم", "key": "value value"}'),
      encoding: 'utf16le',
      bom: 0,
    },
  ];
  it.each(cases)('$name → $encoding', ({ head, encoding, bom }) => {
    expect(sniffEncoding(head)).toEqual({ encoding, bom });
  });
});

describe('isBinaryBlock', () => {
  const text = Buffer.from('const a = 1;\n'.repeat(6000)); // > one block
  it('takes random bytes for binary', () => {
    for (let i = 0; i < 20; i++) {
      const r = randomBytes(BLOCK_BYTES);
      expect(isBinaryBlock(r, 0, r.length)).toBe(true);
    }
  });

  it('takes text, and text with a stray NUL, for text', () => {
    expect(isBinaryBlock(text, 0, BLOCK_BYTES)).toBe(false);
    const withNul = Buffer.from(text);
    withNul[100] = 0;
    expect(isBinaryBlock(withNul, 0, BLOCK_BYTES)).toBe(false);
  });

  it('takes a block that opens with NUL padding and ends in text for text', () => {
    const padded = Buffer.concat([Buffer.alloc(4096), text]).subarray(0, BLOCK_BYTES);
    expect(isBinaryBlock(padded, 0, padded.length)).toBe(false);
  });

  it('judges only its own range', () => {
    const mixed = Buffer.concat([randomBytes(BLOCK_BYTES), text.subarray(0, BLOCK_BYTES)]);
    expect(isBinaryBlock(mixed, 0, BLOCK_BYTES)).toBe(true);
    expect(isBinaryBlock(mixed, BLOCK_BYTES, 2 * BLOCK_BYTES)).toBe(false);
  });

  it('judges a short block by its halves', () => {
    expect(isBinaryBlock(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 1, 2]), 0, 10)).toBe(true);
    expect(isBinaryBlock(Buffer.from('ab\0cdefghijklmnopqrstuvwxyz'), 0, 27)).toBe(false);
    expect(isBinaryBlock(Buffer.from('\0\0\0\0\ntoken in the second half of the file'), 0, 44)).toBe(false);
  });
});

describe('utf16Decoder', () => {
  it.each(['utf16le', 'utf16be'] as const)('%s: decodes text cut at every byte', (encoding) => {
    const s = 'key = "välue 🔑"\n';
    const bytes = encoding === 'utf16le' ? le(s) : be(s);
    for (let cut = 1; cut < bytes.length; cut++) {
      const d = utf16Decoder(encoding);
      expect(d.write(bytes.subarray(0, cut)) + d.write(bytes.subarray(cut)) + d.end()).toBe(s);
    }
  });

  it('does not change the bytes it is given (UTF-16BE swaps a copy)', () => {
    const bytes = be('abc');
    const copy = Buffer.from(bytes);
    utf16Decoder('utf16be').write(bytes);
    expect(bytes).toEqual(copy);
  });
});
