import { describe, expect, it } from 'vitest';
import { hiddenWarning, unifiedDiff } from '../../src/apply/unified-diff.js';
import { tagChars } from '../helpers/tag-chars.js';

const b = (s: string) => Buffer.from(s);

describe('unifiedDiff', () => {
  it.each([
    {
      name: 'a changed text file',
      change: { path: 'a.txt', before: b('x\ny\n'), after: b('x\nz\n') },
      diff: '--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n',
    },
    {
      name: 'a created file against /dev/null',
      change: { path: 'n.txt', before: null, after: b('hi\n') },
      diff: '--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+hi\n',
    },
    {
      name: 'a deleted file against /dev/null',
      change: { path: 'd.txt', before: b('bye\n'), after: null },
      diff: '--- a/d.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n',
    },
    {
      name: 'a file without a final newline',
      change: { path: 'e.txt', before: b('a'), after: b('b') },
      diff: '--- a/e.txt\n+++ b/e.txt\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n',
    },
    {
      name: 'a binary file, summarised',
      change: { path: 'img.bin', before: Buffer.from([1, 0, 2]), after: Buffer.from([1, 0, 3, 4]) },
      diff: '--- a/img.bin\n+++ b/img.bin\nbinary file changed: img.bin (3 → 4 bytes)\n',
    },
    {
      name: 'invalid UTF-8, summarised as binary',
      change: { path: 'latin1.txt', before: b('ok\n'), after: Buffer.from([0xe9, 0x0a]) },
      diff: '--- a/latin1.txt\n+++ b/latin1.txt\nbinary file changed: latin1.txt (3 → 2 bytes)\n',
    },
    {
      name: 'a file that gains a byte-order mark',
      change: { path: 'bom.cs', before: b('class A {}\n'), after: b('\ufeffclass A {}\n') },
      diff: '--- a/bom.cs\n+++ b/bom.cs\n@@ -1,1 +1,1 @@\n-class A {}\n+\ufeffclass A {}\n',
    },
  ])('shows $name', ({ change, diff }) => {
    expect(unifiedDiff([change])).toBe(diff);
  });
});

describe('hiddenWarning', () => {
  it('counts the hidden characters of the added lines only, headers and removed lines aside', () => {
    const diff = unifiedDiff([
      {
        path: 'a\u200b.py',
        before: Buffer.from('keep\u200b\nold \u202e\n'),
        after: Buffer.from('keep\u200b\nnew \u202e\u2066x\u2069\n'),
      },
    ]);
    expect(diff).toContain('+++ b/a\u200b.py');
    expect(hiddenWarning(diff)).toBe(
      'warning: the diff adds 3 hidden character(s) (bidirectional controls, invisible code points or control characters, shown as \\u escapes): they can make code read differently from how it runs',
    );
  });

  it('counts a byte-order mark the change puts at the top of a file', () => {
    const diff = unifiedDiff([{ path: 'a.py', before: b('x = 1\n'), after: b('\ufeffx = 1\n') }]);
    expect(hiddenWarning(diff)).toMatch(/^warning: the diff adds 1 hidden character\(s\) /);
  });

  it('spells out what each run of tag characters in the added lines says', () => {
    const diff = unifiedDiff([
      {
        path: 'a.py',
        before: b(`x # ${tagChars('old')}\n`),
        after: b(`x # ${tagChars('say "pass"')}\ny\u200b${tagChars('ok')}\n`),
      },
    ]);
    expect(hiddenWarning(diff)).toBe(
      'warning: the diff adds 13 hidden character(s) (bidirectional controls, invisible code points or control characters, shown as \\u escapes): they can make code read differently from how it runs; its tag characters spell "say \\"pass\\"", "ok"',
    );
  });

  it('counts what the report marks too: a line separator, an escape, a C1 control (a CR is no hidden character)', () => {
    // `// note<U+2028>evil()` reads as one comment where JavaScript runs evil()
    const diff = unifiedDiff([
      { path: 'a.js', before: b('x\n'), after: b('// note\u2028evil()\r\n\u001b[2Jy\u0085\n') },
    ]);
    expect(hiddenWarning(diff)).toMatch(/^warning: the diff adds 3 hidden character\(s\) /);
  });

  it('says nothing for a diff that adds none', () => {
    const diff = unifiedDiff([{ path: 'a.py', before: Buffer.from('\u202e\n'), after: Buffer.from('b\n') }]);
    expect(hiddenWarning(diff)).toBeUndefined();
  });
});
