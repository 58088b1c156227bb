// A file's change drawn side by side and unified: removed runs paired with the added runs after them,
// changed words marked, line numbers on both sides, a created file as all additions; binary, identical
// and too-large changes are a note instead of a table. Each table is captioned with its file's path and
// headed by its sides, and a changed line is marked by a - or + (and a word) as well as by colour.
import { describe, expect, it } from 'vitest';
import { diffView } from '../../src/report/diff-view.js';

const L = { path: 'a.txt', old: 'before', new: 'after' };

const b = (s: string) => Buffer.from(s);
const cells = (markup: string, cls: string) =>
  [...markup.matchAll(new RegExp(`<td class="${cls}">(.*?)</td>`, 'g'))].map((m) => m[1]);

describe('diffView', () => {
  it('pairs a changed line with its new version and marks the words that changed', () => {
    const v = diffView(b('a\nkeep\nold words here\nz\n'), b('a\nkeep\nnew words here\nz\n'), L);
    if (v.kind !== 'text') throw new Error(v.note);
    expect([v.added, v.removed]).toEqual([1, 1]);
    expect(v.split.markup).toContain(
      '<td class="del"><del>old</del> words here</td><td class="ln add">3</td><td class="sign add"><span aria-hidden="true">+</span><span class="vh">added</span></td><td class="add"><ins>new</ins> words here</td>',
    );
    expect(cells(v.unified.markup, 'sign del')).toEqual([
      '<span aria-hidden="true">-</span><span class="vh">removed</span>',
    ]);
    expect(cells(v.unified.markup, 'del')).toEqual(['old words here']);
    expect(cells(v.unified.markup, 'add')).toEqual(['new words here']);
    expect(v.split.markup).toContain('@@ -1,4 +1,4 @@');
  });

  it('draws an added run longer than the removed one with empty cells on the old side', () => {
    const v = diffView(b('x\n'), b('y\ny2\ny3\n'), L);
    if (v.kind !== 'text') throw new Error(v.note);
    expect([v.added, v.removed]).toEqual([3, 1]);
    expect(
      v.split.markup.match(
        /<td class="ln empty"><\/td><td class="sign empty"><\/td><td class="empty"><\/td>/g,
      ),
    ).toHaveLength(2);
  });

  it('draws a created file as additions only', () => {
    const v = diffView(null, b('one\ntwo\n'), L);
    if (v.kind !== 'text') throw new Error(v.note);
    expect([v.added, v.removed]).toEqual([2, 0]);
    expect(cells(v.unified.markup, 'add')).toEqual(['one', 'two']);
  });

  it('counts the hidden characters the added lines bring in, not those the file already had', () => {
    const v = diffView(b('keep\u200b\nold\n'), b('keep\u200b\nnew \u202e\u2066x\u2069\n'), L);
    if (v.kind !== 'text') throw new Error(v.note);
    expect(v.hidden).toBe(3);
    expect(v.unified.markup).not.toMatch(/[\u200b\u202e\u2066\u2069]/u);
    const plain = diffView(b('a\n'), b('b\n'), L);
    expect(plain.kind === 'text' && plain.hidden).toBe(0);
  });

  it('hostile: counts the line separators and controls the added lines bring in, and draws none', () => {
    const v = diffView(
      b('hello\nworld\n'),
      b('hello\n// note\u2028evil()\nif (r === "admin\u007f") grant()\nworld\n'),
      L,
    );
    if (v.kind !== 'text') throw new Error(v.note);
    expect(v.hidden).toBe(2);
    expect(v.split.markup).not.toMatch(/[\u007f\u2028]/u);
    expect(v.unified.markup).toContain(
      '// note<span class="hidden-char" role="img" aria-label="hidden character: line separator, U+2028" title="line separator">U+2028</span>evil()',
    );
  });

  it('hostile: draws a CRLF line and a missing newline at the end, which read as unchanged otherwise', () => {
    const v = diffView(b('hello\nworld\n'), b('hello\r\nworld'), L);
    if (v.kind !== 'text') throw new Error(v.note);
    expect([v.added, v.removed, v.hidden]).toEqual([2, 2, 0]);
    const cr =
      '<span class="cr-char" role="img" aria-label="carriage return" title="carriage return">&#9229;</span>';
    expect(cells(v.unified.markup, 'add')).toEqual([`hello${cr}`, 'world']);
    expect(v.unified.markup).toContain(
      '<td class="add">world</td></tr><tr><td class="ln"></td><td class="ln"></td><td class="sign"></td><td class="no-eol">\\ No newline at end of file</td></tr>',
    );
    expect(v.split.markup).toContain('world <span class="no-eol">\\ No newline at end of file</span></td>');
  });

  it('hostile: summarises a diff whose markup would pass the budget, and counts what its added lines bring in', () => {
    const soft = b(`${'\u00ad'.repeat(999)}\n`.repeat(20));
    const v = diffView(null, soft, L, 100_000);
    expect(v).toMatchObject({ kind: 'note', hidden: 999 * 20, large: true });
    expect(v.kind === 'note' && v.note).toMatch(
      /^too large to show here: its diff would be 4\.\d MiB of markup/,
    );
    expect(diffView(null, soft, L, 10_000_000).kind).toBe('text');
  });

  it('captions both tables with the path and its sides, and heads their columns', () => {
    const v = diffView(b('a\nold\n'), b('a\nnew\n'), { path: 'src/x.ts', old: 'live', new: 'shadow:next' });
    if (v.kind !== 'text') throw new Error(v.note);
    // the caption is the table's first child: a screen reader names the table by it
    expect(v.split.markup).toMatch(
      /^<table class="diff split"><caption class="vh">src\/x\.ts: live \(left\) and shadow:next \(right\), side by side<\/caption>/,
    );
    expect(v.unified.markup).toMatch(
      /^<table class="diff unified"><caption class="vh">src\/x\.ts: live to shadow:next, unified<\/caption>/,
    );
    expect(v.split.markup).toContain(
      '<thead><tr><th scope="col" colspan="3">live</th><th scope="col" colspan="3">shadow:next</th></tr></thead>',
    );
    expect(v.unified.markup).toContain(
      '<thead><tr><th scope="col">live</th><th scope="col">shadow:next</th><th scope="col"><span class="vh">change</span></th><th scope="col"><span class="vh">line</span></th></tr></thead>',
    );
    // as many columns in every row as the header and colgroup declare
    for (const [markup, columns] of [
      [v.split.markup, 6],
      [v.unified.markup, 4],
    ] as const) {
      expect(markup.match(/<col\b/g)).toHaveLength(columns);
      for (const row of markup.match(/<tr\b.*?<\/tr>/g)!) {
        const spans = [...row.matchAll(/<t[dh]\b([^>]*)>/g)].map((m) =>
          Number(/colspan="(\d+)"/.exec(m[1]!)?.[1] ?? 1),
        );
        expect(spans.reduce((x, y) => x + y, 0)).toBe(columns);
      }
    }
  });

  it('hostile: a path in a caption is escaped and its hidden characters marked', () => {
    const v = diffView(null, b('x\n'), {
      path: '<img src=x onerror=alert(1)>\u202e.ts',
      old: 'before',
      new: 'after',
    });
    if (v.kind !== 'text') throw new Error(v.note);
    for (const markup of [v.split.markup, v.unified.markup]) {
      expect(markup).not.toContain('<img');
      expect(markup).not.toMatch(/\u202e/u);
      expect(markup).toContain(
        '<caption class="vh">&lt;img src=x onerror=alert(1)&gt;<span class="hidden-char" role="img" aria-label="hidden character: right-to-left override, U+202E" title="right-to-left override">U+202E</span>.ts: ',
      );
    }
  });

  it('marks each changed line of the side-by-side view by a sign and a word, not by colour alone', () => {
    // a removed run longer than the added one, a context line, an added run with no removed line beside it
    const v = diffView(b('a\nb\nc\nkeep\nd\n'), b('A\nkeep\nd\ne\nf\n'), L);
    if (v.kind !== 'text') throw new Error(v.note);
    expect([v.added, v.removed]).toEqual([3, 3]);
    const removed =
      '<td class="sign del"><span aria-hidden="true">-</span><span class="vh">removed</span></td>';
    const added = '<td class="sign add"><span aria-hidden="true">+</span><span class="vh">added</span></td>';
    for (const markup of [v.split.markup, v.unified.markup]) {
      // every text cell of a changed line sits right after its sign cell, and every sign cell has its line
      expect(markup.match(/<td class="del">/g)).toHaveLength(3);
      expect(markup.match(/<td class="add">/g)).toHaveLength(3);
      expect(markup.split(`${removed}<td class="del">`)).toHaveLength(4);
      expect(markup.split(`${added}<td class="add">`)).toHaveLength(4);
      expect(markup.match(/<td class="sign (add|del)">/g)).toHaveLength(6);
      // a context line's sign cell says nothing
      expect(markup).toMatch(/<td class="sign ctx"><\/td><td class="ctx">keep<\/td>/);
    }
  });

  it('escapes the lines it draws', () => {
    const v = diffView(b('<b>\n'), b('<script>x()</script>\n'), L);
    if (v.kind !== 'text') throw new Error(v.note);
    expect(v.split.markup).not.toContain('<script>');
    expect(v.unified.markup).toContain('&lt;script&gt;x()&lt;/script&gt;');
  });

  it.each([
    { what: 'a binary file', before: b('a\0b'), after: b('a\0c'), note: 'binary file: 3 bytes → 3 bytes' },
    {
      what: 'identical bytes',
      before: b('same\n'),
      after: b('same\n'),
      note: 'no change: the bytes are identical',
    },
  ])('says so for $what instead of drawing a table', ({ before, after, note }) => {
    expect(diffView(before, after, L)).toEqual({ kind: 'note', note });
  });
});
