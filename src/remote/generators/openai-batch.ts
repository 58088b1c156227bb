// builtin:openai through a provider's batch endpoint: one JSONL line per job (custom_id = the job key,
// the same request body as an interactive call), and one result line back per job, read by the same
// code as an interactive answer (openai-answer.ts): a 2xx line's body is a chat completion, parsed
// strictly and written into the workspace; a failed line is an aborted attempt with the provider's error.
import { mkdirSync } from 'node:fs';
import type { Job } from '../../core/job.js';
import { sha256Hex } from '../../core/sha256.js';
import type { BuiltinOutcome } from '../generate.js';
import {
  type AnswerTarget,
  addUsage,
  excerpt,
  OPENAI_GENERATOR_NAME,
  readWorkspace,
  requestBody,
  takeAnswer,
  type Usage,
} from './openai-answer.js';
import { BATCH_ENDPOINT } from './openai-batch-api.js';
import type { OpenAiConfig } from './openai-config.js';
import type { AnswerFormat } from './openai-prompt.js';

/** The answer format a batch asks for: no second request can fall back, so `auto` means structured. */
export function batchFormat(config: OpenAiConfig): AnswerFormat {
  return config.structured === 'off' ? 'text' : 'structured';
}

/**
 * The JSONL line for `job`, its files read from `dir` (the repository) exactly as an interactive
 * attempt reads its workspace; or the problem that stops it from being sent (not UTF-8, a symlink),
 * or the path of an input or read whose bytes are no longer those the job was minted with (never sent).
 */
export function batchLine(
  config: OpenAiConfig,
  job: Job,
  dir: string,
  format: AnswerFormat,
): { line: string } | { problem: string } | { changed: string } {
  const files = readWorkspace(dir, job);
  if (!Array.isArray(files)) return files;
  // readWorkspace lists the inputs, then the reads: every file sent must be the one minted
  for (const [i, input] of [...job.inputs, ...(job.reads ?? [])].entries()) {
    const content = files[i]?.content ?? null;
    const digest = content === null ? null : sha256Hex(Buffer.from(content, 'utf8'));
    if (digest !== input.sha256) return { changed: input.path };
  }
  const body = JSON.parse(requestBody(config, job, files, format)) as unknown;
  return { line: JSON.stringify({ custom_id: job.key, method: 'POST', url: BATCH_ENDPOINT, body }) };
}

/** One line of a batch's output or error file, as far as genjob reads it. */
export interface ResultLine {
  custom_id: string;
  status_code: number | null;
  body: unknown;
  error: { code: string | null; message: string } | null;
}

/** The lines of a batch's output and error files by custom_id (the job key); unreadable lines are skipped. */
export function parseResultFile(...texts: string[]): Map<string, ResultLine> {
  const lines = new Map<string, ResultLine>();
  for (const raw of texts.flatMap((text) => text.split('\n'))) {
    if (raw.trim() === '') continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      continue;
    }
    if (typeof o?.['custom_id'] !== 'string') continue;
    const response = o['response'] as { status_code?: unknown; body?: unknown } | null | undefined;
    const error = o['error'] as { code?: unknown; message?: unknown } | null | undefined;
    const line: ResultLine = {
      custom_id: o['custom_id'],
      status_code: typeof response?.status_code === 'number' ? response.status_code : null,
      body: response?.body ?? null,
      error:
        error && typeof error === 'object'
          ? {
              code: typeof error.code === 'string' ? error.code : null,
              message: typeof error.message === 'string' ? error.message : JSON.stringify(error),
            }
          : null,
    };
    // the output file's answer wins over an error line for the same id
    const seen = lines.get(line.custom_id);
    if (!seen || (seen.status_code === null && line.status_code !== null)) lines.set(line.custom_id, line);
  }
  return lines;
}

/**
 * Read one job's result line like an interactive response: a 2xx body goes through takeAnswer (strict
 * parsing, contract checks, writes into the workspace); anything else is `aborted` with the provider's error.
 */
export function lineOutcome(
  line: ResultLine,
  format: AnswerFormat,
  target: AnswerTarget,
  batchId: string,
): BuiltinOutcome {
  const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, requests: 1 };
  const text = typeof line.body === 'string' ? line.body : JSON.stringify(line.body ?? null);
  addUsage(usage, text);
  const ok = line.status_code !== null && line.status_code >= 200 && line.status_code < 300;
  if (ok && line.error === null) {
    mkdirSync(target.rawAnswerDir, { recursive: true });
    const answer = takeAnswer(text, format, target, 1);
    return { status: answer.status, reason: answer.reason, usage, version: answer.model };
  }
  const bodyError = (line.body as { error?: { message?: unknown; code?: unknown } } | null)?.error;
  const message =
    line.error?.message ?? (typeof bodyError?.message === 'string' ? bodyError.message : excerpt(text));
  const code = line.error?.code ?? (typeof bodyError?.code === 'string' ? bodyError.code : null);
  const status = line.status_code === null ? '' : ` (HTTP ${line.status_code})`;
  return {
    status: 'aborted',
    reason: `${OPENAI_GENERATOR_NAME}: batch ${batchId} answered this request with an error${status}: ${code ? `${code}: ` : ''}${message}`,
    usage,
    version: null,
  };
}
