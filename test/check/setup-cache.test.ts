import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createdPaths,
  findSetup,
  linkSetup,
  publishSetup,
  SETUP_DIR,
  setupDigest,
} from '../../src/check/setup-cache.js';
import { tempDir, tempStore } from '../helpers/temp-store.js';

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
  const head = 'c'.repeat(40);
  it('changes with the command, the network, the env names, the sandbox, HEAD’s tree and a pinned file', () => {
    const files = [{ path: 'package-lock.json', sha256: 'a'.repeat(64) }];
    const d = setupDigest(base, head, files, 'bwrap');
    expect(setupDigest({ ...base, setup: 'npm install' }, head, files, 'bwrap')).not.toBe(d);
    expect(setupDigest({ ...base, network: true }, head, files, 'bwrap')).not.toBe(d);
    expect(setupDigest({ ...base, env: ['NPM_TOKEN'] }, head, files, 'bwrap')).not.toBe(d);
    expect(setupDigest(base, head, files, 'none')).not.toBe(d);
    // any tracked file setup may run (a script no pin names) changes HEAD's tree
    expect(setupDigest(base, 'd'.repeat(40), files, 'bwrap')).not.toBe(d);
    expect(
      setupDigest(base, head, [{ path: 'package-lock.json', sha256: 'b'.repeat(64) }], 'bwrap'),
    ).not.toBe(d);
    expect(setupDigest(base, head, [...files], 'bwrap')).toBe(d);
  });
});

describe('linkSetup', () => {
  /** An entry holding vendor/cache/dep.txt and node_modules/, and a run tree beside a directory of the user's. */
  function setting() {
    const base = tempDir('genjob-setup-');
    const entry = join(base, 'entry');
    mkdirSync(join(entry, 'vendor', 'cache'), { recursive: true });
    mkdirSync(join(entry, 'node_modules'));
    writeFileSync(join(entry, 'vendor', 'cache', 'dep.txt'), 'dep\n');
    const tree = join(base, 'tree');
    const outside = join(base, 'outside');
    mkdirSync(tree);
    mkdirSync(outside);
    return { entry, tree, outside };
  }

  it('links each path into the tree, making the directories on the way', () => {
    const { entry, tree } = setting();
    linkSetup({ tree: entry, paths: ['vendor/cache', 'node_modules'] }, tree);
    expect(readlinkSync(join(tree, 'vendor', 'cache'))).toBe(join(entry, 'vendor', 'cache'));
    expect(lstatSync(join(tree, 'vendor')).isDirectory()).toBe(true);
    expect(readlinkSync(join(tree, 'node_modules'))).toBe(join(entry, 'node_modules'));
  });

  it('never goes through a symbolic link the tree holds on the way, nor past a file there', () => {
    const { entry, tree, outside } = setting();
    symlinkSync(outside, join(tree, 'vendor'));
    writeFileSync(join(tree, 'lib'), 'a tracked file\n');
    linkSetup({ tree: entry, paths: ['vendor/cache', 'lib/x', 'node_modules'] }, tree);
    expect(readdirSync(outside)).toEqual([]);
    expect(readlinkSync(join(tree, 'vendor'))).toBe(outside);
    expect(readlinkSync(join(tree, 'node_modules'))).toBe(join(entry, 'node_modules'));
  });

  it("links no path that leaves the tree ('..', absolute, empty components)", () => {
    const { entry, tree, outside } = setting();
    const base = join(tree, '..');
    linkSetup(
      { tree: entry, paths: ['../outside/planted', `${'../'.repeat(20)}${outside.slice(1)}/x`, ''] },
      tree,
    );
    expect(readdirSync(outside)).toEqual([]);
    expect(readdirSync(tree)).toEqual([]);
    expect(readdirSync(base).sort()).toEqual(['entry', 'outside', 'tree']);
  });
});

describe('findSetup', () => {
  const secret = Buffer.alloc(32, 7);

  it("ignores a manifest that names a path outside the entry's tree, or is not JSON", () => {
    const store = tempStore('genjob-setup-');
    const digest = 'a'.repeat(64);
    const dir = join(store.layout.dir(SETUP_DIR), digest);
    mkdirSync(join(dir, 'tree'), { recursive: true });
    for (const manifest of [
      '{"paths":["../../x"]}',
      '{"paths":["/etc"]}',
      '{"paths":"x"}',
      '{"paths":[',
      '{}',
    ]) {
      writeFileSync(join(dir, 'manifest.json'), manifest);
      expect(findSetup(store, digest, secret), manifest).toBeUndefined();
    }
  });

  /** A setup result (node_modules/a.js, .bin/tool) published for `digest` under `secret`. */
  function published(digest = 'b'.repeat(64)) {
    const store = tempStore('genjob-setup-');
    const tree = tempDir('genjob-setup-tree-');
    mkdirSync(join(tree, 'node_modules', '.bin'), { recursive: true });
    writeFileSync(join(tree, 'node_modules', 'a.js'), 'exports.a = 1;\n');
    writeFileSync(join(tree, 'node_modules', '.bin', 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(tree, 'package.json'), '{}\n');
    const staging = join(store.layout.staging, 'setup-entry');
    const entry = publishSetup(store, digest, { tree, tracked: ['package.json'], staging }, secret);
    return { store, digest, entry, dir: join(store.layout.dir(SETUP_DIR), digest) };
  }

  it('finds an entry this user published, sealed over its name, its paths and every file of its tree', () => {
    const { store, digest, entry, dir } = published();
    expect(entry).toEqual({ tree: join(dir, 'tree'), paths: ['node_modules'] });
    expect(findSetup(store, digest, secret)).toEqual(entry);
  });

  const tampering: Array<{ name: string; change: (dir: string) => void }> = [
    { name: 'a file changed', change: (d) => writeFileSync(join(d, 'tree', 'node_modules', 'a.js'), 'x\n') },
    {
      name: 'a file added',
      change: (d) => writeFileSync(join(d, 'tree', 'node_modules', '.bin', 'node'), ''),
    },
    {
      name: 'a file made executable',
      change: (d) => chmodSync(join(d, 'tree', 'node_modules', 'a.js'), 0o755),
    },
    { name: 'a file removed', change: (d) => rmSync(join(d, 'tree', 'node_modules', 'a.js')) },
    {
      name: 'a file swapped for a link',
      change: (d) => {
        rmSync(join(d, 'tree', 'node_modules', 'a.js'));
        symlinkSync('/etc/passwd', join(d, 'tree', 'node_modules', 'a.js'));
      },
    },
    {
      name: 'the paths widened',
      change: (d) => {
        const m = JSON.parse(readFileSync(join(d, 'manifest.json'), 'utf8'));
        writeFileSync(
          join(d, 'manifest.json'),
          JSON.stringify({ ...m, paths: ['node_modules', 'unittest'] }),
        );
      },
    },
  ];
  for (const t of tampering)
    it(`never trusts an entry after it was published: ${t.name}`, () => {
      const { store, digest, dir } = published();
      t.change(dir);
      expect(findSetup(store, digest, secret)).toBeUndefined();
    });

  it("never trusts an entry under another user's secret, nor one moved to another digest", () => {
    const { store, digest, dir } = published();
    expect(findSetup(store, digest, Buffer.alloc(32, 8))).toBeUndefined();
    const other = 'c'.repeat(64);
    renameSync(dir, join(store.layout.dir(SETUP_DIR), other));
    expect(findSetup(store, other, secret)).toBeUndefined();
  });

  it('never trusts an unsealed entry (as a branch commits it), and the next publish replaces it', () => {
    const { store, digest, dir } = published();
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ paths: ['node_modules'] }));
    expect(findSetup(store, digest, secret)).toBeUndefined();
    const tree = tempDir('genjob-setup-tree-');
    mkdirSync(join(tree, 'deps'));
    writeFileSync(join(tree, 'deps', 'lib.txt'), 'one\n');
    const staging = join(store.layout.staging, 'setup-entry-2');
    const entry = publishSetup(store, digest, { tree, tracked: [], staging }, secret);
    expect(entry.paths).toEqual(['deps']);
    expect(findSetup(store, digest, secret)).toEqual(entry);
    expect(readdirSync(join(dir, 'tree'))).toEqual(['deps']);
    expect(readdirSync(store.layout.staging)).toEqual([]);
  });

  it('without a secret keeps the result in its staging directory for this check only', () => {
    const store = tempStore('genjob-setup-');
    const tree = tempDir('genjob-setup-tree-');
    mkdirSync(join(tree, 'deps'));
    const staging = join(store.layout.staging, 'setup-entry');
    const entry = publishSetup(store, 'd'.repeat(64), { tree, tracked: [], staging }, null);
    expect(entry).toEqual({ tree: join(staging, 'tree'), paths: ['deps'] });
    expect(lstatSync(join(store.layout.dir(SETUP_DIR)), { throwIfNoEntry: false })).toBeUndefined();
  });
});
