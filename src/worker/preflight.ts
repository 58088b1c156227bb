// Open a serve session that is known to be usable: ssh reached the host and verified its key, the
// far end answered as genjob serve, and it would run the requested generator (or its pinned one)
// with a usable configuration. `work` does this for every host before it claims anything, so a
// typo in --port, a host without genjob or a missing --generator is a usage error (exit 2), not a
// spent attempt. The generator check travels as serve's --check-generator argument and comes back
// in the hello: no request has to reach the host first, so a remote command that holds back what
// the worker sends (a buffering filter such as `head -c N |`) cannot stall the check.
import { GenjobError, UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import type { ServeLauncher } from '../transport/launcher.js';
import type { Header } from '../transport/protocol.js';
import { InDoubtError, type RelayFactory, ServeClient } from './serve-client.js';

export interface SessionOptions {
  /** Arguments for serve (the sandbox flags). */
  args?: readonly string[];
  maxAnswerBytes: number;
  helloTimeoutMs: number;
  /** Relays each session's stderr (none: drained unseen). */
  relayStderr?: RelayFactory;
}

/** serve's flag asking for the check; `=` keeps a generator that starts with `-` a value. */
export function checkGeneratorArg(generator: string | null): string {
  return generator === null ? '--check-generator' : `--check-generator=${generator}`;
}

/** The far end is genjob serve, but its environment (the host's disk, its cache) failed before it could serve. */
class HostIoError extends GenjobError {
  readonly code = 'EGJ_IO';
  readonly exitCode = EXIT.IO;
}

type CheckAnswer = { ok: true; generator: string } | { ok: false; code: `EGJ_${string}`; message: string };

/** The hello's answer to --check-generator; a hello without a readable one is a refusal. */
function checkOf(hello: Header | undefined): CheckAnswer {
  const c = hello?.check as Record<string, unknown> | undefined;
  if (c?.ok === true && typeof c.generator === 'string') return { ok: true, generator: c.generator };
  if (c?.ok === false) {
    const code = typeof c.code === 'string' && /^EGJ_[A-Z_]+$/.test(c.code) ? c.code : 'EGJ_HOST_REFUSED';
    return { ok: false, code: code as `EGJ_${string}`, message: String(c.message).slice(0, 2000) };
  }
  return {
    ok: false,
    code: 'EGJ_HOST_NOT_SERVING',
    message: 'its hello has no answer to the generator check (an older genjob serve?)',
  };
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
    client = await ServeClient.open(launcher, [...(opts.args ?? []), checkGeneratorArg(generator)], opts);
  } catch (err) {
    if (!(err instanceof InDoubtError)) throw err;
    const hostIo = /genjob: (EGJ_IO: [^\n]*)/.exec(err.stderrTail)?.[1];
    if (hostIo !== undefined)
      throw new HostIoError(
        `${where}: the host failed before it could serve (nothing was claimed): ${hostIo}`,
      );
    throw new UsageError(
      'EGJ_HOST_NOT_SERVING',
      `${where}: did not answer as genjob serve; is genjob installed there, and does the remote command start it? (${err.message})`,
    );
  }
  const answer = checkOf(client.hello);
  if (!answer.ok) {
    client.kill();
    throw new UsageError(answer.code, `${where}: ${answer.message}`);
  }
  return client;
}
