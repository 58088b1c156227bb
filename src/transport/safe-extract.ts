// Extract an untrusted tar (plain or gzip) into a fresh 0700 staging directory, all or nothing.
// node-tar's Header decodes each 512-byte block; framing, pax records and every file write are done
// here: its Parser was seen to drop a valid pax path when a chunk boundary split a UTF-8 character,
// to skip unknown entries and to end quietly on truncation. Only regular files named prefix + an
// allowed contract path are written (O_EXCL|O_NOFOLLOW, 0644, hashed while streaming, fsynced before
// return); the first violation of any rule deletes the staging directory and throws ArchiveRejectedError.
//
// Decisions: directory entries are refused (parents are made implicitly, 0755); after the two zero
// blocks at most 64 KiB of zero padding may follow (any other trailing byte is refused); gzip is the
// only compression read (zstd, xz, bzip2 fail as not-a-tar); in-memory entries count toward
// maxEntries and maxTotalBytes; on rejection the source is not drained (drop the connection).

import { createHash, type Hash } from 'node:crypto';
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { Header } from 'tar';
import { IoError, UsageError } from '../core/errors.js';
import { ancestors, foldedPath, pathProblem } from '../core/paths.js';
import { type ArchiveCode, ArchiveRejectedError } from './archive-errors.js';

export interface ExtractOptions {
  /** A directory on the target filesystem; a fresh mkdtemp (0700) is made inside it. */
  stagingParent: string;
  /** Every file entry must be prefix + contract path, e.g. 'files/'. */
  prefix: string;
  /** Exact entry names read into memory instead of written (name → max bytes); they come first. */
  inMemory?: Record<string, number>;
  /** Contract paths allowed; the function form is called once, at the first prefixed entry or the end. */
  allowed: ReadonlySet<string> | ((inMemory: Map<string, Buffer>) => ReadonlySet<string>);
  maxEntries: number;
  maxFileBytes: number;
  maxTotalBytes: number;
  /** Max decompressed / compressed bytes for gzip input; default 200. */
  maxRatio?: number;
  /**
   * fsync every file and directory before returning (default true). false only for a scratch
   * workspace that is deleted when the request ends: a crash loses it either way, and the fsyncs
   * were most of the time of a bundle with many files (docs/performance.md).
   */
  sync?: boolean;
}

export interface Extracted {
  /** The staging directory; files sit at dir/<contract path>. The caller moves or removes it. */
  dir: string;
  files: Array<{ path: string; sha256: string; bytes: number }>;
  inMemory: Map<string, Buffer>;
}

const BLOCK = 512;
const MAX_META_BYTES = 16 * 1024;
const MAX_TRAILING_BYTES = 64 * 1024;
const MAX_GLOBAL_HEADERS = 8;
const FSYNC_CONCURRENCY = 16;
const DEFAULT_RATIO = 200;
const utf8 = new TextDecoder('utf-8', { fatal: true });

function reject(code: ArchiveCode, entry: string | undefined, rule: string, cause?: unknown): never {
  throw new ArchiveRejectedError(code, entry, rule, cause === undefined ? undefined : { cause });
}

function isZero(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; i++) if (b[i] !== 0) return false;
  return true;
}

function decodeUtf8(b: Uint8Array, what: string): string {
  try {
    return utf8.decode(b);
  } catch (err) {
    return reject('EGJ_ARCHIVE_CORRUPT', undefined, `${what} is not valid UTF-8`, err);
  }
}

/** The NUL-terminated text of a fixed header field, refusing invalid UTF-8. */
function field(block: Buffer, start: number, end: number, what: string): string {
  const nul = block.indexOf(0, start);
  return decodeUtf8(block.subarray(start, nul >= 0 && nul < end ? nul : end), what);
}

/** Strict pax records: "<len> <key>=<value>\n", lengths chaining exactly through the body. */
function paxRecords(body: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let off = 0;
  while (off < body.length) {
    const sp = body.indexOf(0x20, off);
    const lenText = sp < 0 ? '' : body.toString('latin1', off, sp);
    if (!/^[1-9][0-9]{0,7}$/.test(lenText))
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'malformed pax record length');
    const end = off + Number(lenText);
    if (end > body.length || body[end - 1] !== 0x0a)
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'malformed pax record');
    const rec = decodeUtf8(body.subarray(sp + 1, end - 1), 'a pax record');
    const eq = rec.indexOf('=');
    if (eq <= 0) reject('EGJ_ARCHIVE_CORRUPT', undefined, 'pax record without key=value');
    const key = rec.slice(0, eq);
    if (out.has(key)) reject('EGJ_ARCHIVE_CORRUPT', undefined, `pax key ${JSON.stringify(key)} given twice`);
    out.set(key, rec.slice(eq + 1));
    off = end;
  }
  return out;
}

/** Entry types other than a regular file, and the rule each breaks. */
const REFUSED_TYPES: Record<string, [ArchiveCode, string]> = {
  '1': ['EGJ_ARCHIVE_LINK', 'hard links are not accepted'],
  '2': ['EGJ_ARCHIVE_LINK', 'symbolic links are not accepted'],
  K: ['EGJ_ARCHIVE_LINK', 'a GNU long link name: links are not accepted'],
  '5': ['EGJ_ARCHIVE_TYPE', 'directory entries are not accepted (parents are created implicitly)'],
  D: ['EGJ_ARCHIVE_TYPE', 'directory entries are not accepted (parents are created implicitly)'],
  '3': ['EGJ_ARCHIVE_TYPE', 'device entries are not accepted'],
  '4': ['EGJ_ARCHIVE_TYPE', 'device entries are not accepted'],
  '6': ['EGJ_ARCHIVE_TYPE', 'FIFO entries are not accepted'],
};

/** Throw unless `type` is a regular file ('0', the old '\0', or contiguous '7'). */
function refuseNonFile(type: string, name: string): void {
  if (type === '0' || type === '' || type === '7') return;
  const [code, rule] = Object.hasOwn(REFUSED_TYPES, type)
    ? REFUSED_TYPES[type]!
    : (['EGJ_ARCHIVE_TYPE', `entry type ${JSON.stringify(type)} is not a regular file`] as const);
  reject(code, name, rule);
}

type Target =
  | { kind: 'file'; name: string; path: string; abs: string; fd: number; hash: Hash; size: number }
  | { kind: 'memory'; name: string; buf: Buffer; at: number }
  | { kind: 'meta'; type: 'x' | 'g' | 'L'; name: string; buf: Buffer; at: number };

/** The tar state machine: feed it bytes in any chunking; it writes accepted files as they stream. */
class TarReader {
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
  // bookkeeping across entries
  #entries = 0;
  #total = 0;
  #sawPrefixed = false;
  #allowed: ReadonlySet<string> | undefined;
  readonly #files = new Set<string>();
  readonly #foldedFiles = new Map<string, string>();
  readonly #foldedDirs = new Map<string, string>();
  readonly #madeDirs = new Set<string>();
  readonly dirsToSync: string[] = [];
  readonly files: Extracted['files'] = [];
  readonly written: string[] = [];
  readonly inMemory = new Map<string, Buffer>();

  constructor(
    private readonly dir: string,
    private readonly opts: ExtractOptions,
  ) {}

  push(chunk: Buffer): void {
    let pos = 0;
    const len = chunk.length;
    while (pos < len) {
      switch (this.#state) {
        case 'header': {
          let block: Buffer;
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
    this.#resolveAllowed();
  }

  /** Close a file left open by a rejection. */
  close(): void {
    const t = this.#target;
    if (t?.kind === 'file' && t.fd >= 0) {
      closeSync(t.fd);
      t.fd = -1;
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
    const h = new Header(block);
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
    this.#fileEntry(name, size);
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
    if (t.kind === 'file') {
      t.hash.update(data);
      let off = 0;
      try {
        while (off < data.length) off += writeSync(t.fd, data, off, data.length - off);
      } catch (err) {
        throw new IoError('write', t.abs, err);
      }
    } else {
      data.copy(t.buf, t.at);
      t.at += data.length;
    }
  }

  #endBody(): void {
    const t = this.#target!;
    this.#target = null;
    this.#state = this.#pad > 0 ? 'pad' : 'header';
    if (t.kind === 'file') {
      const fd = t.fd;
      t.fd = -1;
      closeSync(fd);
      this.files.push({ path: t.path, sha256: t.hash.digest('hex'), bytes: t.size });
      this.written.push(t.abs);
    } else if (t.kind === 'memory') {
      this.inMemory.set(t.name, t.buf);
    } else {
      this.#endMeta(t.type, t.buf);
    }
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

  #fileEntry(name: string, size: number): void {
    const { opts } = this;
    if (++this.#entries > opts.maxEntries)
      reject('EGJ_ARCHIVE_TOO_MANY', name, `more than ${opts.maxEntries} entries`);
    const problem = pathProblem(name);
    if (problem !== null) reject('EGJ_ARCHIVE_PATH', name, problem);
    if (opts.inMemory !== undefined && Object.hasOwn(opts.inMemory, name)) {
      this.#memoryEntry(name, size);
      return;
    }
    if (!name.startsWith(opts.prefix))
      reject('EGJ_ARCHIVE_NOT_ALLOWED', name, `not under ${JSON.stringify(opts.prefix)}`);
    this.#sawPrefixed = true;
    const path = name.slice(opts.prefix.length);
    const relProblem = pathProblem(path);
    if (relProblem !== null) reject('EGJ_ARCHIVE_PATH', name, relProblem);
    if (!this.#resolveAllowed().has(path))
      reject('EGJ_ARCHIVE_NOT_ALLOWED', name, 'not one of the allowed paths');
    if (this.#files.has(path)) reject('EGJ_ARCHIVE_DUPLICATE', name, 'the same path appears twice');
    const folded = foldedPath(path);
    const twin = this.#foldedFiles.get(folded);
    if (twin !== undefined)
      reject('EGJ_ARCHIVE_TWIN', name, `same path as ${JSON.stringify(twin)} after NFC and case folding`);
    if (this.#foldedDirs.has(folded))
      reject('EGJ_ARCHIVE_FILE_DIR', name, 'a file where an earlier entry needs a directory');
    const dirs = ancestors(path);
    for (const dir of dirs) {
      const f = foldedPath(dir);
      const file = this.#foldedFiles.get(f);
      if (file !== undefined)
        reject(
          'EGJ_ARCHIVE_FILE_DIR',
          name,
          `needs ${JSON.stringify(file)} to be a directory, but it is a file`,
        );
      const seen = this.#foldedDirs.get(f);
      if (seen !== undefined && seen !== dir) {
        reject(
          'EGJ_ARCHIVE_TWIN',
          name,
          `directory ${JSON.stringify(dir)} and ${JSON.stringify(seen)} differ only by case or NFC`,
        );
      }
    }
    if (size > opts.maxFileBytes)
      reject('EGJ_ARCHIVE_TOO_LARGE', name, `header size ${size} is over ${opts.maxFileBytes} bytes`);
    this.#addTotal(name, size);
    this.#files.add(path);
    this.#foldedFiles.set(folded, path);
    for (const dir of dirs) {
      this.#foldedDirs.set(foldedPath(dir), dir);
      if (!this.#madeDirs.has(dir)) this.#mkdir(dir);
    }
    const abs = join(this.dir, path);
    let fd: number;
    try {
      fd = openSync(
        abs,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o644,
      );
    } catch (err) {
      throw new IoError('create', abs, err);
    }
    this.#target = { kind: 'file', name, path, abs, fd, hash: createHash('sha256'), size };
    this.#begin(size);
  }

  #memoryEntry(name: string, size: number): void {
    const max = this.opts.inMemory![name]!;
    if (this.#sawPrefixed) reject('EGJ_ARCHIVE_ORDER', name, 'must come before every file entry');
    if (this.inMemory.has(name)) reject('EGJ_ARCHIVE_DUPLICATE', name, 'the same entry appears twice');
    if (size > max) reject('EGJ_ARCHIVE_TOO_LARGE', name, `header size ${size} is over ${max} bytes`);
    this.#addTotal(name, size);
    this.#target = { kind: 'memory', name, buf: Buffer.alloc(size), at: 0 };
    this.#begin(size);
  }

  #addTotal(name: string, size: number): void {
    this.#total += size;
    if (this.#total > this.opts.maxTotalBytes) {
      reject(
        'EGJ_ARCHIVE_TOO_LARGE',
        name,
        `archive total ${this.#total} is over ${this.opts.maxTotalBytes} bytes`,
      );
    }
  }

  #mkdir(dir: string): void {
    const abs = join(this.dir, dir);
    try {
      mkdirSync(abs, 0o755);
    } catch (err) {
      throw new IoError('mkdir', abs, err);
    }
    this.#madeDirs.add(dir);
    this.dirsToSync.push(abs);
  }

  #resolveAllowed(): ReadonlySet<string> {
    if (this.#allowed === undefined) {
      const a = this.opts.allowed;
      this.#allowed = typeof a === 'function' ? a(this.inMemory) : a;
    }
    return this.#allowed;
  }
}

/** A fresh 0700 directory inside `parent`, checked to be a real, empty directory. */
function makeStaging(parent: string): string {
  let dir: string;
  try {
    dir = mkdtempSync(join(parent, '.extract-'));
  } catch (err) {
    throw new IoError('mkdtemp', parent, err);
  }
  const st = lstatSync(dir);
  if (!st.isDirectory() || (st.mode & 0o777) !== 0o700 || readdirSync(dir).length !== 0) {
    throw new IoError('check staging directory', dir, new Error('not a fresh empty 0700 directory'));
  }
  return dir;
}

function asBuffer(c: Uint8Array): Buffer {
  return Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
}

/** Yield `head` then the rest of `it`; returning early closes `it`. */
async function* resume(head: Buffer, it: AsyncIterator<Uint8Array>): AsyncGenerator<Buffer> {
  let done = false;
  try {
    if (head.length > 0) yield head;
    for (;;) {
      const r = await it.next();
      if (r.done) {
        done = true;
        return;
      }
      yield asBuffer(r.value);
    }
  } finally {
    if (!done) await it.return?.();
  }
}

async function pump(source: AsyncIterable<Uint8Array>, reader: TarReader, maxRatio: number): Promise<void> {
  const it = source[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let headLen = 0;
  let ended = false;
  while (headLen < 2) {
    const r = await it.next();
    if (r.done) {
      ended = true;
      break;
    }
    head.push(asBuffer(r.value));
    headLen += r.value.length;
  }
  const first = Buffer.concat(head);
  const rest = ended ? [first] : resume(first, it);
  if (!(first[0] === 0x1f && first[1] === 0x8b)) {
    for await (const chunk of rest) reader.push(chunk);
    return;
  }
  let inBytes = 0;
  let outBytes = 0;
  const gunzip = createGunzip();
  let zlibError: unknown;
  gunzip.on('error', (err) => {
    zlibError = err;
  });
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const chunk of rest) {
      inBytes += chunk.length;
      yield chunk;
    }
  }
  try {
    await pipeline(counted(), gunzip, async (out: AsyncIterable<Buffer>) => {
      for await (const chunk of out) {
        outBytes += chunk.length;
        if (outBytes > maxRatio * inBytes) {
          reject(
            'EGJ_ARCHIVE_BOMB',
            undefined,
            `gzip expands more than ${maxRatio}x (${outBytes} bytes from ${inBytes})`,
          );
        }
        reader.push(chunk);
      }
    });
  } catch (err) {
    if (err !== zlibError || err instanceof ArchiveRejectedError) throw err;
    const truncated = (err as { code?: string }).code === 'Z_BUF_ERROR';
    reject(
      truncated ? 'EGJ_ARCHIVE_TRUNCATED' : 'EGJ_ARCHIVE_CORRUPT',
      undefined,
      `gzip: ${(err as Error).message}`,
      err,
    );
  }
}

/** fsync every written file, then every directory made, then the staging root. */
async function syncAll(files: readonly string[], dirs: readonly string[]): Promise<void> {
  const syncOne = async (p: string) => {
    const fh = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      await fh.sync();
    } catch (err) {
      throw new IoError('fsync', p, err);
    } finally {
      await fh.close();
    }
  };
  for (const list of [files, dirs]) {
    let next = 0;
    const worker = async () => {
      while (next < list.length) await syncOne(list[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(FSYNC_CONCURRENCY, list.length) }, worker));
  }
}

/** Extract `source` under opts.stagingParent; see the module header for every rule. */
export async function safeExtract(
  source: AsyncIterable<Uint8Array>,
  opts: ExtractOptions,
): Promise<Extracted> {
  if (opts.prefix !== '' && !opts.prefix.endsWith('/')) {
    throw new UsageError(
      'EGJ_EXTRACT_PREFIX',
      `extract prefix ${JSON.stringify(opts.prefix)} must be empty or end in /`,
    );
  }
  const dir = makeStaging(opts.stagingParent);
  const reader = new TarReader(dir, opts);
  try {
    await pump(source, reader, opts.maxRatio ?? DEFAULT_RATIO);
    reader.finish();
    if (opts.sync !== false) await syncAll(reader.written, [...reader.dirsToSync.reverse(), dir]);
    return { dir, files: reader.files, inMemory: reader.inMemory };
  } catch (err) {
    try {
      reader.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    throw err;
  }
}
