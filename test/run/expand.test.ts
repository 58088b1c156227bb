// Fan-out expansion (src/run/expand.ts): the four placeholders, a path's parts, --also normalised.
import { describe, expect, it } from 'vitest';
import { expandAll, expandTemplate, hasPlaceholder, normalisePath, pathParts } from '../../src/run/expand.js';

describe("a matched path's parts", () => {
  it.each([
    { path: 'src/pkg/mod.py', dir: 'src/pkg', name: 'mod.py', stem: 'mod' },
    { path: 'mod.py', dir: '.', name: 'mod.py', stem: 'mod' },
    { path: 'a/b.tar.gz', dir: 'a', name: 'b.tar.gz', stem: 'b.tar' },
    { path: 'cfg/.env', dir: 'cfg', name: '.env', stem: '.env' },
    { path: 'Makefile', dir: '.', name: 'Makefile', stem: 'Makefile' },
  ])('$path: dir $dir, name $name, stem $stem', ({ path, dir, name, stem }) => {
    expect(pathParts(path)).toEqual({ path, dir, name, stem });
  });
});

describe('templates', () => {
  it('replaces every placeholder, as often as it appears, and leaves other braces alone', () => {
    const parts = pathParts('src/user.py');
    expect(expandTemplate('Type {path} ({name}, {stem} in {dir}); keep {path}; {x} {{path}} {}', parts)).toBe(
      'Type src/user.py (user.py, user in src); keep src/user.py; {x} {src/user.py} {}',
    );
    expect(expandTemplate('def f(): return {"a": 1}', parts)).toBe('def f(): return {"a": 1}');
  });

  it('knows a template that names no part of the path', () => {
    expect(hasPlaceholder('tests/conftest.py')).toBe(false);
    expect(hasPlaceholder('tests/test_{stem}.py')).toBe(true);
    expect(hasPlaceholder('{dirs}')).toBe(false);
  });

  it('drops empty and . segments of an expanded path, never ..', () => {
    expect(normalisePath('./test_a.py')).toBe('test_a.py');
    expect(normalisePath('/a//b/./c')).toBe('a/b/c');
    expect(normalisePath('a/../b')).toBe('a/../b');
  });
});

describe('one work order per matched path', () => {
  it('expands the instruction and --also per path, dropping repeats and the matched path itself', () => {
    expect(
      expandAll(['a.py', 'src/b.py'], 'Hint {path}', [
        '{dir}/test_{stem}.py',
        '{path}',
        'tests/{stem}.py',
        '{dir}/test_{stem}.py',
      ]),
    ).toEqual([
      { path: 'a.py', instruction: 'Hint a.py', also: ['test_a.py', 'tests/a.py'] },
      { path: 'src/b.py', instruction: 'Hint src/b.py', also: ['src/test_b.py', 'tests/b.py'] },
    ]);
  });
});
