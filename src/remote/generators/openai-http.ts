// One POST to the chat-completions endpoint, classified by what it proves about the model's work:
// 'refused' (nothing left this host, safe to retry), 'failed' (never connected), 'in-doubt' (connected,
// then broke or timed out: the model may have run and spent tokens) or a complete 'response'.
// The deadline destroys the socket, so a timed-out request really stops; the body is capped.
import * as http from 'node:http';
import * as https from 'node:https';
import { errnoOf } from '../../core/errors.js';
import type { OpenAiConfig } from './openai-config.js';

const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
const MAX_RETRY_AFTER_MS = 60_000;

export type Exchange =
  | { kind: 'response'; reached: true; status: number; headers: http.IncomingHttpHeaders; text: string }
  /** Connection refused: not one byte of the request left this host. */
  | { kind: 'refused'; reached: false }
  /** Failed before connecting (DNS, TLS, connect timeout...): nothing was generated, but not worth retrying. */
  | { kind: 'failed'; reached: false; reason: string }
  /** Failed after connecting: the model may have run. */
  | { kind: 'in-doubt'; reached: true; reason: string };

/**
 * One POST on a fresh connection (no keep-alive: a reused socket that the server has closed fails with a
 * reset that would look "in doubt"). The deadline destroys the socket, so a timeout really stops it.
 */
export function post(config: OpenAiConfig, body: string, timeoutMs: number): Promise<Exchange> {
  const url = config.endpoint;
  const headers: http.OutgoingHttpHeaders = {
    'content-type': 'application/json',
    accept: 'application/json',
    'content-length': Buffer.byteLength(body),
  };
  if (config.apiKey !== null) headers['authorization'] = `Bearer ${config.apiKey}`;
  const tls = url.protocol === 'https:';

  return new Promise((resolve) => {
    let connected = false;
    let settled = false;
    const finish = (ex: Exchange) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(ex);
      req.destroy();
    };
    const req = (tls ? https : http).request(url, { method: 'POST', headers, agent: false });
    const timer = setTimeout(() => {
      finish(
        connected
          ? { kind: 'in-doubt', reached: true, reason: `no complete answer within ${timeoutMs} ms` }
          : {
              kind: 'failed',
              reached: false,
              reason: `could not connect to ${url.host} within ${timeoutMs} ms`,
            },
      );
    }, timeoutMs);

    req.on('socket', (socket) => {
      if (!socket.connecting && !tls) connected = true;
      else socket.once(tls ? 'secureConnect' : 'connect', () => (connected = true));
    });
    req.on('error', (err) => {
      if (connected) {
        finish({
          kind: 'in-doubt',
          reached: true,
          reason: `connection failed after the request was sent: ${describe(err)}`,
        });
      } else if (errnoOf(err) === 'ECONNREFUSED') {
        finish({ kind: 'refused', reached: false });
      } else {
        finish({ kind: 'failed', reached: false, reason: `could not reach ${url.host}: ${describe(err)}` });
      }
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const broken = (why: string) =>
        finish({
          kind: 'in-doubt',
          reached: true,
          reason: `the response broke off (${why}) after HTTP ${res.statusCode}`,
        });
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) return broken(`larger than ${MAX_RESPONSE_BYTES} bytes`);
        chunks.push(chunk);
      });
      res.on('error', (err) => broken(describe(err)));
      res.on('close', () => {
        if (!res.complete) broken('connection closed mid-response');
      });
      res.on('end', () =>
        finish({
          kind: 'response',
          reached: true,
          status: res.statusCode ?? 0,
          headers: res.headers,
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.end(body);
  });
}

/** Retry-After as seconds or an HTTP date, capped; null when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return null;
  const ms = /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) * 1000 : Date.parse(v) - Date.now();
  if (!Number.isFinite(ms)) return null;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(ms)));
}

function describe(err: unknown): string {
  const code = errnoOf(err);
  const message = (err as Error)?.message ?? String(err);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}
