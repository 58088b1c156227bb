// builtin:openai — a generator that asks an OpenAI-compatible chat-completions endpoint for whole files
// and writes them into the workspace. A request that may have reached the model is never repeated:
// a timeout after connecting, a reset mid-response or a 5xx ends the attempt "in doubt" (the tokens may
// be spent). Only a refused connection or an HTTP 429 — proof that nothing was generated — is retried.
// Tokens and requests are summed into every result, whatever its status: the spend ledger.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Job } from '../../core/job.js';
import {
  addUsage,
  excerpt,
  OPENAI_GENERATOR_NAME,
  readWorkspace,
  requestBody,
  takeAnswer,
  type Usage,
} from './openai-answer.js';
import { type OpenAiConfig, readOpenAiConfig } from './openai-config.js';
import { post, retryAfterMs } from './openai-http.js';
import type { AnswerFormat } from './openai-prompt.js';

export { OPENAI_GENERATOR_NAME, type Usage };

export interface BuiltinGeneratorInput {
  /** Directory holding the allowed files that exist, at their contract paths. */
  workspace: string;
  job: Job;
  /** The serve process's environment (the host's), never the worker's. */
  env: NodeJS.ProcessEnv;
  /** Overall deadline for the attempt. */
  timeoutMs: number;
  /** Where each answer is kept for inspection: answer-<n>.txt, error-<n>.txt. */
  rawAnswerDir: string;
}

export interface BuiltinGeneratorResult {
  status: 'ok' | 'rejected' | 'aborted';
  reason: string | null;
  usage: Usage;
  /** The model name as reported by the endpoint. */
  version: string | null;
}

const MAX_BACKOFF_MS = 30_000;

/** Ask the configured endpoint to carry out `job` in `workspace`; never throws for endpoint or answer faults. */
export async function runOpenAiGenerator(input: BuiltinGeneratorInput): Promise<BuiltinGeneratorResult> {
  const usage: Usage = { prompt_tokens: 0, completion_tokens: 0, requests: 0 };
  let version: string | null = null;
  const end = (status: BuiltinGeneratorResult['status'], reason: string | null): BuiltinGeneratorResult => ({
    status,
    reason,
    usage: { ...usage },
    version,
  });

  const loaded = readOpenAiConfig(input.env);
  if (!loaded.ok) return end('aborted', `${OPENAI_GENERATOR_NAME}: ${loaded.problem}`);
  const config = loaded.config;
  const deadline = Date.now() + input.timeoutMs;
  mkdirSync(input.rawAnswerDir, { recursive: true });

  const files = readWorkspace(input.workspace, input.job);
  if (!Array.isArray(files)) return end('aborted', files.problem);

  let format: AnswerFormat = config.structured === 'off' ? 'text' : 'structured';
  let retriesLeft = config.maxRetries;
  let tries = 0;
  const target = `${config.endpoint.origin}${config.endpoint.pathname}`;

  for (;;) {
    const remaining = deadline - Date.now();
    if (remaining <= 0)
      return end('aborted', `deadline of ${input.timeoutMs} ms reached before a request could be sent`);
    const timeoutMs = Math.min(remaining, config.requestTimeoutMs ?? remaining);
    tries += 1;
    const body = requestBody(config, input.job, files, format);
    const ex = await post(config, body, timeoutMs);
    if (ex.reached) usage.requests += 1;
    const n = usage.requests;

    if (ex.kind === 'refused') {
      const why = `connection refused by ${config.endpoint.host} (${plural(tries, 'try', 'tries')})`;
      if (retriesLeft === 0) return end('aborted', why);
      const wait = backoffMs(config, config.maxRetries - retriesLeft);
      if (Date.now() + wait >= deadline)
        return end('aborted', `${why}; no time left before the deadline to retry`);
      retriesLeft -= 1;
      await sleep(wait);
      continue;
    }
    if (ex.kind === 'failed') return end('aborted', ex.reason);
    if (ex.kind === 'in-doubt')
      return end('aborted', `in doubt: ${ex.reason} (request ${n} to ${target}; not retried)`);

    const { status, headers, text } = ex;
    addUsage(usage, text);
    if (status >= 200 && status < 300) {
      const outcome = takeAnswer(text, format, input, n);
      if (outcome.model !== null) version = outcome.model;
      return end(outcome.status, outcome.reason);
    }
    writeFileSync(join(input.rawAnswerDir, `error-${n}.txt`), text);
    const snippet = excerpt(text);

    if (status === 429) {
      const why = `rate limited (HTTP 429) by ${target}`;
      if (retriesLeft === 0)
        return end('aborted', `${why} after ${plural(tries, 'try', 'tries')}: ${snippet}`);
      const after = retryAfterMs(headers['retry-after']);
      const wait = after ?? backoffMs(config, config.maxRetries - retriesLeft);
      if (Date.now() + wait >= deadline)
        return end('aborted', `${why}; waiting ${wait} ms would pass the deadline`);
      retriesLeft -= 1;
      await sleep(wait);
      continue;
    }
    if (
      (status === 400 || status === 422) &&
      format === 'structured' &&
      /response_format|json_schema/i.test(text)
    ) {
      if (config.structured === 'auto') {
        // The endpoint refused the request before generating: ask again in the fallback text format.
        format = 'text';
        continue;
      }
      return end(
        'aborted',
        `${target} does not accept response_format (GENJOB_OPENAI_STRUCTURED=on): ${snippet}`,
      );
    }
    if (status >= 500)
      return end('aborted', `in doubt: HTTP ${status} from ${target} (not retried): ${snippet}`);
    return end('aborted', `HTTP ${status} from ${target}: ${snippet}`);
  }
}

/** Exponential backoff with equal jitter: half the step is fixed, half random. */
function backoffMs(config: OpenAiConfig, retry: number): number {
  const step = Math.min(MAX_BACKOFF_MS, config.retryBaseMs * 2 ** retry);
  return Math.round(step / 2 + Math.random() * (step / 2));
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
