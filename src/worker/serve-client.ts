// The worker's end of one `genjob serve` session (local child or ssh). One session serves many
// jobs: the remote shell, node start-up and ssh handshake are paid once per host per run.
// Every request has a deadline; on expiry the whole process is killed and the answer is
// "in doubt" — the next attempt asks the host for its stored result before generating again. Every read
// (hello, headers, bodies) runs under a deadline, and headers and small bodies are capped.
import type { Readable } from 'node:stream';
import { GenjobError } from '../core/errors.js';
import type { ServeRequest } from '../remote/serve-requests.js';
import type { ServeLauncher, ServeProcess } from '../transport/launcher.js';
import { FrameReader, FrameWriter, type Header, PROTOCOL, ProtocolError } from '../transport/protocol.js';

/** The host gave no usable answer (garbage, no answer, a dropped connection, a timeout). */
export class InDoubtError extends GenjobError {
  readonly code = 'EGJ_IN_DOUBT';
  readonly exitCode = 1 as const;
  constructor(
    message: string,
    readonly stderrTail = '',
  ) {
    super(stderrTail ? `${message} (host said: ${stderrTail.slice(-300)})` : message);
  }
}

/**
 * Where one session's stderr (serve's and its generator's output) goes: made for each session by the
 * caller (a line printer in cli/), and told which job the session is working on.
 */
export interface StderrRelay {
  write(chunk: Buffer): void;
  /** The job now on the session (its short key), or undefined between jobs. */
  label: string | undefined;
  /** The session ended: print what is left of a last unterminated line. */
  end(): void;
}

/** Makes the relay of a session to `destination`. */
export type RelayFactory = (destination: string) => StderrRelay;

export type Answer =
  | { type: 'result'; receiptBytes: Buffer; tar: AsyncGenerator<Buffer>; cacheError?: string }
  | { type: 'none' }
  | { type: 'error'; code: string; message: string };

const MAX_STDERR_TAIL = 4096;
/** Cap on the body of a hello, "none" or "error" answer: none of them carries one worth more than this. */
const MAX_SMALL_BODY_BYTES = 64 * 1024;

export class ServeClient {
  private readonly reader: FrameReader;
  private readonly writer: FrameWriter;
  private stderrTail = '';
  private dead = false;
  /** A request's body has left and its answer's header has not come yet (a cancel can still stop it). */
  private awaitingAnswer = false;
  private cancelTimer: NodeJS.Timeout | undefined;
  hello: Header | undefined;

  private constructor(
    private readonly proc: ServeProcess,
    maxAnswerBytes: number,
    private readonly relay: StderrRelay | undefined,
  ) {
    this.reader = new FrameReader(proc.stdout as Readable, maxAnswerBytes);
    this.writer = new FrameWriter(proc.stdin);
    // always drain stderr, or a chatty generator would block the host on a full pipe
    proc.stderr.on('data', (c: Buffer) => {
      this.stderrTail = (this.stderrTail + c.toString('utf8')).slice(-MAX_STDERR_TAIL);
      relay?.write(c);
    });
    proc.stderr.once('end', () => relay?.end());
    proc.stdin.on('error', () => {
      this.dead = true;
    });
    void proc.exited.then(() => {
      this.dead = true;
    });
  }

  static async open(
    launcher: ServeLauncher,
    args: readonly string[],
    opts: { maxAnswerBytes: number; helloTimeoutMs: number; relayStderr?: RelayFactory },
  ): Promise<ServeClient> {
    const client = new ServeClient(
      launcher.start(args),
      opts.maxAnswerBytes,
      opts.relayStderr?.(launcher.destination),
    );
    // the whole hello — header and body, the body capped small — is read within the deadline: a body that
    // never ends must not hang the worker while its heartbeat keeps the job in running/
    const hello = await client.deadline(opts.helloTimeoutMs, async () => {
      const h = await client.reader.readHeader();
      if (h?.type !== 'hello' || h.protocol !== PROTOCOL) return undefined;
      await client.reader.drain(client.reader.body(MAX_SMALL_BODY_BYTES));
      return h;
    });
    if (hello === undefined) {
      client.kill();
      throw new InDoubtError(
        `${launcher.destination}: did not answer as genjob serve (${PROTOCOL})`,
        client.stderrTail,
      );
    }
    client.hello = hello;
    return client;
  }

  /** Name the job now on this session in its relayed stderr (undefined: none). */
  working(key: string | undefined): void {
    if (this.relay) this.relay.label = key?.slice(0, 12);
  }

  get alive(): boolean {
    return !this.dead;
  }

  kill(): void {
    clearTimeout(this.cancelTimer);
    this.dead = true;
    this.proc.kill();
  }

  /** Run `fn` with a deadline; on expiry kill the session and report in doubt. */
  async deadline<T>(ms: number, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.kill();
        reject(
          new InDoubtError(
            `no answer within ${Math.round(ms / 1000)} s; killed the session`,
            this.stderrTail,
          ),
        );
      }, ms);
    });
    try {
      return await Promise.race([fn(), expired]);
    } catch (err) {
      // a write to serve that failed (EPIPE, or any error of the pipe itself) broke the session, as
      // garbage from the host does: in doubt, never an error of the repository's disk
      if (
        err instanceof ProtocolError ||
        (err as NodeJS.ErrnoException).code === 'EPIPE' ||
        (err !== undefined && err === this.writer.broken)
      ) {
        this.kill();
        throw new InDoubtError(`session broke: ${(err as Error).message}`, this.stderrTail);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Send a request (with `sendBody` streaming its body, or an empty body) and read the answer's header.
   * The caller must consume `tar` of a result fully (or kill the session).
   */
  async request(
    req: ServeRequest,
    timeoutMs: number,
    sendBody?: (w: FrameWriter) => Promise<void>,
  ): Promise<Answer> {
    if (this.dead) throw new InDoubtError('session is closed', this.stderrTail);
    return this.deadline(timeoutMs, async () => {
      await this.writer.header(req);
      if (sendBody) await sendBody(this.writer);
      else await this.writer.end();
      this.awaitingAnswer = true;
      const h = await this.reader.readHeader().finally(() => {
        this.awaitingAnswer = false;
        clearTimeout(this.cancelTimer);
      });
      if (h === null) throw new ProtocolError('the host closed the session without answering');
      if (h.type === 'result') {
        const n = h.receipt_bytes;
        if (!Number.isSafeInteger(n) || (n as number) <= 0 || (n as number) > 4 * 1024 * 1024) {
          throw new ProtocolError('result header has no valid receipt_bytes');
        }
        const body = this.reader.body();
        const parts: Buffer[] = [];
        let got = 0;
        while (got < (n as number)) {
          const next = await body.next();
          if (next.done) throw new ProtocolError('result ended inside its receipt');
          parts.push(next.value);
          got += next.value.length;
        }
        const all = Buffer.concat(parts);
        const receiptBytes = all.subarray(0, n as number);
        const rest = all.subarray(n as number);
        async function* tar(): AsyncGenerator<Buffer> {
          if (rest.length > 0) yield rest;
          yield* body;
        }
        // a result the host holds but could not keep in its cache (its journal line says so)
        const cacheError = typeof h.cache_error === 'string' ? h.cache_error.slice(0, 1000) : undefined;
        return { type: 'result', receiptBytes, tar: tar(), ...(cacheError ? { cacheError } : {}) };
      }
      await this.reader.drain(this.reader.body(MAX_SMALL_BODY_BYTES));
      if (h.type === 'none') return { type: 'none' };
      if (h.type === 'error')
        return { type: 'error', code: String(h.code), message: String(h.message).slice(0, 2000) };
      throw new ProtocolError(`unexpected answer type ${JSON.stringify(h.type).slice(0, 40)}`);
    });
  }

  /**
   * Ask the host to stop the request in flight (its generator is killed; the answer still comes,
   * to be read as usual). When no answer is awaited (the bundle is still on its way, so nothing
   * generates yet), or none comes within `graceMs`, the session is killed instead.
   */
  cancel(graceMs: number): void {
    if (this.dead) return;
    if (!this.awaitingAnswer) {
      this.kill();
      return;
    }
    clearTimeout(this.cancelTimer);
    this.cancelTimer = setTimeout(() => this.kill(), graceMs);
    this.writer.message({ type: 'cancel' }).catch(() => this.kill());
  }

  async close(): Promise<void> {
    if (!this.dead) this.proc.stdin.end();
    // Read stdout to its end: a stream nobody reads never ends, so the process's 'close' never came
    // and every run waited the full 5 s below before killing a serve that had long exited.
    void this.readToEnd();
    let timer: NodeJS.Timeout | undefined;
    const exited = await Promise.race([
      this.proc.exited,
      new Promise((r) => (timer = setTimeout(r, 5000, 'timeout'))),
    ]);
    clearTimeout(timer); // left running, it kept every `work` alive 5 s after its last job
    if (exited === 'timeout') this.kill();
  }

  private async readToEnd(): Promise<void> {
    try {
      while ((await this.reader.readHeader()) !== null) await this.reader.drain(this.reader.body());
    } catch {
      // a broken or killed session: nothing more to read
    }
  }
}
