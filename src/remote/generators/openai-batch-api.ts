// The OpenAI-compatible batch endpoints builtin:openai uses for `work --batch`: upload the JSONL input
// (POST /files, purpose "batch"), create the batch (POST /batches), look at it (GET /batches/{id}),
// list recent batches (GET /batches, to find one a crash left unrecorded) and download a result file
// (GET /files/{id}/content). Any failure is a BatchApiError naming the call; nothing here retries. A 2xx
// answer is read whole or not at all: a body that breaks off, or grows past MAX_ANSWER_BYTES, is an
// error, never a shorter text (a cut result file would read as "nothing answered"). An
// endpoint that answers the upload with 404, 405 or 501 has no batch API at all (an OpenAI-compatible
// server that serves only /chat/completions): NoBatchApiError, which says to use interactive mode.
import { BatchApiError, GenjobError } from '../../core/errors.js';
import { EXIT } from '../../core/exit-codes.js';
import { excerpt } from './openai-answer.js';
import type { OpenAiConfig } from './openai-config.js';

export const BATCH_ENDPOINT = '/v1/chat/completions';
const DEFAULT_TIMEOUT_MS = 120_000;
const LIST_PAGES = 20;
/**
 * The most one answer may be (a result file of a full batch: many interactive answers). Two result files
 * are held as text at once, so each stays well under V8's longest string (~512 MiB).
 */
export const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

/** What genjob reads of a provider's batch object. */
export interface ProviderBatch {
  id: string;
  status: string;
  output_file_id: string | null;
  error_file_id: string | null;
  metadata: Record<string, unknown> | null;
}

/** The endpoint has no batch API: nothing was submitted, and nothing ever will be there. */
export class NoBatchApiError extends GenjobError {
  readonly code = 'EGJ_NO_BATCH_API';
  readonly exitCode = EXIT.USAGE;
}

/** HTTP statuses by which a server says it has no such endpoint (or method) at all. */
const NO_SUCH_ENDPOINT = new Set([404, 405, 501]);

/** The batch API's base: the configured base URL (the chat endpoint without /chat/completions). */
export function apiBase(config: OpenAiConfig): string {
  return config.endpoint.href.replace(/\/chat\/completions$/, '');
}

async function call(
  config: OpenAiConfig,
  method: string,
  path: string,
  body?: string | FormData,
  maxBytes = MAX_ANSWER_BYTES,
): Promise<string> {
  const url = `${apiBase(config)}${path}`;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (config.apiKey !== null) headers['authorization'] = `Bearer ${config.apiKey}`;
  if (typeof body === 'string') headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(config.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
  } catch (err) {
    throw new BatchApiError(`${method} ${url} failed: ${causeOf(err)}`, { cause: err });
  }
  let text: string;
  try {
    text = await readCapped(res, maxBytes);
  } catch (err) {
    if (err instanceof TooLargeError)
      throw new BatchApiError(
        `${method} ${url}: HTTP ${res.status}: the answer is larger than ${maxBytes} bytes; genjob reads none of it`,
      );
    // only the status of a failed call matters; a 2xx body that broke off is no answer at all
    if (res.ok)
      throw new BatchApiError(`${method} ${url}: HTTP ${res.status}: the answer broke off: ${causeOf(err)}`, {
        cause: err,
      });
    text = '';
  }
  if (!res.ok && path === '/files' && NO_SUCH_ENDPOINT.has(res.status))
    throw new NoBatchApiError(
      `${method} ${url}: HTTP ${res.status}: the endpoint has no /files, so no batch API; use interactive mode (genjob work --drain --generator builtin:openai)`,
    );
  if (!res.ok) throw new BatchApiError(`${method} ${url}: HTTP ${res.status}: ${excerpt(text)}`);
  return text;
}

class TooLargeError extends Error {}

/** The whole body as UTF-8; TooLargeError as soon as it is (or says it will be) longer than `maxBytes`. */
async function readCapped(res: Response, maxBytes: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw new TooLargeError();
  }
  if (res.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new TooLargeError(); // leaving the loop cancels the stream
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const causeOf = (err: unknown) => (err as Error & { cause?: Error }).cause?.message ?? (err as Error).message;

function json(text: string, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {}
  throw new BatchApiError(`${what}: the answer is not a JSON object: ${excerpt(text)}`);
}

function asBatch(v: unknown, what: string): ProviderBatch {
  const o = (v ?? {}) as Record<string, unknown>;
  const str = (x: unknown) => (typeof x === 'string' && x !== '' ? x : null);
  const id = str(o['id']);
  const status = str(o['status']);
  if (id === null || status === null)
    throw new BatchApiError(`${what}: not a batch object (no id or status)`);
  const metadata = o['metadata'];
  return {
    id,
    status,
    output_file_id: str(o['output_file_id']),
    error_file_id: str(o['error_file_id']),
    metadata:
      typeof metadata === 'object' && metadata !== null ? (metadata as Record<string, unknown>) : null,
  };
}

/** Upload the JSONL input; returns the provider's file id. */
export async function uploadBatchInput(config: OpenAiConfig, name: string, jsonl: Buffer): Promise<string> {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([jsonl], { type: 'application/jsonl' }), name);
  const what = 'POST /files';
  const id = json(await call(config, 'POST', '/files', form), what)['id'];
  if (typeof id !== 'string' || id === '') throw new BatchApiError(`${what}: the answer has no file id`);
  return id;
}

/** Create the batch over an uploaded input, naming the genjob run in its metadata. */
export async function createBatch(config: OpenAiConfig, fileId: string, run: string): Promise<ProviderBatch> {
  const body = JSON.stringify({
    input_file_id: fileId,
    endpoint: BATCH_ENDPOINT,
    completion_window: '24h',
    metadata: { genjob_run: run },
  });
  return asBatch(json(await call(config, 'POST', '/batches', body), 'POST /batches'), 'POST /batches');
}

export async function getBatch(config: OpenAiConfig, id: string): Promise<ProviderBatch> {
  const what = `GET /batches/${id}`;
  return asBatch(json(await call(config, 'GET', `/batches/${encodeURIComponent(id)}`), what), what);
}

/** The recent batch whose metadata names `run`, if the provider has one (newest first, a few pages). */
export async function findBatchOfRun(config: OpenAiConfig, run: string): Promise<ProviderBatch | undefined> {
  let after: string | null = null;
  for (let page = 0; page < LIST_PAGES; page++) {
    const query: string = `/batches?limit=100${after ? `&after=${encodeURIComponent(after)}` : ''}`;
    const doc = json(await call(config, 'GET', query), 'GET /batches');
    const data = Array.isArray(doc['data']) ? doc['data'] : [];
    for (const item of data) {
      const b = asBatch(item, 'GET /batches');
      if (b.metadata?.['genjob_run'] === run) return b;
    }
    const last = data.length > 0 ? (data.at(-1) as { id?: unknown }).id : undefined;
    if (doc['has_more'] !== true || typeof last !== 'string') return undefined;
    after = last;
  }
  return undefined;
}

/** A result file's bytes (the output or the error JSONL of a finished batch), whole, at most `maxBytes`. */
export async function fileContent(
  config: OpenAiConfig,
  id: string,
  maxBytes = MAX_ANSWER_BYTES,
): Promise<string> {
  return call(config, 'GET', `/files/${encodeURIComponent(id)}/content`, undefined, maxBytes);
}
