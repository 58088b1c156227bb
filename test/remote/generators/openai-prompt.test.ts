import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildMessages,
  changesProblem,
  END_FILE,
  formatTextAnswer,
  NEW_FILE_NOTE,
  NO_CHANGES,
  parseStructuredAnswer,
  parseTextAnswer,
} from '../../../src/remote/generators/openai-prompt.js';

const job = {
  inputs: [
    { path: 'src/a.ts', sha256: 'a'.repeat(64) },
    { path: 'src/new.ts', sha256: null },
  ],
  constraints: { max_file_bytes: 100, max_total_bytes: 150 },
};

describe('buildMessages', () => {
  it('puts the instruction and every allowed file, existing or to create, into the user message', () => {
    const [system, user] = buildMessages(
      'rename foo to bar',
      [
        { path: 'src/a.ts', content: 'export const foo = 1;\n' },
        { path: 'src/new.ts', content: null },
      ],
      'structured',
    );
    expect(system?.role).toBe('system');
    expect(user?.role).toBe('user');
    expect(user?.content).toContain('rename foo to bar');
    expect(user?.content).toContain(`=== FILE: src/a.ts ===\nexport const foo = 1;\n${END_FILE}`);
    expect(user?.content).toContain(`=== FILE: src/new.ts === ${NEW_FILE_NOTE}`);
  });

  it('shows the files the job only reads after the allowed ones, marked read-only, and without them adds nothing', () => {
    const files = [
      { path: 'src/a.ts', content: 'a\n' },
      { path: 'src/types.ts', content: 'export type N = number;\n', readOnly: true },
    ];
    const [, user] = buildMessages('x', files, 'text');
    expect(user?.content).toBe(
      `Instruction:\nx\n\nAllowed files (path, then current contents):\n\n=== FILE: src/a.ts ===\na\n${END_FILE}\n\n` +
        `Read-only files, for context (never change or return these):\n\n=== FILE: src/types.ts ===\nexport type N = number;\n${END_FILE}`,
    );
    const [, plain] = buildMessages('x', files.slice(0, 1), 'text');
    expect(plain?.content).not.toContain('Read-only');
  });

  it.each([
    { format: 'structured' as const, mentions: '{"files": [' },
    { format: 'text' as const, mentions: '=== FILE: <path> ===' },
  ])('states the $format output format in the system message', ({ format, mentions }) => {
    const [system] = buildMessages('x', [{ path: 'a', content: 'y' }], format);
    expect(system?.content).toContain(mentions);
    expect(system?.content).toContain('COMPLETE new contents');
  });
});

describe('parseStructuredAnswer', () => {
  it.each([
    {
      name: 'one file',
      text: '{"files":[{"path":"a","content":"x\\n"}]}',
      files: [{ path: 'a', content: 'x\n' }],
    },
    { name: 'no files', text: '{"files":[]}', files: [] },
  ])('accepts $name', ({ text, files }) => {
    expect(parseStructuredAnswer(text)).toEqual({ ok: true, files });
  });

  it.each([
    { name: 'prose', text: 'Sure! Here are the files', problem: /not JSON/ },
    { name: 'a fenced answer', text: '```json\n{"files":[]}\n```', problem: /not JSON/ },
    { name: 'a missing files key', text: '{}', problem: /files/ },
    { name: 'an extra key', text: '{"files":[],"note":"hi"}', problem: /note|unrecognized/i },
    {
      name: 'a number as content',
      text: '{"files":[{"path":"a","content":1}]}',
      problem: /files\.0\.content/,
    },
    {
      name: 'an extra key in a file',
      text: '{"files":[{"path":"a","content":"","mode":1}]}',
      problem: /files\.0/,
    },
  ])('refuses $name', ({ text, problem }) => {
    const parsed = parseStructuredAnswer(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(problem);
  });
});

describe('parseTextAnswer', () => {
  it.each([
    {
      name: 'one block',
      text: '=== FILE: a ===\nline 1\nline 2\n=== END FILE ===\n',
      files: [{ path: 'a', content: 'line 1\nline 2\n' }],
    },
    {
      name: 'two blocks separated by a blank line',
      text: '=== FILE: a ===\nx\n=== END FILE ===\n\n=== FILE: b/c ===\ny\n=== END FILE ===',
      files: [
        { path: 'a', content: 'x\n' },
        { path: 'b/c', content: 'y\n' },
      ],
    },
    {
      name: 'an empty file',
      text: '=== FILE: a ===\n=== END FILE ===\n',
      files: [{ path: 'a', content: '' }],
    },
    { name: 'the no-changes line', text: `\n${NO_CHANGES}\n`, files: [] },
    {
      name: 'content that looks like markers but is not',
      text: '=== FILE: a ===\n  === END FILE ===\n```\n=== END FILE ===\n',
      files: [{ path: 'a', content: '  === END FILE ===\n```\n' }],
    },
  ])('accepts $name', ({ text, files }) => {
    expect(parseTextAnswer(text)).toEqual({ ok: true, files });
  });

  it.each([
    {
      name: 'prose before the blocks',
      text: 'Here you go:\n=== FILE: a ===\nx\n=== END FILE ===\n',
      problem: /line 1/,
    },
    {
      name: 'prose after the blocks',
      text: '=== FILE: a ===\nx\n=== END FILE ===\nDone!\n',
      problem: /line 4/,
    },
    { name: 'a missing END line', text: '=== FILE: a ===\nx\n', problem: /no "=== END FILE ==="/ },
    {
      name: 'a FILE line inside a block',
      text: '=== FILE: a ===\n=== FILE: b ===\nx\n=== END FILE ===\n',
      problem: /line 2: a FILE line/,
    },
    { name: 'a fenced answer', text: '```\n=== FILE: a ===\nx\n=== END FILE ===\n```\n', problem: /line 1/ },
    { name: 'an empty answer', text: '', problem: /no FILE blocks/ },
    { name: 'CRLF markers', text: '=== FILE: a ===\r\nx\r\n=== END FILE ===\r\n', problem: /line 1/ },
  ])('refuses $name', ({ text, problem }) => {
    const parsed = parseTextAnswer(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.problem).toMatch(problem);
  });

  it('reads back whatever formatTextAnswer writes, for newline-terminated files', () => {
    const line = fc
      .string({ unit: 'grapheme' })
      .filter((l) => !l.includes('\n') && !l.includes('\r') && l !== END_FILE && !l.startsWith('=== FILE: '));
    const file = fc.record({
      path: fc.constantFrom('a', 'b/c.ts', 'd e/f'),
      content: fc.array(line).map((ls) => ls.map((l) => `${l}\n`).join('')),
    });
    fc.assert(
      fc.property(fc.uniqueArray(file, { selector: (f) => f.path, maxLength: 3 }), (files) => {
        expect(parseTextAnswer(formatTextAnswer(files))).toEqual({ ok: true, files });
      }),
    );
  });
});

describe('changesProblem', () => {
  it('refuses an answer that changes a file the job only reads (tamper)', () => {
    const withReads = { ...job, reads: [{ path: 'src/types.ts', sha256: 'b'.repeat(64) }] };
    expect(changesProblem([{ path: 'src/types.ts', content: 'x' }], withReads)).toBe(
      'answer names "src/types.ts", which is not one of the job\'s paths',
    );
  });

  it('accepts changes to paths of the job, including files to create', () => {
    expect(
      changesProblem(
        [
          { path: 'src/a.ts', content: 'x' },
          { path: 'src/new.ts', content: 'y' },
        ],
        job,
      ),
    ).toBeNull();
  });

  it.each([
    {
      name: 'a path outside the job',
      files: [{ path: 'src/b.ts', content: '' }],
      problem: /"src\/b\.ts", which is not/,
    },
    {
      name: 'a parent escape',
      files: [{ path: '../x', content: '' }],
      problem: /"\.\.\/x".*'\.\.' component/,
    },
    {
      name: 'an absolute path',
      files: [{ path: '/etc/passwd', content: '' }],
      problem: /"\/etc\/passwd".*absolute/,
    },
    {
      name: 'an unnormalised job path',
      files: [{ path: 'src/./a.ts', content: '' }],
      problem: /'\.' component/,
    },
    {
      name: 'a job path in another case',
      files: [{ path: 'SRC/a.ts', content: '' }],
      problem: /not one of the job/,
    },
    {
      name: 'a path twice',
      files: [
        { path: 'src/a.ts', content: '' },
        { path: 'src/a.ts', content: '' },
      ],
      problem: /twice/,
    },
    {
      name: 'a lone surrogate',
      files: [{ path: 'src/a.ts', content: 'x\ud800' }],
      problem: /not valid UTF-8/,
    },
    {
      name: 'a file over max_file_bytes',
      files: [{ path: 'src/a.ts', content: 'x'.repeat(101) }],
      problem: /max_file_bytes/,
    },
    {
      name: 'files over max_total_bytes',
      files: [
        { path: 'src/a.ts', content: 'x'.repeat(100) },
        { path: 'src/new.ts', content: 'x'.repeat(51) },
      ],
      problem: /max_total_bytes/,
    },
  ])('refuses $name', ({ files, problem }) => {
    expect(changesProblem(files, job)).toMatch(problem);
  });
});
