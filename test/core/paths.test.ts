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
    { path: 'vendor/lib/.git/config', problem: /inside \.git/ },
    { path: '.GIT/hooks/pre-commit', problem: /inside \.git/ },
    { path: '.Git/config', problem: /inside \.git/ },
    { path: '.GEN/queue/x.json', problem: /inside \.gen/ },
    { path: 'a/.gEn/x', problem: /inside \.gen/ },
    { path: '.g\u200cit/config', problem: /inside \.git.*\\u200c/ },
    { path: '\ufeff.git/config', problem: /inside \.git/ },
    { path: '.gi\u202et/config', problem: /inside \.git/ },
    { path: 'GIT~1/config', problem: /inside \.git/ },
    { path: 'sub/git~1/config', problem: /inside \.git/ },
    { path: 'GEN~1/queue/x.json', problem: /inside \.gen/ },
    { path: '.git./config', problem: /inside \.git/ },
    { path: '.git . ./config', problem: /inside \.git/ },
    { path: '.git /config', problem: /inside \.git/ },
    { path: '.gen../x', problem: /inside \.gen/ },
    { path: '.git::$INDEX_ALLOCATION/config', problem: /inside \.git/ },
    { path: '.gitignore', problem: null },
    { path: '.gitmodules', problem: null },
    { path: '.github/x', problem: null },
    { path: '.general/x', problem: null },
    { path: 'git~2/x', problem: null },
    { path: 'a.git/x', problem: null },
    { path: 'gen/x', problem: null },
    { path: '.git-x/y', problem: null },
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
