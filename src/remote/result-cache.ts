// The generator host's result cache: one entry per (key, generator, job digest) under
// $XDG_CACHE_HOME/genjob (default ~/.cache/genjob). A redelivered job — a retry, a reaped
// lease, a second worker — is answered from here, so the generator runs once per key per host.
// An entry is built in tmp/ and renamed into results/ whole; a per-entry lock makes racing
// deliveries wait for the first generation instead of starting a second one.
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import type { Output } from './workspace-diff.js';

export interface CachedResult {
  job_digest: string;
  status: 'ok' | 'rejected' | 'aborted';
  reason: string | null;
  outputs: Output[];
  generator: { command: string; version: string | null };
  timings: { started_at: string; finished_at: string; generate_ms: number };
  usage?: { prompt_tokens: number; completion_tokens: number; requests: number };
}

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME?.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'genjob');
}

export class ResultCache {
  constructor(readonly dir: string) {}

  async init(): Promise<void> {
    for (const d of ['results', 'tmp', 'work', 'locks'])
      await mkdir(join(this.dir, d), { recursive: true, mode: 0o700 });
  }

  entryName(key: string, generator: string, jobDigest: string, plane = 'live'): string {
    // the plane is part of the key: a shadow answer is never served to a live request, nor the reverse
    // (live keeps its pre-plane name, so existing entries stay valid)
    const planePart = plane === 'live' ? '' : `\0${plane}`;
    const g = createHash('sha256')
      .update(`${generator}\0${jobDigest}${planePart}`)
      .digest('hex')
      .slice(0, 16);
    return `${key}.${g}`;
  }

  entryDir(name: string): string {
    return join(this.dir, 'results', name);
  }

  async read(name: string): Promise<CachedResult | undefined> {
    try {
      return JSON.parse(await readFile(join(this.entryDir(name), 'result.json'), 'utf8')) as CachedResult;
    } catch {
      return undefined;
    }
  }

  /** A fresh private directory for one attempt (workspace, job file, raw answers). */
  async scratch(): Promise<string> {
    return mkdtemp(join(this.dir, 'work', 'a-'));
  }

  /** Move a finished entry (built in `built`, holding result.json and files/) into place. */
  async commit(name: string, built: string): Promise<void> {
    try {
      await rename(built, this.entryDir(name));
    } catch {
      await rm(built, { recursive: true, force: true }); // someone committed it first: theirs stands
    }
  }

  /** Set an entry aside and delete it (only for a deliberate retry of an aborted generation). */
  async discard(name: string): Promise<void> {
    const aside = join(this.dir, 'tmp', `discard-${name}-${process.pid}-${Date.now()}`);
    try {
      await rename(this.entryDir(name), aside);
    } catch {
      return; // no such entry
    }
    await rm(aside, { recursive: true, force: true });
  }

  async tmpDir(): Promise<string> {
    return mkdtemp(join(this.dir, 'tmp', 'r-'));
  }

  /** Hold the entry's lock while generating; waits (up to hours) for another delivery of the same job. */
  async lock(name: string): Promise<() => Promise<void>> {
    const path = join(this.dir, 'locks', name);
    const release = await lockfile.lock(path, {
      realpath: false,
      lockfilePath: `${path}.lock`,
      stale: 20_000,
      retries: { retries: 20_000, minTimeout: 100, maxTimeout: 1000 },
      onCompromised: () => {
        // another process took the lock after ours looked stale; commit() keeps the first entry
      },
    });
    return async () => {
      await release().catch(() => {});
    };
  }
}
