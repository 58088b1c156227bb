// For tests that run serve's code in-process: what it writes to process.stderr (relayed generator
// output, cache warnings) is captured for assertions instead of reaching the test run's own stderr.
import { afterEach, beforeEach, vi } from 'vitest';

/** Capture process.stderr for each test of the calling file; the returned function reads what was written. */
export function quietStderr(): () => string {
  let written: string[] = [];
  beforeEach(() => {
    written = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
      return true;
    });
  });
  afterEach(() => vi.restoreAllMocks());
  return () => written.join('');
}
