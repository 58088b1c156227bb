// How builtin:openai turns a job into a chat-completions request body and a response body into
// files in the workspace — shared by the interactive generator and the batch flow, so an answer that
// came back in a batch is read exactly like one that came back from a single request: the same
// strict parsing, the same contract checks, the same writes (lstat, O_NOFOLLOW), the same usage count.
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { isSystemError } from '../../core/errno.js';
import { errnoOf, ioErrorAt } from '../../core/errors.js';
import type { Job } from '../../core/job.js';
import { ancestors } from '../../core/paths.js';
import { InputChangedError, InputNotRegularError } from '../../transport/archive-errors.js';
import { BeneathOpener } from '../../transport/open-beneath.js';
import type { OpenAiConfig } from './openai-config.js';
import {
  type AnswerFormat,
  buildMessages,
  changesProblem,
  type FileChange,
  type PromptFile,
  parseAnswer,
  RESPONSE_FORMAT,
} from './openai-prompt.js';

export const OPENAI_GENERATOR_NAME = 'builtin:openai';
const SNIPPET_CHARS = 300;

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  requests: number;
}

/** Where an answer is read into: the job, its workspace, and where the raw answer text is kept. */
export interface AnswerTarget {
  workspace: string;
  job: Job;
  rawAnswerDir: string;
}

export type AnswerOutcome = {
  status: 'ok' | 'rejected' | 'aborted';
  reason: string | null;
  model: string | null;
};

/** Read a 2xx chat completion, keep its text, parse it, and write the files it proposes. */
export function takeAnswer(
  text: string,
  format: AnswerFormat,
  input: AnswerTarget,
  n: number,
): AnswerOutcome {
  const keep = (t: string) => writeFileSync(join(input.rawAnswerDir, `answer-${n}.txt`), t);
  const completion = readCompletion(text);
  if (typeof completion === 'string') {
    keep(text);
    return { status: 'rejected', reason: `answer could not be parsed: ${completion}`, model: null };
  }
  const { content, model, finish, refusal } = completion;
  keep(content ?? refusal ?? text);
  const fail = (problem: string): AnswerOutcome => ({ status: 'rejected', reason: problem, model });
  if (refusal !== null) return fail(`the model refused: ${excerpt(refusal)}`);
  if (finish === 'length') return fail('answer could not be parsed: it was cut off at the token limit');
  if (content === null) return fail('answer could not be parsed: the completion has no message content');
  const parsed = parseAnswer(content, format);
  if (!parsed.ok) return fail(`answer could not be parsed: ${parsed.problem}`);
  const problem = changesProblem(parsed.files, input.job);
  if (problem) return fail(problem);
  const writeProblem = writeChanges(input.workspace, parsed.files);
  if (writeProblem) return { status: 'aborted', reason: writeProblem, model };
  return { status: 'ok', reason: null, model };
}

type Completion = {
  content: string | null;
  model: string | null;
  finish: string | null;
  refusal: string | null;
};

function readCompletion(text: string): Completion | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return `the response is not JSON: ${excerpt(text)}`;
  }
  const choice = (raw as { choices?: unknown })?.choices;
  const first = Array.isArray(choice) ? (choice[0] as Record<string, unknown> | undefined) : undefined;
  const message = first?.['message'] as Record<string, unknown> | undefined;
  if (typeof message !== 'object' || message === null)
    return 'the response is not a chat completion (no choices[0].message)';
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  return {
    content: str(message['content']),
    refusal: str(message['refusal']),
    finish: str(first?.['finish_reason']),
    model: str((raw as { model?: unknown }).model),
  };
}

export function addUsage(usage: Usage, text: string): void {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return;
  }
  const u = (raw as { usage?: Record<string, unknown> } | null)?.usage;
  if (typeof u !== 'object' || u === null) return;
  const count = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : 0);
  usage.prompt_tokens += count(u['prompt_tokens']);
  usage.completion_tokens += count(u['completion_tokens']);
}

export function requestBody(
  config: OpenAiConfig,
  job: Job,
  files: PromptFile[],
  format: AnswerFormat,
): string {
  return JSON.stringify({
    model: config.model,
    messages: buildMessages(job.instruction, files, format),
    stream: false,
    ...(format === 'structured' ? { response_format: RESPONSE_FORMAT } : {}),
  });
}

/**
 * Each allowed path with its current text, then each read-only file (the job's reads) marked so;
 * files are opened beneath the workspace, following no symlink in any component, and only if regular.
 */
export function readWorkspace(workspace: string, job: Job): PromptFile[] | { problem: string } {
  const out: PromptFile[] = [];
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const reads = (job.reads ?? []).map((r) => ({ path: r.path, readOnly: true }));
  const opener = new BeneathOpener(workspace);
  try {
    for (const { path, readOnly } of [
      ...job.inputs.map((i) => ({ path: i.path, readOnly: false })),
      ...reads,
    ]) {
      if (absent(workspace, path)) {
        out.push({ path, content: null });
        continue;
      }
      let fd: number;
      try {
        fd = opener.open(path).fd;
      } catch (err) {
        if (err instanceof InputNotRegularError || err instanceof InputChangedError) {
          const what = err.message.split(';')[0];
          return {
            problem: `${what}; ${OPENAI_GENERATOR_NAME} follows no symlink and sends regular files only`,
          };
        }
        // the disk failing is the environment's failure (EGJ_IO, the job goes back), not the job's
        throw err;
      }
      let closing = false;
      try {
        const bytes = readAll(fd, job.constraints.max_file_bytes, path);
        out.push({ path, content: decoder.decode(bytes), ...(readOnly ? { readOnly } : {}) });
        closing = true;
        closeSync(fd);
      } catch (err) {
        if (!closing) closeQuietly(fd);
        if (err instanceof TypeError)
          return { problem: `${path}: is not UTF-8 text; ${OPENAI_GENERATOR_NAME} sends text only` };
        if (isSystemError(err)) throw ioErrorAt(join(workspace, path), err);
        return { problem: `${path}: cannot be read from the workspace: ${(err as Error).message}` };
      }
    }
  } finally {
    opener.close();
  }
  return out;
}

/** Nothing is at `path` (a file the job creates); whatever is there is opened by BeneathOpener, links refused. */
function absent(workspace: string, path: string): boolean {
  try {
    lstatSync(join(workspace, path));
    return false;
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return true;
    throw ioErrorAt(join(workspace, path), err);
  }
}

/** Close on the way out of a failure: the failure is what is reported. */
function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // the fd is freed either way (Linux)
  }
}

function readAll(fd: number, max: number, path: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const buf = Buffer.alloc(64 * 1024);
    const got = readSync(fd, buf, 0, buf.length, null);
    if (got === 0) return Buffer.concat(chunks, total);
    total += got;
    if (total > max) throw new Error(`${path} is larger than the job's max_file_bytes (${max})`);
    chunks.push(buf.subarray(0, got));
  }
}

/**
 * Write the proposed files at their contract paths. Every directory on the way is checked with lstat
 * (a symlink is refused, never followed) before anything is written, and files are opened O_NOFOLLOW.
 */
function writeChanges(workspace: string, files: readonly FileChange[]): string | null {
  for (const f of files) {
    for (const dir of ancestors(f.path)) {
      const st = lstatOrNull(join(workspace, dir));
      if (st && !st.isDirectory()) return `${f.path}: ${dir} is not a directory in the workspace`;
    }
    const st = lstatOrNull(join(workspace, f.path));
    if (st && !st.isFile()) return `${f.path}: is not a regular file in the workspace`;
  }
  try {
    for (const f of files) {
      for (const dir of ancestors(f.path)) {
        try {
          mkdirSync(join(workspace, dir));
        } catch (err) {
          if (errnoOf(err) !== 'EEXIST') throw err;
        }
      }
      const fd = openSync(
        join(workspace, f.path),
        constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
        0o644,
      );
      try {
        const bytes = Buffer.from(f.content, 'utf8');
        let off = 0;
        while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      } finally {
        closeSync(fd);
      }
    }
  } catch (err) {
    return `writing the answer into the workspace failed: ${(err as Error).message}`;
  }
  return null;
}

function lstatOrNull(p: string) {
  try {
    return lstatSync(p);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return null;
    throw err;
  }
}

export function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > SNIPPET_CHARS ? `${flat.slice(0, SNIPPET_CHARS)}…` : flat || '(empty body)';
}
