// What builtin:openai says to the model and how it reads the answer back. Pure: no I/O.
// The model returns whole files, either as JSON matching RESPONSE_FORMAT (structured output) or,
// where an endpoint cannot do that, as `=== FILE: <path> ===` blocks. Both are parsed strictly:
// anything but the format, a path outside the job, or text that is not UTF-8 is refused, never repaired.
import * as z from 'zod/mini';
import type { Job } from '../../core/job.js';
import { pathProblem } from '../../core/paths.js';
import { checkSchema, issueText } from '../../core/schema-check.js';

export type AnswerFormat = 'structured' | 'text';

/** One allowed path as the model sees it: its current text, or null when it does not exist yet. */
export interface PromptFile {
  path: string;
  content: string | null;
  /** Shipped for context only (the job's reads): shown to the model, never one it may change. */
  readOnly?: boolean;
}

/** A whole-file replacement proposed by the model. */
export interface FileChange {
  path: string;
  content: string;
}

export interface ChatMessage {
  role: 'system' | 'user';
  content: string;
}

export type ParsedAnswer = { ok: true; files: FileChange[] } | { ok: false; problem: string };

export const FILE_HEADER = /^=== FILE: (.+) ===$/;
export const END_FILE = '=== END FILE ===';
export const NO_CHANGES = '=== NO CHANGES ===';
export const NEW_FILE_NOTE = '(does not exist yet; create it)';

/** The OpenAI `response_format` asking for {files: [{path, content}]} and nothing else. */
export const RESPONSE_FORMAT = {
  type: 'json_schema',
  json_schema: {
    name: 'genjob_changes',
    strict: true,
    schema: {
      type: 'object',
      properties: {
        files: {
          type: 'array',
          items: {
            type: 'object',
            properties: { path: { type: 'string' }, content: { type: 'string' } },
            required: ['path', 'content'],
            additionalProperties: false,
          },
        },
      },
      required: ['files'],
      additionalProperties: false,
    },
  },
} as const;

const COMMON_RULES = [
  'You edit files for an automated code-change pipeline. Your answer is parsed by a program, not read by a person.',
  'Follow the instruction using only the files listed in the user message.',
  'You may change or create only those exact paths. Return the COMPLETE new contents of every file you change or create (never a diff, never an excerpt).',
  'Leave out files you do not change. You cannot delete files or rename them.',
];

const STRUCTURED_RULES = [
  'Answer with one JSON object and nothing else: {"files": [{"path": "<path>", "content": "<complete new contents>"}]}.',
  'Use {"files": []} when nothing needs to change.',
];

const TEXT_RULES = [
  'Answer with one or more blocks in exactly this form, and nothing before, between or after them:',
  '=== FILE: <path> ===',
  '<complete new contents of the file>',
  END_FILE,
  'The contents are every line between the FILE line and the END FILE line, each ending with a newline.',
  'Do not wrap the answer in Markdown code fences and do not add explanations.',
  `When nothing needs to change, answer with the single line ${NO_CHANGES}`,
];

/** The system and user messages for one job. */
export function buildMessages(
  instruction: string,
  files: readonly PromptFile[],
  format: AnswerFormat,
): ChatMessage[] {
  const rules = [...COMMON_RULES, ...(format === 'structured' ? STRUCTURED_RULES : TEXT_RULES)];
  const parts = [`Instruction:\n${instruction}`, 'Allowed files (path, then current contents):'];
  for (const f of files.filter((f) => !f.readOnly)) {
    if (f.content === null) parts.push(`=== FILE: ${f.path} === ${NEW_FILE_NOTE}`);
    else parts.push(`=== FILE: ${f.path} ===\n${withNewline(f.content)}${END_FILE}`);
  }
  const context = files.filter((f) => f.readOnly);
  if (context.length > 0) parts.push('Read-only files, for context (never change or return these):');
  for (const f of context) parts.push(`=== FILE: ${f.path} ===\n${withNewline(f.content ?? '')}${END_FILE}`);
  return [
    { role: 'system', content: rules.join('\n') },
    { role: 'user', content: parts.join('\n\n') },
  ];
}

/** Render changes in the fallback text format (the inverse of parseTextAnswer for newline-terminated files). */
export function formatTextAnswer(files: readonly FileChange[]): string {
  if (files.length === 0) return `${NO_CHANGES}\n`;
  return files.map((f) => `=== FILE: ${f.path} ===\n${withNewline(f.content)}${END_FILE}\n`).join('');
}

export function parseAnswer(text: string, format: AnswerFormat): ParsedAnswer {
  return format === 'structured' ? parseStructuredAnswer(text) : parseTextAnswer(text);
}

const StructuredSchema = z.strictObject({
  files: z.array(z.strictObject({ path: z.string(), content: z.string() })),
});

/** Parse a structured-output answer: exactly {files: [{path, content}]}, nothing more. */
export function parseStructuredAnswer(text: string): ParsedAnswer {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `not JSON (${(err as Error).message})` };
  }
  const parsed = checkSchema(StructuredSchema, raw);
  if (!parsed.ok) return { ok: false, problem: issueText(parsed.issue, '(answer)') };
  return { ok: true, files: parsed.data.files };
}

/**
 * Parse the fallback format: blocks `=== FILE: <path> ===\n<content>=== END FILE ===`, separated only by
 * blank lines, or the single line NO_CHANGES. A file's content is every line between its markers.
 */
export function parseTextAnswer(text: string): ParsedAnswer {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const nonBlank = lines.filter((l) => l.trim() !== '');
  if (nonBlank.length === 1 && nonBlank[0]!.trim() === NO_CHANGES) return { ok: true, files: [] };

  const files: FileChange[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === '') {
      i += 1;
      continue;
    }
    const header = FILE_HEADER.exec(line);
    if (!header)
      return { ok: false, problem: `line ${i + 1}: expected "=== FILE: <path> ===", got ${excerpt(line)}` };
    const end = lines.indexOf(END_FILE, i + 1);
    if (end < 0) return { ok: false, problem: `line ${i + 1}: no "${END_FILE}" after this FILE line` };
    const nested = lines.slice(i + 1, end).findIndex((l) => FILE_HEADER.test(l));
    if (nested >= 0)
      return { ok: false, problem: `line ${i + 2 + nested}: a FILE line before "${END_FILE}"` };
    const body = lines.slice(i + 1, end);
    files.push({ path: header[1]!, content: body.map((l) => `${l}\n`).join('') });
    i = end + 1;
  }
  if (files.length === 0) return { ok: false, problem: `no FILE blocks and no "${NO_CHANGES}" line` };
  return { ok: true, files };
}

/** Why the proposed changes may not be written into the job's workspace, or null when they may. */
export function changesProblem(
  files: readonly FileChange[],
  job: Pick<Job, 'inputs' | 'constraints'>,
): string | null {
  const allowed = new Set(job.inputs.map((i) => i.path));
  const seen = new Set<string>();
  let total = 0;
  for (const f of files) {
    const name = JSON.stringify(f.path);
    const problem = pathProblem(f.path);
    if (problem) return `answer names ${name}, which is not one of the job's paths (${problem})`;
    if (!allowed.has(f.path)) return `answer names ${name}, which is not one of the job's paths`;
    if (seen.has(f.path)) return `answer names ${name} twice`;
    seen.add(f.path);
    if (/\p{Cs}/u.test(f.content)) return `content of ${name} is not valid UTF-8 text (lone surrogate)`;
    const bytes = Buffer.byteLength(f.content, 'utf8');
    if (bytes > job.constraints.max_file_bytes) {
      return `content of ${name} is ${bytes} bytes, over the job's max_file_bytes (${job.constraints.max_file_bytes})`;
    }
    total += bytes;
    if (total > job.constraints.max_total_bytes) {
      return `the answer's files total over the job's max_total_bytes (${job.constraints.max_total_bytes})`;
    }
  }
  return null;
}

function withNewline(s: string): string {
  return s === '' || s.endsWith('\n') ? s : `${s}\n`;
}

function excerpt(s: string): string {
  return JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);
}
