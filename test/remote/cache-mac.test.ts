import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadCacheSecret } from '../../src/remote/cache-mac.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gj-secret-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the host cache secret', () => {
  it('is one secret for serves that start at the same moment: none of them reads it half written', async () => {
    const secrets = await Promise.all(Array.from({ length: 16 }, () => loadCacheSecret(dir)));
    expect(new Set(secrets.map((s) => s.toString('hex'))).size).toBe(1);
    expect(secrets[0]).toHaveLength(32);
    // only the secret is left, readable by its owner alone
    expect(readdirSync(dir)).toEqual(['secret']);
    expect(statSync(join(dir, 'secret')).mode & 0o777).toBe(0o600);
  });

  it('is kept across serves', async () => {
    const first = await loadCacheSecret(dir);
    expect((await loadCacheSecret(dir)).equals(first)).toBe(true);
  });
});
