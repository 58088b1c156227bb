import { describe, expect, it } from 'vitest';
import { ancestors, foldedPath, pathProblem } from '../../src/core/paths.js';

describe('pathProblem', () => {
  it.each([
    { path: 'src/a.py', problem: null },
    { path: 'a', problem: null },
    { path: '.github/workflows/ci.yml', problem: null },
    { path: '__proto__', problem: null },
    { path: '', problem: /empty/ },
    { path: '/etc/passwd', problem: /absolute/ },
    { path: '../x', problem: /'\.\.'/ },
    { path: 'a/../b', problem: /'\.\.'/ },
    { path: './a', problem: /'\.'/ },
    { path: 'a//b', problem: /empty component/ },
    { path: 'a/', problem: /empty component/ },
    { path: 'a\\b', problem: /backslash/ },
    { path: 'a\0b', problem: /NUL/ },
    { path: 'a\nb', problem: /control/ },
    { path: 'C:/x', problem: /drive letter/ },
    { path: 'a\ud800b', problem: /UTF-8/ },
    { path: `${'d/'.repeat(40)}f`, problem: /deeper/ },
    { path: 'x'.repeat(256), problem: /component is longer/ },
    { path: '.git/config', problem: /inside \.git/ },
    { path: '.gen/x', problem: /inside \.gen/ },
  ])('judges $path', ({ path, problem }) => {
    const got = pathProblem(path);
    if (problem === null) expect(got).toBeNull();
    else expect(got).toMatch(problem);
  });

  it('refuses a value that is not a string', () => {
    expect(pathProblem(42)).toMatch(/not a string/);
  });
});

describe('path helpers', () => {
  it('lists ancestors shortest first', () => {
    expect(ancestors('a/b/c')).toEqual(['a', 'a/b']);
    expect(ancestors('a')).toEqual([]);
  });
  it('folds case and Unicode form', () => {
    expect(foldedPath('Caf\u00e9')).toBe(foldedPath('cafe\u0301'));
  });
});
