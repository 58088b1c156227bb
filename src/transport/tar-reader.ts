// The tar state machine: 512-byte blocks in any chunking → regular-file entries, each handed to
// `openEntry(name, size)` and its bytes streamed to the sink it returns. node-tar's Header decodes a
// block; framing and pax records are ours: its Parser dropped a valid pax path when a chunk boundary
// split a UTF-8 character, skipped unknown entries and ended quietly on truncation. The stream must end
// exactly after two zero blocks plus at most 64 KiB of zeros; any other shape throws ArchiveRejectedError.
import { Header } from 'tar/header'; // the header module alone (see tar-header.ts)
import { refuseNonFile } from './refuse-non-file.js';
import { rejectArchive as reject } from './reject-archive.js';
import { decodeUtf8, field, paxRecords } from './tar-text.js';

/** Where the bytes of one accepted entry go; `end` is called once, after exactly `size` bytes. */
export interface EntrySink {
  write(data: Buffer): void;
  end(): void;
}

/** Check an entry and open its sink, or throw to abort the whole extraction. */
export type OpenEntry = (name: string, size: number) => EntrySink;

const BLOCK = 512;
const MAX_META_BYTES = 16 * 1024;
const MAX_TRAILING_BYTES = 64 * 1024;
const MAX_GLOBAL_HEADERS = 8;

function isZero(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

/** node-tar's Header throws a plain Error on some fields (base-256 above 2^53): that is a corrupt archive. */
function decodeHeader(block: Buffer): Header {
  try {
    return new Header(block);
  } catch (err) {
    return reject(
      'EGJ_ARCHIVE_CORRUPT',
      undefined,
      // Stryker disable next-line OptionalChaining: node-tar's Header throws Error objects, never null or undefined
      `unreadable header: ${(err as Error)?.message ?? err}`,
      err,
    );
  }
}

type Target =
  | { kind: 'entry'; name: string; sink: EntrySink }
  | { kind: 'meta'; type: 'x' | 'g' | 'L'; name: string; buf: Buffer; at: number };

/** Feed it bytes with `push`, then call `finish` at the end of the stream. */
export class TarReader {
  #state: 'header' | 'data' | 'pad' | 'eof' = 'header';
  readonly #carry = Buffer.alloc(BLOCK);
  #carryLen = 0;
  #sawZero = false;
  #trailing = 0;
  #target: Target | null = null;
  #remain = 0;
  #pad = 0;
  // extensions pending for the next entry
  #paxPath: string | undefined;
  #paxSize: number | undefined;
  #paxPending = false;
  #longName: string | undefined;
  #globals = 0;

  constructor(private readonly openEntry: OpenEntry) {}

  push(chunk: Buffer): void {
    let pos = 0;
    const len = chunk.length;
    while (pos < len) {
      switch (this.#state) {
        case 'header': {
          let block: Buffer;
          // Stryker disable next-line ConditionalExpression,EqualityOperator: a whole block copied through the carry buffer is the same block; the subarray only saves the copy
          if (this.#carryLen > 0 || len - pos < BLOCK) {
            const n = Math.min(BLOCK - this.#carryLen, len - pos);
            chunk.copy(this.#carry, this.#carryLen, pos, pos + n);
            this.#carryLen += n;
            pos += n;
            if (this.#carryLen < BLOCK) return;
            this.#carryLen = 0;
            block = this.#carry;
          } else {
            block = chunk.subarray(pos, pos + BLOCK);
            pos += BLOCK;
          }
          this.#header(block);
          break;
        }
        case 'data': {
          const n = Math.min(this.#remain, len - pos);
          this.#body(chunk.subarray(pos, pos + n));
          pos += n;
          this.#remain -= n;
          if (this.#remain === 0) this.#endBody();
          break;
        }
        case 'pad': {
          const n = Math.min(this.#pad, len - pos);
          pos += n;
          this.#pad -= n;
          if (this.#pad === 0) this.#state = 'header';
          break;
        }
        case 'eof': {
          this.#trailing += len - pos;
          if (!isZero(chunk.subarray(pos)))
            reject('EGJ_ARCHIVE_TRAILING', undefined, 'non-zero bytes after the end-of-archive blocks');
          if (this.#trailing > MAX_TRAILING_BYTES) {
            reject(
              'EGJ_ARCHIVE_TRAILING',
              undefined,
              `more than ${MAX_TRAILING_BYTES} bytes after the end-of-archive blocks`,
            );
          }
          pos = len;
          break;
        }
      }
    }
  }

  /** The stream ended: it must have ended exactly in the end-of-archive state. */
  finish(): void {
    if (this.#state !== 'eof') {
      const t = this.#target;
      if (t !== null)
        reject('EGJ_ARCHIVE_TRUNCATED', t.name, `archive ends mid-entry, ${this.#remain} bytes short`);
      if (this.#state === 'pad')
        reject('EGJ_ARCHIVE_TRUNCATED', undefined, 'archive ends inside the padding of an entry');
      if (this.#carryLen > 0)
        reject('EGJ_ARCHIVE_TRUNCATED', undefined, 'archive ends inside a header block');
      reject('EGJ_ARCHIVE_TRUNCATED', undefined, 'archive ends before its two end-of-archive zero blocks');
    }
  }

  #header(block: Buffer): void {
    if (isZero(block)) {
      if (this.#sawZero) {
        if (this.#paxPending || this.#longName !== undefined) {
          reject(
            'EGJ_ARCHIVE_CORRUPT',
            undefined,
            'an extended header is followed by the end of the archive',
          );
        }
        this.#state = 'eof';
      }
      this.#sawZero = true;
      return;
    }
    if (this.#sawZero)
      reject(
        'EGJ_ARCHIVE_CORRUPT',
        undefined,
        'a lone zero block inside the archive (concatenated archives are refused)',
      );
    const h = decodeHeader(block);
    if (!h.cksumValid)
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'header checksum mismatch: not a tar stream, or damaged');
    const type = h.typeKey;
    if (type === 'x' || type === 'g' || type === 'L') {
      this.#startMeta(type, h);
      return;
    }
    const name = this.#entryName(block);
    const size = this.#paxSize ?? h.size;
    this.#paxPath = this.#longName = this.#paxSize = undefined;
    this.#paxPending = false;
    refuseNonFile(type, name);
    if (size === undefined || !Number.isSafeInteger(size) || size < 0)
      reject('EGJ_ARCHIVE_CORRUPT', name, 'unreadable size field');
    this.#target = { kind: 'entry', name, sink: this.openEntry(name, size) };
    this.#begin(size);
  }

  #entryName(block: Buffer): string {
    if (this.#paxPath !== undefined && this.#longName !== undefined) {
      reject('EGJ_ARCHIVE_CORRUPT', this.#paxPath, 'both a pax path and a GNU long name for one entry');
    }
    if (this.#paxPath !== undefined) return this.#paxPath;
    if (this.#longName !== undefined) return this.#longName;
    const name = field(block, 0, 100, 'an entry name');
    const ustar = block.toString('latin1', 257, 265) === 'ustar\u000000';
    const prefix = ustar ? field(block, 345, 500, 'an entry name prefix') : '';
    return prefix === '' ? name : `${prefix}/${name}`;
  }

  #startMeta(type: 'x' | 'g' | 'L', h: Header): void {
    const size = h.size;
    if (size === undefined || !Number.isSafeInteger(size) || size < 0) {
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'unreadable size of an extended header');
    }
    if (size > MAX_META_BYTES)
      reject('EGJ_ARCHIVE_TOO_LARGE', undefined, `an extended header over ${MAX_META_BYTES} bytes`);
    if (type === 'x' && this.#paxPending)
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'two pax headers for one entry');
    if (type === 'L' && this.#longName !== undefined)
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'two GNU long names for one entry');
    if (type === 'g' && ++this.#globals > MAX_GLOBAL_HEADERS) {
      reject('EGJ_ARCHIVE_CORRUPT', undefined, `more than ${MAX_GLOBAL_HEADERS} global pax headers`);
    }
    this.#target = { kind: 'meta', type, name: h.path ?? '', buf: Buffer.alloc(size), at: 0 };
    this.#begin(size);
  }

  #begin(size: number): void {
    this.#remain = size;
    this.#pad = (BLOCK - (size % BLOCK)) % BLOCK;
    this.#state = 'data';
    if (size === 0) this.#endBody();
  }

  #body(data: Buffer): void {
    const t = this.#target!;
    if (t.kind === 'entry') {
      t.sink.write(data);
    } else {
      data.copy(t.buf, t.at);
      t.at += data.length;
    }
  }

  #endBody(): void {
    const t = this.#target!;
    this.#target = null;
    this.#state = this.#pad > 0 ? 'pad' : 'header';
    if (t.kind === 'entry') t.sink.end();
    else this.#endMeta(t.type, t.buf);
  }

  #endMeta(type: 'x' | 'g' | 'L', body: Buffer): void {
    if (type === 'L') {
      const nul = body.indexOf(0);
      if (nul >= 0 && !isZero(body.subarray(nul)))
        reject('EGJ_ARCHIVE_CORRUPT', undefined, 'GNU long name with bytes after its NUL');
      this.#longName = decodeUtf8(nul >= 0 ? body.subarray(0, nul) : body, 'a GNU long name');
      return;
    }
    const recs = paxRecords(body);
    for (const key of recs.keys()) {
      if (key.startsWith('GNU.sparse'))
        reject('EGJ_ARCHIVE_TYPE', recs.get('path'), 'sparse files are not accepted');
      if (key === 'linkpath')
        reject('EGJ_ARCHIVE_LINK', recs.get('path'), 'a pax linkpath: links are not accepted');
    }
    if (type === 'g') {
      if (recs.has('path') || recs.has('size'))
        reject('EGJ_ARCHIVE_CORRUPT', undefined, 'a global pax header sets path or size');
      return;
    }
    this.#paxPending = true;
    this.#paxPath = recs.get('path');
    const size = recs.get('size');
    if (size !== undefined) {
      if (!/^[0-9]{1,15}$/.test(size)) reject('EGJ_ARCHIVE_CORRUPT', this.#paxPath, 'malformed pax size');
      this.#paxSize = Number(size);
    }
  }
}
