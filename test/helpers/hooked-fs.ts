// A Store on the same .gen/ whose every filesystem call passes through a hook first: the hook fails the
// call (throws an errno error) or acts as another process between two calls (moves or writes files with
// node:fs), then calls `proceed` for the real call. Failures are named by namedFs, as in production.
import * as fs from 'node:fs';
import { type FsPort, namedFs, nodeFs } from '../../src/store/fs-port.js';
import { Store } from '../../src/store/store.js';

export type FsHook = (call: keyof FsPort, args: unknown[], proceed: () => unknown) => unknown;

const rawFs: FsPort = fs;

export function hookedStore(store: Store, hook: FsHook): Store {
  const port: Record<string, unknown> = {};
  for (const name of Object.keys(nodeFs) as Array<keyof FsPort>) {
    const real = rawFs[name] as (...args: unknown[]) => unknown;
    port[name] = (...args: unknown[]) => hook(name, args, () => real.apply(rawFs, args));
  }
  return new Store(store.root, namedFs(port as unknown as FsPort));
}

/** An error shaped like the ones Node's fs throws. */
export function sysError(code: string, errno: number, syscall: string, path?: string): Error {
  const message = `${code}: ${syscall}${path ? ` '${path}'` : ''}`;
  return Object.assign(new Error(message), { code, errno, syscall, ...(path ? { path } : {}) });
}
