// The filesystem calls the store makes, as one injectable object. Production passes node:fs wrapped by
// namedFs: every failed call becomes EGJ_IO naming the operation, the file (an fd is named by the path it
// was opened with) and the errno — wrapped once, here, where the call is made. Fault-injection tests pass
// a wrapper that fails or "crashes" after a chosen call.
import * as fs from 'node:fs';
import { dirname } from 'node:path';
import { errnoName, isSystemError } from '../core/errno.js';
import { IoError } from '../core/errors.js';

export type FsPort = Pick<
  typeof fs,
  | 'openSync'
  | 'writeSync'
  | 'fsyncSync'
  | 'closeSync'
  | 'linkSync'
  | 'unlinkSync'
  | 'renameSync'
  | 'mkdirSync'
  | 'readFileSync'
  | 'readdirSync'
  | 'lstatSync'
  | 'statSync'
  | 'rmSync'
  | 'rmdirSync'
  | 'utimesSync'
  | 'readSync'
  | 'fstatSync'
  | 'fchmodSync'
>;

/** The operation each call is reported as. */
const OPS: Record<keyof FsPort, string> = {
  openSync: 'open',
  writeSync: 'write',
  fsyncSync: 'fsync',
  closeSync: 'close',
  linkSync: 'link',
  unlinkSync: 'unlink',
  renameSync: 'rename',
  mkdirSync: 'mkdir',
  readFileSync: 'read',
  readdirSync: 'readdir',
  lstatSync: 'lstat',
  statSync: 'stat',
  rmSync: 'remove',
  rmdirSync: 'rmdir',
  utimesSync: 'utimes',
  readSync: 'read',
  fstatSync: 'fstat',
  fchmodSync: 'fchmod',
};

const FD_CALLS = new Set<keyof FsPort>([
  'writeSync',
  'fsyncSync',
  'closeSync',
  'readSync',
  'fstatSync',
  'fchmodSync',
]);

/**
 * `real` with every system error turned into an IoError (errnoOf still sees its errno). A recursive mkdir
 * is done one level at a time, so a failure names the directory that failed and its own errno.
 */
export function namedFs(real: FsPort): FsPort {
  const fdPaths = new Map<number, string>();
  const port: Record<string, unknown> = {};
  for (const name of Object.keys(OPS) as Array<keyof FsPort>) {
    const fn = real[name] as (...args: unknown[]) => unknown;
    port[name] = (...args: unknown[]) => {
      try {
        if (name === 'mkdirSync' && isRecursive(args[1])) return mkdirp(real, String(args[0]), args[1]);
        if (name === 'readFileSync' && encodingOf(args[1]) !== undefined)
          return decodedRead(real, args[0] as fs.PathOrFileDescriptor, args[1]);
        const out = fn.apply(real, args);
        if (name === 'openSync' && typeof out === 'number') fdPaths.set(out, String(args[0]));
        return out;
      } catch (err) {
        if (!isSystemError(err)) throw err;
        throw new IoError(OPS[name], describe(name, args, fdPaths, err), err);
      } finally {
        if (name === 'closeSync') fdPaths.delete(args[0] as number);
      }
    };
  }
  return port as unknown as FsPort;
}

function encodingOf(opts: unknown): BufferEncoding | undefined {
  if (typeof opts === 'string') return opts as BufferEncoding;
  if (typeof opts === 'object' && opts !== null)
    return (opts as { encoding?: BufferEncoding }).encoding ?? undefined;
  return undefined;
}

/**
 * Node 20 reads a file as utf8 in C++ and aborts the process (an internal assertion) when the close
 * fails; read bytes (whose close failure is an ordinary error) and decode them here instead.
 */
function decodedRead(real: FsPort, path: fs.PathOrFileDescriptor, opts: unknown): string {
  const flag = typeof opts === 'object' && opts !== null ? (opts as { flag?: string }).flag : undefined;
  return real.readFileSync(path, { flag }).toString(encodingOf(opts));
}

function isRecursive(opts: unknown): boolean {
  return typeof opts === 'object' && opts !== null && (opts as fs.MakeDirectoryOptions).recursive === true;
}

function describe(name: keyof FsPort, args: unknown[], fdPaths: Map<number, string>, err: unknown): string {
  const failedAt = (err as { path?: unknown }).path;
  if (FD_CALLS.has(name)) return fdPaths.get(args[0] as number) ?? `file descriptor ${String(args[0])}`;
  if (name === 'linkSync' || name === 'renameSync') return `${String(args[0])} → ${String(args[1])}`;
  return typeof failedAt === 'string' ? failedAt : String(args[0]);
}

/** mkdir -p, one level at a time; throws the raw error of the level that failed (its path on it). */
function mkdirp(real: FsPort, path: string, opts: unknown): undefined {
  const mode = (opts as fs.MakeDirectoryOptions).mode;
  try {
    real.mkdirSync(path, { mode });
    return undefined;
  } catch (err) {
    const errno = errnoName(err);
    if (errno === 'EEXIST' && real.statSync(path).isDirectory()) return undefined;
    if (errno !== 'ENOENT' || dirname(path) === path) throw err;
  }
  mkdirp(real, dirname(path), opts);
  try {
    real.mkdirSync(path, { mode });
  } catch (err) {
    if (errnoName(err) !== 'EEXIST' || !real.statSync(path).isDirectory()) throw err;
  }
  return undefined;
}

export const nodeFs: FsPort = namedFs(fs);
