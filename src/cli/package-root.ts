// Find genjob's own install directory (where bin/genjob.js lives), from the built bundle or
// from source under a test runner alike: walk up from this module to genjob's package.json.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readText } from '../core/read-text.js';

let cached: string | undefined;

export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readText(pkg)) as { name?: string }).name === 'genjob') {
      cached = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('genjob package.json not found above its modules');
    dir = up;
  }
}

export function cliEntry(): string {
  return join(packageRoot(), 'bin', 'genjob.js');
}
