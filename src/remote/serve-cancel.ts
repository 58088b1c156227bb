// While serve generates, the worker may send one message on the session: `cancel` (`genjob cancel
// KEY` of a running job). It is read here, beside the generation, and aborts the signal the
// generator runs under. Whatever else comes (the session's next request, or its end) is handed
// back to the session loop with its body unread.
import type { FrameReader, Header } from '../transport/protocol.js';

/** A cancel message has no body worth reading; more than this breaks the session. */
const MAX_CANCEL_BODY_BYTES = 4096;

export interface CancelWatch {
  /** Aborted when the worker cancelled the request in flight. */
  signal: AbortSignal;
  /** The session's next message header after any cancel, or null at the end of the stream. */
  next: Promise<Header | null>;
}

export function watchForCancel(reader: FrameReader): CancelWatch {
  const controller = new AbortController();
  const next = (async () => {
    const header = await reader.readHeader();
    if (header?.type !== 'cancel') return header;
    await reader.drain(reader.body(MAX_CANCEL_BODY_BYTES));
    controller.abort();
    return reader.readHeader();
  })();
  next.catch(() => {}); // a broken stream surfaces where the session loop reads `next`
  return { signal: controller.signal, next };
}
