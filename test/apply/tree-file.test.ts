// Reading and replacing repository files (tree-file.ts) against a real temp repository: the bytes and
// modes read, what a race with another process does to each step, the temps left (none) and the
// directory fsyncs made, and the exact refusal a user sees.
import * as fs from 'node:fs';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  commitTreeFiles,
  currentFile,
  readObject,
  readTreeFile,
  removeTreeFile,
  sweepTornTemps,
  TREE_TMP_PREFIX,
} from '../../src/apply/tree-file.js';
import { type GenjobError, IoError } from '../../src/core/errors.js';
import { sha256Hex } from '../../src/core/sha256.js';
import type { FsPort } from '../../src/store/fs-port.js';
import { Store } from '../../src/store/store.js';
import { type FsHook, hookedStore, sysError } from '../helpers/hooked-fs.js';
import { thrown } from '../helpers/thrown.js';
import { readOrNull, removeTempDirs, snapshot, tempDir, writeTree } from './fixture.js';

afterEach(removeTempDirs);

const sha = (s: string | Buffer) => sha256Hex(s);
const short = (s: string) => sha(s).slice(0, 12);

function repo(files: Record<string, string | { bytes: string; mode: number }> = {}): Store {
  const root = tempDir();
  writeTree(root, files);
  return new Store(root).ensure();
}

/** A Store on raw node:fs (no namedFs), each call through `hook`: errors reach tree-file.ts unnamed. */
function rawHookedStore(store: Store, hook: FsHook): Store {
  const port: Record<string, unknown> = {};
  const raw = fs as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const name of Object.keys(store.fs) as Array<keyof FsPort>) {
    port[name] = (...args: unknown[]) => hook(name, args, () => raw[name]!.apply(fs, args));
  }
  return new Store(store.root, port as unknown as FsPort);
}

/** Directory fsyncs made through `store`: opens with O_DIRECTORY, by absolute path. */
function countingDirSyncs(store: Store): { store: Store; synced: string[] } {
  const synced: string[] = [];
  const counted = hookedStore(store, (call, args, proceed) => {
    if (call === 'openSync' && typeof args[1] === 'number' && (args[1] & fs.constants.O_DIRECTORY) !== 0)
      synced.push(String(args[0]));
    return proceed();
  });
  return { store: counted, synced };
}

/** One file through commitTreeFiles, `context` said of any failure. */
function commitTreeFile(
  store: Store,
  path: string,
  expected: string | null,
  bytes: Buffer,
  mode: number,
  context: string,
): void {
  commitTreeFiles(store, [{ path, expected, mode, bytes: () => bytes }], {
    untouched: () => context,
    partial: () => context,
  });
}

function temps(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.startsWith(TREE_TMP_PREFIX));
}

describe('reading the tree', () => {
  it('reads the bytes and permission bits of a file, an empty file, and nothing where there is none', () => {
    const store = repo({ 'bin/run.sh': { bytes: '#!/bin/sh\n', mode: 0o750 }, 'empty.txt': '' });
    expect(readTreeFile(store, 'bin/run.sh')).toEqual({ bytes: Buffer.from('#!/bin/sh\n'), mode: 0o750 });
    expect(readTreeFile(store, 'empty.txt')).toEqual({ bytes: Buffer.alloc(0), mode: 0o644 });
    expect(readTreeFile(store, 'bin/absent.sh')).toBeNull();
    expect(readTreeFile(store, 'no/such/dir/file')).toBeNull();
    expect(currentFile(store, 'bin/run.sh')).toEqual({ sha256: sha('#!/bin/sh\n'), mode: 0o750 });
    expect(currentFile(store, 'bin/absent.sh')).toEqual({ sha256: null, mode: null });
  });

  it('reads a file whole even when it grew after its size was taken', () => {
    const store = repo({ 'log.txt': 'x'.repeat(1000) });
    // fstat reports an empty file: the buffer starts at 1 byte and has to grow ten times
    const lying = hookedStore(store, (call, _args, proceed) => {
      const out = proceed();
      if (call !== 'fstatSync') return out;
      return Object.assign(Object.create(Object.getPrototypeOf(out)), out, { size: 0 });
    });
    expect(readTreeFile(lying, 'log.txt')?.bytes.toString()).toBe('x'.repeat(1000));
  });

  it('closes every file it opens', () => {
    const store = repo({ 'a.txt': 'a\n' });
    const open = new Set<unknown>();
    const watched = hookedStore(store, (call, args, proceed) => {
      const out = proceed();
      if (call === 'openSync') open.add(out);
      if (call === 'closeSync') open.delete(args[0]);
      return out;
    });
    readTreeFile(watched, 'a.txt');
    readObject(watched, writeObject(store, 'obj\n'));
    expect(open.size).toBe(0);
  });

  it.each([
    {
      name: 'replaced by a symlink',
      race: (abs: string) => {
        unlinkSync(abs);
        symlinkSync('/etc/passwd', abs);
      },
      rule: 'the target is a symlink',
    },
    {
      name: 'replaced by a directory',
      race: (abs: string) => {
        unlinkSync(abs);
        mkdirSync(abs);
      },
      rule: 'the target is not a regular file',
    },
  ])('refuses a target $name between its check and its read with EGJ_UNSAFE_PATH', ({ race, rule }) => {
    const store = repo({ 'src/a.ts': 'a\n' });
    const abs = join(store.root, 'src/a.ts');
    const racing = hookedStore(store, (call, args, proceed) => {
      if (call === 'openSync' && args[0] === abs) race(abs);
      return proceed();
    });
    const err = thrown<GenjobError>(() => readTreeFile(racing, 'src/a.ts'));
    expect([err.code, err.exitCode]).toEqual(['EGJ_UNSAFE_PATH', 4]);
    expect(err.message).toBe(
      `src/a.ts: ${rule}; genjob never writes outside the repository or through a symlink`,
    );
  });

  it('reads nothing where a file vanished between its check and its read', () => {
    const store = repo({ 'src/a.ts': 'a\n' });
    const abs = join(store.root, 'src/a.ts');
    const racing = hookedStore(store, (call, args, proceed) => {
      if (call === 'openSync' && args[0] === abs) unlinkSync(abs);
      return proceed();
    });
    expect(readTreeFile(racing, 'src/a.ts')).toBeNull();
  });

  it('reports any other failed read as EGJ_IO naming the read and the file', () => {
    const store = repo({ 'src/a.ts': 'a\n' });
    const abs = join(store.root, 'src/a.ts');
    const failing = rawHookedStore(store, (call, _args, proceed) => {
      if (call === 'readSync') throw sysError('EIO', -5, 'read');
      return proceed();
    });
    const err = thrown<GenjobError>(() => readTreeFile(failing, 'src/a.ts'));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe(`${abs}: read failed: i/o error (EIO)`);
  });
});

function writeObject(store: Store, content: string): string {
  const digest = sha(content);
  writeFileSync(store.layout.object(digest), content);
  return digest;
}

describe('reading objects/', () => {
  it('returns the bytes of an object that hash to its name', () => {
    const store = repo();
    expect(readObject(store, writeObject(store, 'kept bytes\n')).toString()).toBe('kept bytes\n');
  });

  it('refuses a missing object with EGJ_OBJECT_MISSING (exit 3) naming it', () => {
    const store = repo();
    const file = store.layout.object(sha('gone'));
    const err = thrown<GenjobError>(() => readObject(store, sha('gone')));
    expect([err.code, err.exitCode]).toEqual(['EGJ_OBJECT_MISSING', 3]);
    expect(err.message).toBe(`${file}: object is missing; the bytes it names cannot be written`);
    expect(err.details()).toEqual({ file });
  });

  it('refuses an object whose bytes do not hash to its name with EGJ_OBJECT_CORRUPT (exit 3)', () => {
    const store = repo();
    const digest = sha('original');
    const file = store.layout.object(digest);
    writeFileSync(file, 'bit rot');
    const err = thrown<GenjobError>(() => readObject(store, digest));
    expect([err.code, err.exitCode]).toEqual(['EGJ_OBJECT_CORRUPT', 3]);
    expect(err.message).toBe(`${file}: bytes hash to ${short('bit rot')}, not to their name`);
    expect(err.details()).toEqual({ file });
  });

  it('never follows a symlink in objects/', () => {
    const store = repo({ 'plain.txt': 'kept bytes\n' });
    const digest = sha('kept bytes\n');
    const file = store.layout.object(digest);
    symlinkSync(join(store.root, 'plain.txt'), file);
    const err = thrown<GenjobError>(() => readObject(store, digest));
    expect(err).toBeInstanceOf(IoError);
    expect((err as IoError).errno).toBe('ELOOP');
  });

  it('reports an object that is a directory as EGJ_IO naming the read and the file', () => {
    const store = repo();
    const digest = sha('x');
    const file = store.layout.object(digest);
    mkdirSync(file);
    const err = thrown<GenjobError>(() => readObject(store, digest));
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toBe(`${file}: read failed: EFTYPE`);
    expect((err.cause as Error).message).toBe(`${file}: not a regular file`);
  });
});

describe('replacing files', () => {
  it('replaces a file with the new bytes and mode, creates a new one, leaves no temp and fsyncs each directory once', () => {
    const store = repo({ 'src/a.ts': 'a = 1\n', 'src/b.ts': 'b = 1\n' });
    const { store: counted, synced } = countingDirSyncs(store);
    commitTreeFiles(
      counted,
      [
        { path: 'src/a.ts', expected: sha('a = 1\n'), mode: 0o600, bytes: () => Buffer.from('a = 2\n') },
        { path: 'src/c.ts', expected: null, mode: 0o755, bytes: () => Buffer.from('c\n') },
        { path: 'lib/d.ts', expected: null, mode: 0o644, bytes: () => Buffer.from('d\n') },
      ],
      { untouched: () => 'unused', partial: () => 'unused' },
    );
    expect(readOrNull(store.root, 'src/a.ts')?.toString()).toBe('a = 2\n');
    expect(statSync(join(store.root, 'src/a.ts')).mode & 0o777).toBe(0o600);
    expect(readOrNull(store.root, 'src/c.ts')?.toString()).toBe('c\n');
    expect(statSync(join(store.root, 'src/c.ts')).mode & 0o777).toBe(0o755);
    expect(readOrNull(store.root, 'lib/d.ts')?.toString()).toBe('d\n');
    expect(temps(join(store.root, 'src'))).toEqual([]);
    expect(temps(join(store.root, 'lib'))).toEqual([]);
    // the root for the new lib/ (before its file is linked) and again once lib/d.ts's temp has left it;
    // then src/ and lib/ after their files: each once
    expect(synced.sort()).toEqual(
      [store.root, store.root, join(store.root, 'lib'), join(store.root, 'src')].sort(),
    );
  });

  it('writes nothing, leaves no temp and fsyncs nothing when the first target is stale', () => {
    const store = repo({ 'src/a.ts': 'my edit\n' });
    const { store: counted, synced } = countingDirSyncs(store);
    const err = thrown<GenjobError>(() =>
      commitTreeFile(counted, 'src/a.ts', sha('a = 1\n'), Buffer.from('a = 2\n'), 0o644, 'the context'),
    );
    expect(err.code).toBe('EGJ_STALE');
    expect(err.message).toBe(
      `src/a.ts: the repository changed under the job (expected sha256 ${short('a = 1\n')}, found sha256 ${short('my edit\n')}); the context`,
    );
    expect(readOrNull(store.root, 'src/a.ts')?.toString()).toBe('my edit\n');
    expect(temps(join(store.root, 'src'))).toEqual([]);
    expect(synced).toEqual([]);
  });

  it('never clobbers a file another process created just before the link, and says what it found', () => {
    const store = repo({ 'src/a.ts': 'a\n' });
    const abs = join(store.root, 'src/new.ts');
    const racing = hookedStore(store, (call, args, proceed) => {
      if (call === 'linkSync' && args[1] === abs) writeFileSync(abs, 'theirs\n');
      return proceed();
    });
    const err = thrown<GenjobError>(() =>
      commitTreeFile(racing, 'src/new.ts', null, Buffer.from('ours\n'), 0o644, 'ctx'),
    );
    expect(err.code).toBe('EGJ_STALE');
    expect(err.message).toBe(
      `src/new.ts: the repository changed under the job (expected absent, found sha256 ${short('theirs\n')}); ctx`,
    );
    expect(readOrNull(store.root, 'src/new.ts')?.toString()).toBe('theirs\n');
    expect(temps(join(store.root, 'src'))).toEqual([]);
  });

  it.each([
    { call: 'linkSync', op: 'link', path: 'src/new.ts', expected: null },
    { call: 'renameSync', op: 'rename', path: 'src/a.ts', expected: sha('a\n') },
  ] as const)(
    'reports a failed $op as EGJ_IO naming it and the target, and removes its temp',
    ({ call, op, path, expected }) => {
      const store = repo({ 'src/a.ts': 'a\n' });
      const failing = rawHookedStore(store, (c, _args, proceed) => {
        if (c === call) throw sysError('EIO', -5, op);
        return proceed();
      });
      const err = thrown<GenjobError>(() =>
        commitTreeFile(failing, path, expected, Buffer.from('new\n'), 0o644, 'ctx'),
      );
      expect(err).toBeInstanceOf(IoError);
      expect(err.message).toBe(`${join(store.root, path)}: ${op} failed: i/o error (EIO); ctx`);
      expect(temps(join(store.root, 'src'))).toEqual([]);
    },
  );
});

describe('a batch that fails: all or nothing up to its first commit', () => {
  /** Words that say which was said, in `said`. */
  function sayer() {
    const said: string[] = [];
    const words = {
      untouched: (stale: boolean) => {
        said.push(`untouched ${stale}`);
        return 'nothing was written';
      },
      partial: (stale: boolean) => {
        said.push(`partial ${stale}`);
        return 'the batch is partial';
      },
    };
    return { said, words };
  }
  /** Three files in two directories, one of them (lib/deep/) still to be made; the words say which were said. */
  function batch(hook: FsHook) {
    const store = repo({ 'src/a.ts': 'a\n', 'src/b.ts': 'b\n' });
    const { said, words } = sayer();
    const commits = [
      { path: 'lib/deep/new.ts', expected: null, mode: 0o644, bytes: () => Buffer.from('new\n') },
      { path: 'src/a.ts', expected: sha('a\n'), mode: 0o644, bytes: () => Buffer.from('a2\n') },
      { path: 'src/b.ts', expected: sha('b\n'), mode: 0o644, bytes: () => Buffer.from('b2\n') },
    ];
    const before = snapshot(store.root, ['.gen']);
    const run = () => thrown<GenjobError>(() => commitTreeFiles(hookedStore(store, hook), commits, words));
    return { store, said, before, run };
  }
  const allTemps = (root: string) =>
    [...snapshot(root, ['.gen']).keys()].filter((p) => p.split('/').pop()!.startsWith(TREE_TMP_PREFIX));

  it('writes every temp before it commits anything: a full disk at the last temp leaves the tree byte for byte as it was', () => {
    let temps = 0;
    const b = batch((call, args, proceed) => {
      if (call === 'openSync' && String(args[0]).includes(TREE_TMP_PREFIX) && ++temps === 3)
        throw sysError('ENOSPC', -28, 'open', String(args[0]));
      return proceed();
    });
    const err = b.run();
    expect(err).toBeInstanceOf(IoError);
    expect(err.message).toMatch(/: open failed: no space left on device \(ENOSPC\); nothing was written$/);
    expect(snapshot(b.store.root, ['.gen'])).toEqual(b.before);
    expect(b.said).toEqual(['untouched false']);
  });

  it('makes the missing directories only after the temps, and removes the ones it made when one cannot be made', () => {
    const events: string[] = [];
    const b = batch((call, args, proceed) => {
      if (call === 'mkdirSync' && String(args[0]).endsWith('/deep')) throw sysError('ENOSPC', -28, 'mkdir');
      if (call === 'mkdirSync' || (call === 'openSync' && String(args[0]).includes(TREE_TMP_PREFIX)))
        events.push(
          `${call} ${String(args[0])
            .slice(b.store.root.length + 1)
            .replace(/\.genjob-tmp-.*/, 'tmp')}`,
        );
      return proceed();
    });
    const err = b.run();
    expect(err.message).toMatch(
      /lib\/deep: mkdir failed: no space left on device \(ENOSPC\); nothing was written$/,
    );
    // the temp of lib/deep/new.ts waited in the repository root, the deepest directory there was
    expect(events).toEqual(['openSync tmp', 'openSync src/tmp', 'openSync src/tmp', 'mkdirSync lib']);
    expect(existsSync(join(b.store.root, 'lib'))).toBe(false);
    expect(snapshot(b.store.root, ['.gen'])).toEqual(b.before);
    expect(b.said).toEqual(['untouched false']);
  });

  it('commits the files to create first, and says the batch is partial when a commit fails after one', () => {
    const b = batch((call, args, proceed) => {
      if (call === 'renameSync' && String(args[1]).endsWith('/src/b.ts')) throw sysError('EIO', -5, 'rename');
      return proceed();
    });
    const err = b.run();
    expect(err.message).toMatch(/\/src\/b\.ts: rename failed: i\/o error \(EIO\); the batch is partial$/);
    expect(readOrNull(b.store.root, 'lib/deep/new.ts')?.toString()).toBe('new\n');
    expect(readOrNull(b.store.root, 'src/a.ts')?.toString()).toBe('a2\n');
    expect(readOrNull(b.store.root, 'src/b.ts')?.toString()).toBe('b\n');
    expect(allTemps(b.store.root)).toEqual([]);
    expect(b.said).toEqual(['partial false']);
  });

  it('says a target found changed before the first commit left the tree untouched, and after it, partial', () => {
    let edit = 'src/a.ts';
    const hook: FsHook = (call, args, proceed) => {
      if (call === 'linkSync' && String(args[1]).endsWith('/lib/deep/new.ts'))
        writeFileSync(join(String(args[1]), '../../../', edit), 'theirs\n');
      return proceed();
    };
    const b = batch(hook);
    const err = b.run();
    expect(err.code).toBe('EGJ_STALE');
    expect(err.message).toMatch(/^src\/a\.ts: .*; the batch is partial$/);
    expect(b.said).toEqual(['partial true']);
    expect(allTemps(b.store.root)).toEqual([]);

    edit = 'lib/deep/new.ts'; // the create itself races: nothing committed, but lib/deep/ now holds their file
    const c = batch(hook);
    expect(c.run().message).toMatch(
      /^lib\/deep\/new\.ts: .*\(expected absent, found sha256 \w+\); the batch is partial$/,
    );
    expect(c.said).toEqual(['partial true']);
    expect(readOrNull(c.store.root, 'lib/deep/new.ts')?.toString()).toBe('theirs\n');
    expect(readOrNull(c.store.root, 'src/a.ts')?.toString()).toBe('a\n');

    // in a directory that was there: nothing committed, nothing left
    const store = repo({ 'src/a.ts': 'a\n' });
    const { said, words } = sayer();
    const racing = hookedStore(store, (call, args, proceed) => {
      if (call === 'linkSync' && String(args[1]).endsWith('/src/new.ts'))
        writeFileSync(String(args[1]), 'theirs\n');
      return proceed();
    });
    const err3 = thrown<GenjobError>(() =>
      commitTreeFiles(
        racing,
        [
          { path: 'src/a.ts', expected: sha('a\n'), mode: 0o644, bytes: () => Buffer.from('a2\n') },
          { path: 'src/new.ts', expected: null, mode: 0o644, bytes: () => Buffer.from('ours\n') },
        ],
        words,
      ),
    );
    expect(err3.message).toMatch(/^src\/new\.ts: .*; nothing was written$/);
    expect(said).toEqual(['untouched true']);
    expect(readOrNull(store.root, 'src/a.ts')?.toString()).toBe('a\n');
    expect(allTemps(store.root)).toEqual([]);
  });
});

describe('removing a created file', () => {
  it('removes it when it still holds the expected bytes, and fsyncs its directory', () => {
    const store = repo({ 'src/new.ts': 'b\n' });
    const { store: counted, synced } = countingDirSyncs(store);
    removeTreeFile(counted, 'src/new.ts', sha('b\n'), 'ctx');
    expect(readOrNull(store.root, 'src/new.ts')).toBeNull();
    expect(synced).toEqual([join(store.root, 'src')]);
  });

  it('keeps an edited file and says so', () => {
    const store = repo({ 'src/new.ts': 'edited\n' });
    const err = thrown<GenjobError>(() => removeTreeFile(store, 'src/new.ts', sha('b\n'), 'ctx'));
    expect(err.code).toBe('EGJ_STALE');
    expect(err.message).toBe(
      `src/new.ts: the repository changed under the job (expected sha256 ${short('b\n')}, found sha256 ${short('edited\n')}); ctx`,
    );
    expect(readOrNull(store.root, 'src/new.ts')?.toString()).toBe('edited\n');
  });

  it('makes no directory for a file that is already gone', () => {
    const store = repo();
    const err = thrown<GenjobError>(() => removeTreeFile(store, 'gone/deeper/new.ts', sha('b\n'), 'ctx'));
    expect(err.code).toBe('EGJ_STALE');
    expect(existsSync(join(store.root, 'gone'))).toBe(false);
  });

  it('reports a failed unlink as EGJ_IO naming it and the file', () => {
    const store = repo({ 'src/new.ts': 'b\n' });
    const failing = rawHookedStore(store, (call, _args, proceed) => {
      if (call === 'unlinkSync') throw sysError('EIO', -5, 'unlink');
      return proceed();
    });
    const err = thrown<GenjobError>(() => removeTreeFile(failing, 'src/new.ts', sha('b\n'), 'ctx'));
    expect(err.message).toBe(`${join(store.root, 'src/new.ts')}: unlink failed: i/o error (EIO)`);
  });
});

describe('sweeping torn temps', () => {
  it('removes only genjob temps in the directories of the paths, returns them, and fsyncs only where it removed', () => {
    const store = repo({
      'src/a.ts': 'a\n',
      [`src/${TREE_TMP_PREFIX}torn`]: 'half',
      'src/keep.genjob-tmp-': 'mine',
      'lib/b.ts': 'b\n',
      [`other/${TREE_TMP_PREFIX}x`]: 'not swept: no path there',
    });
    const { store: counted, synced } = countingDirSyncs(store);
    const removed = sweepTornTemps(counted, ['src/a.ts', 'lib/b.ts', 'gone/c.ts']);
    expect(removed).toEqual([join(store.root, 'src', `${TREE_TMP_PREFIX}torn`)]);
    expect(readdirSync(join(store.root, 'src')).sort()).toEqual(['a.ts', 'keep.genjob-tmp-']);
    expect(readdirSync(join(store.root, 'other'))).toEqual([`${TREE_TMP_PREFIX}x`]);
    expect(synced).toEqual([join(store.root, 'src')]);
    expect(existsSync(join(store.root, 'gone'))).toBe(false);
  });

  it('does not fail when another recovery removed a temp first', () => {
    const store = repo({ [`src/${TREE_TMP_PREFIX}torn`]: 'half' });
    const torn = join(store.root, 'src', `${TREE_TMP_PREFIX}torn`);
    const racing = hookedStore(store, (call, _args, proceed) => {
      const out = proceed();
      if (call === 'readdirSync') rmSync(torn, { force: true });
      return out;
    });
    expect(sweepTornTemps(racing, ['src/a.ts'])).toEqual([torn]);
  });
});
