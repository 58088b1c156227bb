// A FsPort that "crashes" at its n-th mutating call (an open with write flags, write, fsync, rename, link,
// unlink, mkdir, rm, chmod, ...): that call throws CrashError and so does every later call, as if the process
// had died there (only closeSync still works, standing in for the kernel closing a dead process's files).
// A crashing write first writes half its bytes, so torn files are part of the crash model.
import { constants } from 'node:fs';
import type { FsPort } from '../../src/store/fs-port.js';

export class CrashError extends Error {
  readonly code = 'ECRASH';
  constructor(
    readonly call: string,
    readonly n: number,
  ) {
    super(`simulated crash at mutating call #${n} (${call})`);
  }
}

/** True when `err`, or any error in its cause chain, is a CrashError. */
export function isCrash(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (e instanceof CrashError) return true;
  return false;
}

const MUTATING = new Set([
  'writeSync',
  'fsyncSync',
  'fdatasyncSync',
  'renameSync',
  'linkSync',
  'symlinkSync',
  'unlinkSync',
  'mkdirSync',
  'rmSync',
  'rmdirSync',
  'utimesSync',
  'futimesSync',
  'chmodSync',
  'fchmodSync',
  'ftruncateSync',
  'truncateSync',
  'copyFileSync',
  'writeFileSync',
  'appendFileSync',
]);
const WRITE_FLAGS =
  constants.O_WRONLY | constants.O_RDWR | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND;

function opensForWrite(flags: unknown): boolean {
  if (typeof flags === 'number') return (flags & WRITE_FLAGS) !== 0;
  return typeof flags === 'string' && /[wa+]/.test(flags);
}

export interface CrashingFs extends FsPort {
  /** Mutating calls seen so far (including the one that crashed). */
  readonly mutations: number;
  readonly crashed: boolean;
  /** One line per mutating call: "#n name arg0". */
  readonly log: string[];
}

/** Wrap `real` so that mutating call number `n` (1-based) crashes; n = Infinity only counts. */
export function crashingFs(real: FsPort, n: number, opts: { tearWrites?: boolean } = {}): CrashingFs {
  const tear = opts.tearWrites ?? true;
  const state = { mutations: 0, crashed: false, log: [] as string[] };
  const port: Record<string, unknown> = {};
  const source = real as unknown as Record<string, unknown>;
  for (const name of Object.keys(source)) {
    const fn = source[name];
    if (typeof fn !== 'function') {
      port[name] = fn;
      continue;
    }
    port[name] = (...args: unknown[]) => {
      if (state.crashed) {
        if (name === 'closeSync') return fn.apply(real, args);
        throw new CrashError(`${name} after the crash`, state.mutations);
      }
      const mutating = MUTATING.has(name) || (name === 'openSync' && opensForWrite(args[1]));
      if (mutating) {
        state.mutations += 1;
        state.log.push(
          `#${state.mutations} ${name} ${typeof args[0] === 'string' ? args[0] : String(args[0])}`,
        );
        if (state.mutations === n) {
          state.crashed = true;
          if (tear && name === 'writeSync' && args[1] instanceof Uint8Array) {
            const buf = args[1];
            const offset = typeof args[2] === 'number' ? args[2] : 0;
            const length = typeof args[3] === 'number' ? args[3] : buf.length - offset;
            const half = Math.floor(length / 2);
            if (half > 0)
              (real.writeSync as (fd: number, b: Uint8Array, o: number, l: number) => number)(
                args[0] as number,
                buf,
                offset,
                half,
              );
          }
          throw new CrashError(name, state.mutations);
        }
      }
      return fn.apply(real, args);
    };
  }
  Object.defineProperties(port, {
    mutations: { get: () => state.mutations },
    crashed: { get: () => state.crashed },
    log: { get: () => state.log },
  });
  return port as unknown as CrashingFs;
}
