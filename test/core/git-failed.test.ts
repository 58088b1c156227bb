// A git command's failure is bad input (exit 2) unless what git says is that the disk failed under it
// (exit 5, as EGJ_IO): git's real words, as it printed them on a full disk in the suite's runs.
import { describe, expect, it } from 'vitest';
import { GitFailedError } from '../../src/core/errors.js';

describe('GitFailedError', () => {
  const disk = [
    "fatal: sha1 file '/r/.gen/staging/.check-1/index.lock' write error. Out of diskspace",
    'error: unable to write file /r/.gen/staging/.check-1/tree/src/a.py',
    'fatal: unable to write new index file',
    'error: unable to write loose object file',
    "fatal: could not open '/r/.git/objects/ab/cd' for writing: No space left on device",
    "fatal: unable to create '/r/.git/index.lock': Disk quota exceeded",
    'fatal: failed to read object 1234: Input/output error',
    "fatal: could not create '/r/.git/refs/x': Read-only file system",
  ];
  for (const stderr of disk)
    it(`exits 5 when git says ${JSON.stringify(stderr.slice(0, 48))}…`, () => {
      const e = new GitFailedError(['read-tree', 'HEAD'], 128, `${stderr}\n`);
      expect(e.exitCode).toBe(5);
      expect(e.code).toBe('EGJ_GIT');
    });

  const input = [
    "fatal: ambiguous argument 'main..HEAD': unknown revision or path not in the working tree.",
    "fatal: 'origin' does not appear to be a git repository",
    'fatal: not a git repository (or any of the parent directories): .git',
    "fatal: unable to create '/r/.git/index.lock': File exists.",
    'Author identity unknown',
    '',
  ];
  for (const stderr of input)
    it(`exits 2 when git says ${JSON.stringify(stderr.slice(0, 48))}`, () => {
      expect(new GitFailedError(['commit'], 128, stderr).exitCode).toBe(2);
    });

  it('reads every line git printed, not only the three the message quotes', () => {
    const stderr = ['unable to write file a', 'b', 'c', 'd', 'e'].join('\n');
    const e = new GitFailedError(['checkout-index', '-a'], 1, stderr);
    expect(e.message).not.toContain('unable to write');
    expect(e.exitCode).toBe(5);
  });

  it("keeps git's first fatal line, which names what failed, with the last three", () => {
    const stderr = [
      "fatal: 'origin' does not appear to be a git repository",
      'fatal: Could not read from remote repository.',
      '',
      'Please make sure you have the correct access rights',
      'and the repository exists.',
    ].join('\n');
    const e = new GitFailedError(['fetch', '--quiet', 'origin'], 128, stderr);
    expect(e.message).toBe(
      "git fetch --quiet failed (exit 128): fatal: 'origin' does not appear to be a git repository | fatal: Could not read from remote repository. | Please make sure you have the correct access rights | and the repository exists.",
    );
    expect(e.within('pull from origin').message).toBe(`pull from origin: ${e.message}`);
    const long = new GitFailedError(['x'], 1, [`error: ${'y'.repeat(1000)}`, 'a', 'b', 'c', 'd'].join('\n'));
    expect(long.message).toBe(`git x failed (exit 1): error: ${'y'.repeat(293)}… | … | b | c | d`);
  });
});
