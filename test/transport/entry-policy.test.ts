// EntryPolicy decides from the header alone whether an archive entry is accepted. These tests drive it
// directly and pin what a user reads when an archive is refused: the code, and the message that names
// the entry and the rule. An entry is recorded only once every check passed.
import { describe, expect, it } from 'vitest';
import { ArchiveRejectedError } from '../../src/transport/archive-errors.js';
import { EntryPolicy } from '../../src/transport/entry-policy.js';
import type { ExtractOptions } from '../../src/transport/safe-extract.js';

const ALLOWED = new Set(['a.txt', 'b.txt', 'dir', 'dir/x.txt', 'dir/y.txt', 'Dir/z.txt', 'C:x', 'DIR']);

function policy(over: Partial<ExtractOptions> = {}, inMemory = new Map<string, Buffer>()): EntryPolicy {
  return new EntryPolicy(
    {
      stagingParent: '/nonexistent',
      prefix: 'files/',
      inMemory: { 'job.json': 8 },
      allowed: ALLOWED,
      maxEntries: 100,
      maxFileBytes: 10,
      maxTotalBytes: 20,
      ...over,
    },
    inMemory,
  );
}

/** The refusal `admit` throws, as code and message. */
function refusal(p: EntryPolicy, name: string, size = 1): { code: string; message: string } {
  try {
    p.admit(name, size);
  } catch (err) {
    expect(err).toBeInstanceOf(ArchiveRejectedError);
    const e = err as ArchiveRejectedError;
    expect(e.entry).toBe(name);
    return { code: e.code, message: e.message };
  }
  throw new Error(`${name} was admitted`);
}

describe('EntryPolicy admits', () => {
  it('a prefixed allowed file, naming its contract path and its parent directories outermost first', () => {
    const p = policy({ allowed: new Set(['d/e/f.txt']) });
    expect(p.admit('files/d/e/f.txt', 3)).toEqual({ kind: 'file', path: 'd/e/f.txt', dirs: ['d', 'd/e'] });
  });

  it('an in-memory entry by its exact name, into memory', () => {
    expect(policy().admit('job.json', 8)).toEqual({ kind: 'memory' });
  });

  it('two files in the same directory, spelled the same way', () => {
    const p = policy();
    p.admit('files/dir/x.txt', 1);
    expect(p.admit('files/dir/y.txt', 1)).toEqual({ kind: 'file', path: 'dir/y.txt', dirs: ['dir'] });
  });

  it('exactly maxEntries entries, in-memory ones counted, and refuses the next', () => {
    const p = policy({ maxEntries: 3 });
    p.admit('job.json', 1);
    p.admit('files/a.txt', 1);
    p.admit('files/b.txt', 1);
    expect(refusal(p, 'files/dir/x.txt')).toEqual({
      code: 'EGJ_ARCHIVE_TOO_MANY',
      message: 'archive entry "files/dir/x.txt": more than 3 entries',
    });
  });

  it('a file of exactly maxFileBytes and refuses one byte more', () => {
    const p = policy();
    expect(p.admit('files/a.txt', 10).kind).toBe('file');
    expect(refusal(p, 'files/b.txt', 11)).toEqual({
      code: 'EGJ_ARCHIVE_TOO_LARGE',
      message: 'archive entry "files/b.txt": header size 11 is over 10 bytes',
    });
  });

  it('entries up to exactly maxTotalBytes in all, in-memory ones counted, and refuses one byte more', () => {
    const p = policy();
    p.admit('job.json', 8);
    p.admit('files/a.txt', 10);
    p.admit('files/b.txt', 2);
    expect(refusal(p, 'files/dir/x.txt', 1)).toEqual({
      code: 'EGJ_ARCHIVE_TOO_LARGE',
      message: 'archive entry "files/dir/x.txt": archive total 21 is over 20 bytes',
    });
  });

  it('an in-memory entry of exactly its cap and refuses one byte more', () => {
    expect(policy().admit('job.json', 8).kind).toBe('memory');
    expect(refusal(policy(), 'job.json', 9)).toEqual({
      code: 'EGJ_ARCHIVE_TOO_LARGE',
      message: 'archive entry "job.json": header size 9 is over 8 bytes',
    });
  });

  it('a path, or a file at its directory, after its first entry was refused (a refused entry is not recorded)', () => {
    const again = policy();
    expect(refusal(again, 'files/dir/x.txt', 11).code).toBe('EGJ_ARCHIVE_TOO_LARGE');
    expect(again.admit('files/dir/x.txt', 1).kind).toBe('file');
    const fileAtDir = policy();
    expect(refusal(fileAtDir, 'files/dir/x.txt', 11).code).toBe('EGJ_ARCHIVE_TOO_LARGE');
    expect(fileAtDir.admit('files/dir', 1).kind).toBe('file');
  });
});

describe('EntryPolicy refuses', () => {
  it('an unsafe raw name before looking at the prefix', () => {
    expect(refusal(policy(), '/etc/passwd')).toEqual({
      code: 'EGJ_ARCHIVE_PATH',
      message: 'archive entry "/etc/passwd": path is absolute',
    });
  });

  it('a contract path that is unsafe only once the prefix is cut off', () => {
    expect(refusal(policy(), 'files/C:x')).toEqual({
      code: 'EGJ_ARCHIVE_PATH',
      message: 'archive entry "files/C:x": path starts with a drive letter',
    });
  });

  it('an entry outside the prefix', () => {
    expect(refusal(policy(), 'other/a.txt')).toEqual({
      code: 'EGJ_ARCHIVE_NOT_ALLOWED',
      message: 'archive entry "other/a.txt": not under "files/"',
    });
  });

  it('an in-memory name when the extraction reads nothing into memory', () => {
    expect(refusal(policy({ inMemory: undefined }), 'job.json')).toEqual({
      code: 'EGJ_ARCHIVE_NOT_ALLOWED',
      message: 'archive entry "job.json": not under "files/"',
    });
  });

  it('a contract path the job does not allow', () => {
    expect(refusal(policy(), 'files/c.txt')).toEqual({
      code: 'EGJ_ARCHIVE_NOT_ALLOWED',
      message: 'archive entry "files/c.txt": not one of the allowed paths',
    });
  });

  it('the same path twice', () => {
    const p = policy();
    p.admit('files/a.txt', 1);
    expect(refusal(p, 'files/a.txt')).toEqual({
      code: 'EGJ_ARCHIVE_DUPLICATE',
      message: 'archive entry "files/a.txt": the same path appears twice',
    });
  });

  it('a path equal to an earlier one after case folding', () => {
    const p = policy({ allowed: new Set(['a.txt', 'A.TXT']) });
    p.admit('files/a.txt', 1);
    expect(refusal(p, 'files/A.TXT')).toEqual({
      code: 'EGJ_ARCHIVE_TWIN',
      message: 'archive entry "files/A.TXT": same path as "a.txt" after NFC and case folding',
    });
  });

  it('a file where an earlier entry needs a directory, also when spelled in another case', () => {
    for (const file of ['dir', 'DIR']) {
      const p = policy();
      p.admit('files/dir/x.txt', 1);
      expect(refusal(p, `files/${file}`)).toEqual({
        code: 'EGJ_ARCHIVE_FILE_DIR',
        message: `archive entry "files/${file}": a file where an earlier entry needs a directory`,
      });
    }
  });

  it('an entry below an earlier file', () => {
    const p = policy();
    p.admit('files/dir', 1);
    expect(refusal(p, 'files/dir/x.txt')).toEqual({
      code: 'EGJ_ARCHIVE_FILE_DIR',
      message: 'archive entry "files/dir/x.txt": needs "dir" to be a directory, but it is a file',
    });
  });

  it('a directory spelled differently from the same directory of an earlier entry', () => {
    const p = policy();
    p.admit('files/dir/x.txt', 1);
    expect(refusal(p, 'files/Dir/z.txt')).toEqual({
      code: 'EGJ_ARCHIVE_TWIN',
      message: 'archive entry "files/Dir/z.txt": directory "Dir" and "dir" differ only by case or NFC',
    });
  });

  it('an in-memory entry after the first file entry', () => {
    const p = policy();
    p.admit('files/a.txt', 1);
    expect(refusal(p, 'job.json')).toEqual({
      code: 'EGJ_ARCHIVE_ORDER',
      message: 'archive entry "job.json": must come before every file entry',
    });
  });

  it('an in-memory entry already read', () => {
    const p = policy({}, new Map([['job.json', Buffer.from('{}')]]));
    expect(refusal(p, 'job.json')).toEqual({
      code: 'EGJ_ARCHIVE_DUPLICATE',
      message: 'archive entry "job.json": the same entry appears twice',
    });
  });
});

describe('EntryPolicy.allowed', () => {
  it('calls the function form once, with the in-memory entries, and keeps its answer', () => {
    const memory = new Map([['job.json', Buffer.from('{"paths":["a.txt"]}')]]);
    const seen: Array<Map<string, Buffer>> = [];
    const p = policy(
      {
        allowed: (m) => {
          seen.push(m);
          return new Set(JSON.parse(m.get('job.json')!.toString()).paths as string[]);
        },
      },
      memory,
    );
    expect(p.admit('files/a.txt', 1).kind).toBe('file');
    expect(refusal(p, 'files/b.txt').code).toBe('EGJ_ARCHIVE_NOT_ALLOWED');
    expect([...p.allowed()]).toEqual(['a.txt']);
    expect(seen).toEqual([memory]);
    expect(seen[0]).toBe(memory);
  });
});
