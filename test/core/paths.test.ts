// The one rule for a contract path: each refusal with the exact message a user sees, the byte, depth and
// component limits at their edges, and every spelling a filesystem folds to .git or .gen.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ancestors, foldedPath, pathProblem, reservedAlias } from '../../src/core/paths.js';

const EMPTY = 'path has an empty component (// or a trailing /)';
const GIT = 'path is inside .git/';
const GEN = 'path is inside .gen/';
/** The message for a component that is a reserved name only after folding; `shown` as the message writes it. */
const aliased = (shown: string, reserved: '.git' | '.gen') =>
  `path is inside ${reserved}/ (component ${shown} is ${reserved} after case folding, HFS+ or NTFS aliasing)`;

describe('pathProblem', () => {
  it.each([
    { path: 'src/a.py', problem: null },
    { path: 'a', problem: null },
    { path: '.github/workflows/ci.yml', problem: null },
    { path: '__proto__', problem: null },
    { path: 'a b/c~d', problem: null },
    { path: 'x/c:d', problem: null },
    { path: '1:x', problem: null },
    { path: 'caf\u00e9/\u{1f600}.txt', problem: null },
    { path: '', problem: 'path is empty' },
    { path: '/etc/passwd', problem: 'path is absolute' },
    { path: '../x', problem: "path has a '..' component" },
    { path: 'a/../b', problem: "path has a '..' component" },
    { path: './a', problem: "path has a '.' component" },
    { path: 'a/.', problem: "path has a '.' component" },
    { path: 'a//b', problem: EMPTY },
    { path: 'a/', problem: EMPTY },
    { path: 'a\\b', problem: 'path contains a backslash' },
    { path: 'a\0b', problem: 'path contains NUL' },
    { path: 'a\nb', problem: 'path contains a control character' },
    { path: 'a\x01b', problem: 'path contains a control character' },
    { path: 'a\x1fb', problem: 'path contains a control character' },
    { path: 'a\x7fb', problem: 'path contains a control character' },
    { path: 'a\ud800b', problem: 'path is not valid UTF-8 (lone surrogate)' },
    { path: 'a\udfffb', problem: 'path is not valid UTF-8 (lone surrogate)' },
    { path: 'C:/x', problem: 'path starts with a drive letter' },
    { path: 'A:x', problem: 'path starts with a drive letter' },
    { path: 'Z:x', problem: 'path starts with a drive letter' },
    { path: 'a:x', problem: 'path starts with a drive letter' },
    { path: 'z:x', problem: 'path starts with a drive letter' },
    { path: `${'d/'.repeat(40)}f`, problem: 'path is deeper than 32 components' },
    { path: 'x'.repeat(256), problem: 'a component is longer than 255 bytes' },
    { path: '.git/config', problem: GIT },
    { path: '.git', problem: GIT },
    { path: '.gen/x', problem: GEN },
    { path: 'vendor/lib/.git/config', problem: GIT },
    { path: '.GIT/hooks/pre-commit', problem: aliased('".GIT"', '.git') },
    { path: '.Git/config', problem: aliased('".Git"', '.git') },
    { path: '.GEN/queue/x.json', problem: aliased('".GEN"', '.gen') },
    { path: 'a/.gEn/x', problem: aliased('".gEn"', '.gen') },
    { path: '.g\u200cit/config', problem: aliased('".g\\u200cit"', '.git') },
    { path: '.g\u200fit/config', problem: aliased('".g\\u200fit"', '.git') },
    { path: '.g\u200ci\u200dt/config', problem: aliased('".g\\u200ci\\u200dt"', '.git') },
    { path: '\ufeff.git/config', problem: aliased('"\\ufeff.git"', '.git') },
    { path: '.gi\u202at/config', problem: aliased('".gi\\u202at"', '.git') },
    { path: '.gi\u202et/config', problem: aliased('".gi\\u202et"', '.git') },
    { path: '.ge\u206an/x', problem: aliased('".ge\\u206an"', '.gen') },
    { path: '.ge\u206fn/x', problem: aliased('".ge\\u206fn"', '.gen') },
    { path: '.g\u200bit/config', problem: null },
    { path: '.g\u2010it/config', problem: null },
    { path: 'GIT~1/config', problem: aliased('"GIT~1"', '.git') },
    { path: 'sub/git~1/config', problem: aliased('"git~1"', '.git') },
    { path: 'GEN~1/queue/x.json', problem: aliased('"GEN~1"', '.gen') },
    { path: 'gen~1/x', problem: aliased('"gen~1"', '.gen') },
    { path: '.git./config', problem: aliased('".git."', '.git') },
    { path: '.git . ./config', problem: aliased('".git . ."', '.git') },
    { path: '.git /config', problem: aliased('".git "', '.git') },
    { path: '.gen../x', problem: aliased('".gen.."', '.gen') },
    { path: '.git::$INDEX_ALLOCATION/config', problem: aliased('".git::$INDEX_ALLOCATION"', '.git') },
    { path: '.git:/config', problem: aliased('".git:"', '.git') },
    { path: '.git:\u00e9/config', problem: aliased('".git:\\u00e9"', '.git') },
    { path: '.gitignore', problem: null },
    { path: '.gitmodules', problem: null },
    { path: '.github/x', problem: null },
    { path: '.general/x', problem: null },
    { path: 'git~2/x', problem: null },
    { path: 'git~1x/y', problem: null },
    { path: 'a.git/x', problem: null },
    { path: 'x.git:/y', problem: null },
    { path: 'gen/x', problem: null },
    { path: '.git-x/y', problem: null },
    { path: '.gitx:/y', problem: null },
  ])('judges $path', ({ path, problem }) => {
    expect(pathProblem(path)).toBe(problem);
  });

  it('refuses a value that is not a string', () => {
    expect(pathProblem(42)).toBe('path is not a string');
  });

  it('allows exactly 1024 bytes, counted in bytes not characters', () => {
    const part = (n: number) => 'x'.repeat(n);
    const longest = [part(204), part(204), part(204), part(204), part(204)].join('/'); // 5·204 + 4 slashes
    expect(Buffer.byteLength(longest)).toBe(1024);
    expect(pathProblem(longest)).toBeNull();
    expect(pathProblem(`${longest}x`)).toBe('path is longer than 1024 bytes');
    // 1019 characters, 1025 bytes: six 'é' of two bytes each
    const wide = `${'\u00e9'.repeat(6)}${part(193)}/${[part(204), part(204), part(204), part(204)].join('/')}`;
    expect(wide.length).toBeLessThan(1024);
    expect(Buffer.byteLength(wide)).toBe(1025);
    expect(pathProblem(wide)).toBe('path is longer than 1024 bytes');
  });

  it('allows exactly 32 components', () => {
    expect(pathProblem(Array(32).fill('d').join('/'))).toBeNull();
    expect(pathProblem(Array(33).fill('d').join('/'))).toBe('path is deeper than 32 components');
  });

  it('allows a component of exactly 255 bytes, counted in bytes not characters', () => {
    expect(pathProblem('x'.repeat(255))).toBeNull();
    expect(pathProblem(`a/${'x'.repeat(255)}/b`)).toBeNull();
    expect(pathProblem(`a/${'\u00e9'.repeat(128)}`)).toBe('a component is longer than 255 bytes');
  });
});

describe('reservedAlias', () => {
  it('names the reserved directory a component folds to, or null', () => {
    expect(reservedAlias('.git')).toBe('.git');
    expect(reservedAlias('GEN~1')).toBe('.gen');
    expect(reservedAlias('.GIT')).toBe('.git');
    expect(reservedAlias('src')).toBeNull();
  });
});

/** The rules as first written, every check on every path: what the ASCII shortcut must agree with. */
function referenceProblem(p: string): string | null {
  const alias = (part: string) => {
    const folded = part
      .normalize('NFC')
      .replace(/[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/gu, '')
      .toLowerCase();
    const m = /^(?:\.(git|gen)|(git|gen)~1)[. ]*(?::.*)?$/.exec(folded);
    return m === null ? null : `.${m[1] ?? m[2]}`;
  };
  if (p.length === 0) return 'path is empty';
  if (p.includes('\0')) return 'path contains NUL';
  if (p.includes('\\')) return 'path contains a backslash';
  if (/[\x00-\x1f\x7f]/.test(p)) return 'path contains a control character';
  if (/\p{Cs}/u.test(p)) return 'path is not valid UTF-8 (lone surrogate)';
  if (p.startsWith('/')) return 'path is absolute';
  if (/^[A-Za-z]:/.test(p)) return 'path starts with a drive letter';
  if (Buffer.byteLength(p) > 1024) return 'path is longer than 1024 bytes';
  const parts = p.split('/');
  if (parts.length > 32) return 'path is deeper than 32 components';
  for (const part of parts) {
    if (part === '') return EMPTY;
    if (part === '.' || part === '..') return `path has a '${part}' component`;
    if (Buffer.byteLength(part) > 255) return 'a component is longer than 255 bytes';
    const reserved = alias(part);
    if (reserved !== null) return part === reserved ? `path is inside ${reserved}/` : 'aliased';
  }
  return null;
}

describe('the printable-ASCII shortcut', () => {
  it('decides every path as the full rules do (property)', () => {
    // the letters of every alias, the characters each rule looks for, and some that only Unicode folds
    const unit = fc.constantFrom(...'./gGiItTeEnN~1: a-_\\\0\x1f\x7fzé\u200c\ufeffİ\ud800\udc00K\u212a');
    const path = fc.oneof(
      fc.string({ unit, maxLength: 24 }),
      fc.array(fc.string({ unit, maxLength: 300 }), { maxLength: 40 }).map((xs) => xs.join('/')),
    );
    fc.assert(
      fc.property(path, (p) => {
        const got = pathProblem(p);
        const want = referenceProblem(p);
        expect(got?.startsWith('path is inside') && want === 'aliased' ? 'aliased' : got).toBe(want);
      }),
      { numRuns: 2000 },
    );
  });

  it('still folds a component that is not ASCII to its reserved name', () => {
    expect(reservedAlias('.g\u200cit')).toBe('.git');
    expect(reservedAlias('.GE\u004e ')).toBe('.gen');
  });
});

describe('path helpers', () => {
  it('lists ancestors shortest first', () => {
    expect(ancestors('a/b/c')).toEqual(['a', 'a/b']);
    expect(ancestors('a')).toEqual([]);
  });
  it('folds case and Unicode form', () => {
    expect(foldedPath('Caf\u00e9')).toBe('caf\u00e9');
    expect(foldedPath('CAFE\u0301')).toBe('caf\u00e9');
  });
});
