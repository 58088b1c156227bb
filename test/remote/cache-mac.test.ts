// The host cache secret, created by whichever serve comes first: a serve that starts while another is
// still writing the secret (its writes held back 1 s by strace) reads a whole secret, the same one.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCacheSecret } from '../../src/remote/cache-mac.js';
import { bundleChild } from '../helpers/bundle-child.js';

const CHILD = `
import { loadCacheSecret } from '../../src/remote/cache-mac.js';
loadCacheSecret(process.argv[2]).then((s) => process.stdout.write(s.toString('hex')));
`;

const run = promisify(execFile);

let tmp: string;
let childJs: string;
beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'gj-secret-'));
  childJs = await bundleChild(CHILD, import.meta.dirname, tmp);
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('the host cache secret', () => {
  it('is one whole secret for a serve that starts while another is still writing it', async () => {
    const cache = join(tmp, 'race');
    mkdirSync(cache);
    // the first serve's write() calls are each held back 1 s: its secret file is created, not yet written
    const slow = run('strace', [
      '-f',
      '-o',
      '/dev/null',
      '-e',
      'trace=write',
      '-e',
      'inject=write:delay_enter=1000000',
      process.execPath,
      childJs,
      cache,
    ]);
    while (readdirSync(cache).length === 0) await new Promise((r) => setTimeout(r, 5));
    const quick = await run(process.execPath, [childJs, cache]);
    const first = await slow;
    expect(quick.stdout).toMatch(/^[0-9a-f]{64}$/);
    expect(first.stdout).toBe(quick.stdout);
    // only the secret is left behind, readable by its owner alone
    expect(readdirSync(cache)).toEqual(['secret']);
    expect(statSync(join(cache, 'secret')).mode & 0o777).toBe(0o600);
  });

  it('is kept across serves', async () => {
    const cache = join(tmp, 'kept');
    mkdirSync(cache);
    const first = await loadCacheSecret(cache);
    expect((await loadCacheSecret(cache)).equals(first)).toBe(true);
  });
});
