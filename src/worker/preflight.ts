// Open a serve session that is known to be usable: ssh reached the host and verified its key, the
// far end answered as genjob serve, and it would run the requested generator (or its pinned one)
// with a usable configuration. `work` does this for every host before it claims anything, so a
// typo in --port, a host without genjob or a missing --generator is a usage error (exit 2), not a
// spent attempt.
import { UsageError } from '../core/errors.js';
import type { ServeLauncher } from '../transport/launcher.js';
import { InDoubtError, ServeClient } from './serve-client.js';

export interface SessionOptions {
  /** Arguments for serve (the sandbox flags). */
  args?: readonly string[];
  maxAnswerBytes: number;
  helloTimeoutMs: number;
  relayStderr?: (chunk: Buffer) => void;
}

export async function openCheckedSession(
  launcher: ServeLauncher,
  generator: string | null,
  opts: SessionOptions,
): Promise<ServeClient> {
  const where = launcher.destination;
  // fails fast and clearly on an unknown or changed host key, before any bytes are sent
  await launcher.shipmentFacts();
  let client: ServeClient;
  try {
    client = await ServeClient.open(launcher, opts.args ?? [], opts);
  } catch (err) {
    if (!(err instanceof InDoubtError)) throw err;
    throw new UsageError(
      'EGJ_HOST_NOT_SERVING',
      `${where}: did not answer as genjob serve; is genjob installed there, and does the remote command start it? (${err.message})`,
    );
  }
  let answer: Awaited<ReturnType<ServeClient['check']>>;
  try {
    answer = await client.check(generator, opts.helloTimeoutMs);
  } catch (err) {
    client.kill();
    if (!(err instanceof InDoubtError)) throw err;
    throw new UsageError(
      'EGJ_HOST_NOT_SERVING',
      `${where}: no answer to the generator check (${err.message})`,
    );
  }
  if (!answer.ok) {
    client.kill();
    const code = /^EGJ_[A-Z_]+$/.test(answer.code) ? (answer.code as `EGJ_${string}`) : 'EGJ_HOST_REFUSED';
    throw new UsageError(code, `${where}: ${answer.message}`);
  }
  return client;
}
