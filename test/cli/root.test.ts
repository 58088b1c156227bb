import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findRoot } from '../../src/cli/root.js';

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'gj-root-'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

describe('findRoot', () => {
  it.each([
    { marker: '.git', sub: 'a/b' },
    { marker: '.gen', sub: 'deep/er/still' },
  ])('walks up from a subdirectory to the directory holding $marker', ({ marker, sub }) => {
    mkdirSync(join(tmp, marker));
    mkdirSync(join(tmp, sub), { recursive: true });
    expect(findRoot(undefined, join(tmp, sub))).toBe(tmp);
  });

  it('prefers --root, resolved from the working directory', () => {
    mkdirSync(join(tmp, 'repo'));
    expect(findRoot('repo', tmp)).toBe(join(tmp, 'repo'));
  });

  it('says what to do when there is no repository above', () => {
    expect(() => findRoot(undefined, tmp)).toThrow(
      /no \.gen\/ or \.git\/ here or above; run inside a repository or pass --root/,
    );
  });

  it('refuses a --root that does not exist', () => {
    expect(() => findRoot('nope', tmp)).toThrow(/--root must name an existing directory/);
  });
});
