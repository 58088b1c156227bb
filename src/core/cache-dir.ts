// The user's cache directory for genjob: $XDG_CACHE_HOME/genjob, else ~/.cache/genjob. It holds the
// host's result cache and the secrets that seal the user's caches; it is never inside a repository.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { envValue } from './env-value.js';

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME?.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'genjob');
}

/**
 * The result cache `serve` and `cache prune` use: --cache-dir, else GENJOB_CACHE_DIR, else the default. A
 * GENJOB_CACHE_DIR set but empty reads as unset: as a path it named the current directory (for a local
 * serve, the worker's repository), and the cache, its secret included, was made there.
 */
export function resultCacheDir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return flag ?? envValue(env.GENJOB_CACHE_DIR) ?? defaultCacheDir(env);
}
