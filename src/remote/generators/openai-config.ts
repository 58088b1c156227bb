import { join } from 'node:path';
import * as z from 'zod/mini';
import { userConfigDir } from '../../cli/user-config-path.js';
import { MAX_WAIT_SECONDS } from '../../core/duration.js';
import { errnoOf } from '../../core/errors.js';
import { readText } from '../../core/read-text.js';
import { checkSchema, issueText } from '../../core/schema-check.js';

export type StructuredMode = 'on' | 'off' | 'auto';

export interface OpenAiConfig {
  /** The chat-completions URL: base URL + '/chat/completions'. */
  endpoint: URL;
  apiKey: string | null;
  model: string;
  /** Deadline of one request, or null for "whatever is left of the attempt". */
  requestTimeoutMs: number | null;
  /** Retries after the first try, only where nothing can have been generated. */
  maxRetries: number;
  /** First backoff step; doubled each retry, with jitter, capped. */
  retryBaseMs: number;
  structured: StructuredMode;
}

export type ConfigResult = { ok: true; config: OpenAiConfig } | { ok: false; problem: string };

export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_RETRY_BASE_MS = 500;
const MAX_RETRIES_LIMIT = 100;
/** A request's time limit, at most a week: past ~24.8 days Node's timers (and AbortSignal.timeout) fire at once. */
const MAX_TIMEOUT_MS = MAX_WAIT_SECONDS * 1000;

const FileSchema = z.strictObject({
  base_url: z.optional(z.string()),
  api_key: z.optional(z.string()),
  model: z.optional(z.string()),
  timeout_ms: z.optional(z.number().check(z.int(), z.positive(), z.maximum(MAX_TIMEOUT_MS))),
  max_retries: z.optional(z.number().check(z.int(), z.nonnegative(), z.maximum(MAX_RETRIES_LIMIT))),
  retry_base_ms: z.optional(z.number().check(z.int(), z.nonnegative())),
  structured: z.optional(z.enum(['on', 'off', 'auto'])),
});
type FileConfig = z.infer<typeof FileSchema>;

/** The config file builtin:openai reads on this host. */
export function openAiConfigPath(env: NodeJS.ProcessEnv): string {
  // beside genjob's own config file, found by the same rule
  return join(userConfigDir(env), 'openai.json');
}

/** Read the endpoint settings from `env` (the serve process's own) and the host's config file. */
export function readOpenAiConfig(env: NodeJS.ProcessEnv): ConfigResult {
  const file = openAiConfigPath(env);
  const loaded = loadFile(file);
  if (!loaded.ok) return loaded;
  const fc = loaded.config;
  const where = (v: string, key: string) => `${v} is not set (nor "${key}" in ${file})`;

  const base = nonEmpty(env['GENJOB_OPENAI_BASE_URL']) ?? nonEmpty(fc.base_url);
  if (base === undefined) return { ok: false, problem: where('GENJOB_OPENAI_BASE_URL', 'base_url') };
  const model = nonEmpty(env['GENJOB_OPENAI_MODEL']) ?? nonEmpty(fc.model);
  if (model === undefined) return { ok: false, problem: where('GENJOB_OPENAI_MODEL', 'model') };

  let endpoint: URL;
  try {
    endpoint = new URL(`${base.replace(/\/+$/, '')}/chat/completions`);
  } catch {
    return { ok: false, problem: `GENJOB_OPENAI_BASE_URL is not a URL: ${JSON.stringify(base)}` };
  }
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') {
    return {
      ok: false,
      problem: `GENJOB_OPENAI_BASE_URL must be http:// or https://, got ${endpoint.protocol}`,
    };
  }

  const timeout = intSetting(env, 'GENJOB_OPENAI_TIMEOUT_MS', 1, MAX_TIMEOUT_MS);
  if (!timeout.ok) return timeout;
  const retries = intSetting(env, 'GENJOB_OPENAI_MAX_RETRIES', 0, MAX_RETRIES_LIMIT);
  if (!retries.ok) return retries;
  const backoff = intSetting(env, 'GENJOB_OPENAI_RETRY_BASE_MS', 0, Number.MAX_SAFE_INTEGER);
  if (!backoff.ok) return backoff;

  const structuredRaw = nonEmpty(env['GENJOB_OPENAI_STRUCTURED'])?.toLowerCase() ?? fc.structured ?? 'auto';
  if (structuredRaw !== 'on' && structuredRaw !== 'off' && structuredRaw !== 'auto') {
    return {
      ok: false,
      problem: `GENJOB_OPENAI_STRUCTURED must be on, off or auto, got ${JSON.stringify(structuredRaw)}`,
    };
  }

  return {
    ok: true,
    config: {
      endpoint,
      // The genjob-specific settings win over OPENAI_API_KEY, which other tools on the host may own.
      apiKey:
        nonEmpty(env['GENJOB_OPENAI_API_KEY']) ??
        nonEmpty(fc.api_key) ??
        nonEmpty(env['OPENAI_API_KEY']) ??
        null,
      model,
      requestTimeoutMs: timeout.value ?? fc.timeout_ms ?? null,
      maxRetries: retries.value ?? fc.max_retries ?? DEFAULT_MAX_RETRIES,
      retryBaseMs: backoff.value ?? fc.retry_base_ms ?? DEFAULT_RETRY_BASE_MS,
      structured: structuredRaw,
    },
  };
}

function loadFile(file: string): { ok: true; config: FileConfig } | { ok: false; problem: string } {
  let text: string;
  try {
    text = readText(file);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return { ok: true, config: {} };
    return { ok: false, problem: `${file}: cannot be read: ${(err as Error).message}` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `${file}: malformed JSON (${(err as Error).message})` };
  }
  const parsed = checkSchema(FileSchema, raw);
  if (!parsed.ok) return { ok: false, problem: `${file}: ${issueText(parsed.issue)}` };
  return { ok: true, config: parsed.data };
}

type IntSetting = { ok: true; value: number | undefined } | { ok: false; problem: string };

function intSetting(env: NodeJS.ProcessEnv, name: string, min: number, max: number): IntSetting {
  const raw = nonEmpty(env[name]);
  if (raw === undefined) return { ok: true, value: undefined };
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    return {
      ok: false,
      problem: `${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    };
  }
  return { ok: true, value };
}

function nonEmpty(v: string | undefined): string | undefined {
  const t = v?.trim();
  return t === undefined || t === '' ? undefined : t;
}
