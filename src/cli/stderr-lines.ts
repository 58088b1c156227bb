// What `work` (live, shadow and batch) prints on stderr while it runs: progress lines, notices and the
// relayed output of serve and its generator. Parts of all of them come from a host (reasons, stderr
// tails, a generator's own output), so every line passes terminalText() here, where it is printed:
// commands never write a progress line to stderr themselves. --json results on stdout stay exact
// JSON (main.ts).
import { StringDecoder } from 'node:string_decoder';
import { terminalText } from '../core/terminal-text.js';
import type { StderrRelay } from '../worker/serve-client.js';

/** A relayed line longer than this is printed in pieces rather than held back without end. */
const MAX_LINE_CHARS = 4096;
const MAX_DESTINATION_CHARS = 40;

/** `genjob: LINE` on stderr, with every control character of LINE made visible. */
export function notice(line: string): void {
  process.stderr.write(`genjob: ${terminalText(line)}\n`);
}

/**
 * A session's stderr, line by line, each line as `[LABEL] text`: LABEL is the short key of the job on
 * the session, or (between jobs: serve's start-up, its last words) the destination.
 */
export function lineRelay(destination: string): StderrRelay {
  const decoder = new StringDecoder('utf8');
  const where =
    destination.length > MAX_DESTINATION_CHARS
      ? `${destination.slice(0, MAX_DESTINATION_CHARS - 1)}…`
      : destination;
  let partial = '';
  const print = (relay: StderrRelay, line: string) =>
    process.stderr.write(`[${terminalText(relay.label ?? where)}] ${terminalText(line)}\n`);
  return {
    label: undefined,
    write(chunk) {
      partial += decoder.write(chunk);
      for (let nl = partial.indexOf('\n'); nl >= 0; nl = partial.indexOf('\n')) {
        print(this, partial.slice(0, nl).replace(/\r$/, ''));
        partial = partial.slice(nl + 1);
      }
      while (partial.length > MAX_LINE_CHARS) {
        print(this, partial.slice(0, MAX_LINE_CHARS));
        partial = partial.slice(MAX_LINE_CHARS);
      }
    },
    end() {
      partial += decoder.end();
      if (partial !== '') print(this, partial);
      partial = '';
    },
  };
}
