import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createdPaths, setupDigest } from '../../src/check/setup-cache.js';
import { tempDir } from '../helpers/temp-store.js';

describe('createdPaths', () => {
  it('is each new path at its top: a new directory whole, a new file beside tracked ones, a new link', () => {
    const tree = tempDir('genjob-setup-');
    for (const d of ['src/lib', 'node_modules/a/b', 'src/gen']) mkdirSync(join(tree, d), { recursive: true });
    for (const f of [
      'package.json',
      'src/index.js',
      'src/lib/x.js',
      'node_modules/a/b/c.js',
      'src/gen/out.js',
      'src/built.js',
    ])
      writeFileSync(join(tree, f), '');
    symlinkSync('/nowhere', join(tree, '.venv'));
    const tracked = ['package.json', 'src/index.js', 'src/lib/x.js'];
    expect(createdPaths(tree, tracked)).toEqual(['.venv', 'node_modules', 'src/built.js', 'src/gen']);
  });

  it('never takes a tracked file, nor a tracked directory as a whole', () => {
    const tree = tempDir('genjob-setup-');
    mkdirSync(join(tree, 'a'));
    writeFileSync(join(tree, 'a', 'tracked.txt'), '');
    expect(createdPaths(tree, ['a/tracked.txt'])).toEqual([]);
  });
});

describe('setupDigest', () => {
  const base = { setup: 'npm ci', network: false, env: [] as string[] };
  it('changes with the command, the network, the env names, the sandbox and a pinned file', () => {
    const files = [{ path: 'package-lock.json', sha256: 'a'.repeat(64) }];
    const d = setupDigest(base, files, 'bwrap');
    expect(setupDigest({ ...base, setup: 'npm install' }, files, 'bwrap')).not.toBe(d);
    expect(setupDigest({ ...base, network: true }, files, 'bwrap')).not.toBe(d);
    expect(setupDigest({ ...base, env: ['NPM_TOKEN'] }, files, 'bwrap')).not.toBe(d);
    expect(setupDigest(base, files, 'none')).not.toBe(d);
    expect(setupDigest(base, [{ path: 'package-lock.json', sha256: 'b'.repeat(64) }], 'bwrap')).not.toBe(d);
    expect(setupDigest(base, [...files], 'bwrap')).toBe(d);
  });
});
