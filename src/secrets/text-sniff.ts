// Is it text, and in which encoding? UTF-16 is recognised by its byte-order mark, or without one
// by the zero bytes ASCII leaves in every other position; everything else is read as UTF-8. Binary
// is judged per block, not once per file: a block is skipped only when its NULs and control bytes
// are dense (random or compressed data has ~10% of them), so a stray NUL, or a binary header before
// text, does not hide the text that follows. Judging samples keeps a 512 MiB binary input cheap.
import { StringDecoder } from 'node:string_decoder';

export type TextEncoding = 'utf8' | 'utf16le' | 'utf16be';

/** Bytes inspected at the start of a file to recognise UTF-16 without a byte-order mark. */
const UTF16_SNIFF_BYTES = 512;

/** The encoding of a file from its first bytes, and how many of them are a byte-order mark. */
export function sniffEncoding(head: Uint8Array): { encoding: TextEncoding; bom: number } {
  if (head[0] === 0xff && head[1] === 0xfe) return { encoding: 'utf16le', bom: 2 };
  if (head[0] === 0xfe && head[1] === 0xff) return { encoding: 'utf16be', bom: 2 };
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return { encoding: 'utf8', bom: 3 };
  const n = Math.min(head.length, UTF16_SNIFF_BYTES) & ~1;
  if (n < 4) return { encoding: 'utf8', bom: 0 };
  let evenZero = 0;
  let oddZero = 0;
  for (let i = 0; i < n; i += 2) {
    if (head[i] === 0) evenZero++;
    if (head[i + 1] === 0) oddZero++;
  }
  // Mostly-ASCII UTF-16 (JSON, XML, .reg, PowerShell output) has a zero in nearly every high byte,
  // and almost none in the low bytes; non-Latin text leaves fewer, so ask for a majority only.
  const pairs = n / 2;
  if (oddZero >= 0.6 * pairs && evenZero <= 0.05 * pairs) return { encoding: 'utf16le', bom: 0 };
  if (evenZero >= 0.6 * pairs && oddZero <= 0.05 * pairs) return { encoding: 'utf16be', bom: 0 };
  return { encoding: 'utf8', bom: 0 };
}

/** Blocks judged one by one: a region of text inside a file is found at this granularity. */
export const BLOCK_BYTES = 64 * 1024;
const SAMPLE_BYTES = 512;

/** NUL and the C0 controls text does not use (tab, newline, vertical tab, form feed, CR and ESC are text). */
const CONTROL = new Uint8Array(256);
for (const c of [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31,
])
  CONTROL[c] = 1;

function denseControls(bytes: Uint8Array, from: number, to: number): boolean {
  let n = 0;
  for (let i = from; i < to; i++) n += CONTROL[bytes[i]!]!;
  // over 1 in 32: random bytes have ~1 in 10 (a 512-byte sample of them falls under 1 in 32 about
  // once in a million), text has none, or a stray few
  return n * 32 > to - from;
}

/**
 * True when bytes[from, to) (one block) is binary: it holds a NUL, and both its start and its end
 * (SAMPLE_BYTES each, or halves of a shorter block) are dense in control bytes, so NUL padding
 * before text, or text before a stray NUL, is read as text. Text (no NUL) costs one memchr.
 */
export function isBinaryBlock(bytes: Uint8Array, from: number, to: number): boolean {
  const nul = bytes.indexOf(0, from);
  if (nul === -1 || nul >= to) return false;
  const sample = Math.max(1, Math.min(SAMPLE_BYTES, (to - from) >> 1));
  return denseControls(bytes, from, from + sample) && denseControls(bytes, to - sample, to);
}

/** A streaming UTF-16 decoder (an odd trailing byte or half a surrogate pair waits for the next chunk). */
export function utf16Decoder(encoding: 'utf16le' | 'utf16be'): {
  write(b: Uint8Array): string;
  end(): string;
} {
  const le = new StringDecoder('utf16le');
  if (encoding === 'utf16le')
    return { write: (b) => le.write(Buffer.from(b.buffer, b.byteOffset, b.byteLength)), end: () => le.end() };
  let carry: number | undefined;
  return {
    write(b) {
      const bytes = carry === undefined ? Buffer.from(b) : Buffer.concat([Uint8Array.of(carry), b]);
      const even = bytes.length & ~1;
      carry = even < bytes.length ? bytes[even] : undefined;
      return le.write(bytes.subarray(0, even).swap16());
    },
    end: () => le.end(),
  };
}
