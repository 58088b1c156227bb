// The user's cache directory for genjob: $XDG_CACHE_HOME/genjob, else ~/.cache/genjob. It holds the
// host's result cache and the secrets that seal the user's caches; it is never inside a repository.
import { homedir } from 'node:os';
import { join } from 'node:path';

export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME?.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'genjob');
}
