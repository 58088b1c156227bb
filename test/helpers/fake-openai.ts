// A real chat-completions server on 127.0.0.1 for tests, answering from a script consumed in order (or,
// with `answer`, from each request once the script is used up) and logging every request it read in full. Each scripted step can delay, fail with a status, reset the
// connection, or refuse `response_format` the way endpoints without structured output do.
// In-process only: e2e tests start it in the vitest process and pass `url` to CLI children via env.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { MAX_ANSWER_BYTES } from '../../src/remote/generators/openai-batch-api.js';
import { type FakeBatchOptions, type FakeBatchState, fakeBatchApi } from './fake-openai-batch.js';

export interface FakeStep {
  /** HTTP status; 200 by default. */
  status?: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as-is. Default: an empty completion. */
  body?: object | string;
  /** Wait this long after reading the request before answering. */
  delayMs?: number;
  /**
   * While the request carries `response_format`, answer HTTP 400 naming it and keep this step for the
   * next request; a request without it gets the step's answer. Models an endpoint without structured output.
   */
  rejectResponseFormat?: boolean;
  /** Reset the connection instead of answering (after delayMs, having sent the status line and headers). */
  destroy?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  body: unknown;
}

export interface FakeOpenAi {
  /** Base URL to use as GENJOB_OPENAI_BASE_URL, e.g. http://127.0.0.1:4711/v1 */
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** With the `batch` option: the files, batches and per-key submission counts the server holds. */
  batch?: FakeBatchState;
  close(): Promise<void>;
}

/** A chat-completion body carrying `content` as the assistant's answer. */
export function chatCompletion(
  content: string | null,
  opts: {
    model?: string;
    usage?: { prompt_tokens: number; completion_tokens: number };
    finishReason?: string;
  } = {},
): object {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 0,
    model: opts.model ?? 'fake-model-1',
    choices: [
      { index: 0, message: { role: 'assistant', content }, finish_reason: opts.finishReason ?? 'stop' },
    ],
    usage: { ...(opts.usage ?? { prompt_tokens: 0, completion_tokens: 0 }), total_tokens: 0 },
  };
}

/** The structured-output answer text for a list of whole-file changes. */
export function structuredAnswer(files: Array<{ path: string; content: string }>): string {
  return JSON.stringify({ files });
}

export async function startFakeOpenAi(
  script: FakeStep[],
  opts: {
    port?: number;
    batch?: FakeBatchOptions;
    /** Once the script is used up, answer each chat request from its body (instead of HTTP 500). */
    answer?: (body: unknown) => FakeStep;
  } = {},
): Promise<FakeOpenAi> {
  const batch = opts.batch ? fakeBatchApi(opts.batch) : undefined;
  const steps = [...script];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      // the batch endpoints (files, batches) answer from their own state, not from the script
      const reply = batch?.handle(
        req.method ?? '',
        req.url ?? '',
        String(req.headers['content-type'] ?? ''),
        Buffer.concat(chunks),
      );
      if (reply) {
        const payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
        const delivery = reply.delivery ?? 'whole';
        if (delivery === 'whole') {
          res.writeHead(reply.status, { 'content-type': 'application/json' });
          res.end(payload);
        } else if (delivery === 'chunked') {
          res.writeHead(reply.status, { 'content-type': 'application/json' });
          res.write(payload);
          res.end();
        } else {
          // the status line, headers and part of the body reach the client; then the connection drops
          const length = delivery === 'cut' ? Buffer.byteLength(payload) : MAX_ANSWER_BYTES + 1;
          res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': length });
          res.write(payload.slice(0, Math.ceil(payload.length / 2)));
          const t = setTimeout(() => {
            timers.delete(t);
            res.socket?.destroy();
          }, 50);
          timers.add(t);
        }
        return;
      }

      const step = steps[0];
      const wantsFormat = typeof body === 'object' && body !== null && 'response_format' in body;
      if (step?.rejectResponseFormat && wantsFormat) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error: { message: "Unsupported parameter: 'response_format'", type: 'invalid_request_error' },
          }),
        );
        return;
      }
      steps.shift();
      const scripted =
        step ?? (typeof body === 'object' && body !== null && opts.answer ? opts.answer(body) : undefined);
      const answer = () => {
        if (res.destroyed) return;
        if (scripted === undefined) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'fake-openai: script exhausted' } }));
          return;
        }
        if (scripted.destroy) {
          res.writeHead(scripted.status ?? 200, { 'content-type': 'application/json', ...scripted.headers });
          res.flushHeaders();
          res.write('{"id":"chatcmpl-fake","choi');
          res.socket?.destroy();
          return;
        }
        const raw = scripted.body ?? chatCompletion('');
        const payload = typeof raw === 'string' ? raw : JSON.stringify(raw);
        res.writeHead(scripted.status ?? 200, { 'content-type': 'application/json', ...scripted.headers });
        res.end(payload);
      };
      if (scripted?.delayMs) {
        const t = setTimeout(() => {
          timers.delete(t);
          answer();
        }, scripted.delayMs);
        timers.add(t);
      } else {
        answer();
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    ...(batch ? { batch: batch.state } : {}),
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
