import { afterEach, describe, expect, it, vi } from 'vitest';
import { lineRelay, notice } from '../../src/cli/stderr-lines.js';

/** What the code under test wrote on stderr meanwhile. */
function captureStderr(): () => string {
  const out: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  return () => out.join('');
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('notice', () => {
  it('prints one genjob: line with every control character of a host text made visible', () => {
    const got = captureStderr();
    notice('h is down (\x1b]8;;http://evil\x07click\x1b]8;;\x07\r\u009b2K)');
    expect(got()).toBe('genjob: h is down (\\x1b]8;;http://evil\\x07click\\x1b]8;;\\x07\\x0d\\x9b2K)\n');
  });
});

describe('lineRelay', () => {
  it('names each line by the job on the session, else by the destination', () => {
    const got = captureStderr();
    const relay = lineRelay('gen@box:22');
    relay.write(Buffer.from('starting\n'));
    relay.label = '3f2a9c1b0d4e';
    relay.write(Buffer.from('step 1\nstep'));
    relay.write(Buffer.from(' 2\r\n'));
    relay.label = undefined;
    relay.write(Buffer.from('bye'));
    relay.end();
    expect(got()).toBe(
      '[gen@box:22] starting\n[3f2a9c1b0d4e] step 1\n[3f2a9c1b0d4e] step 2\n[gen@box:22] bye\n',
    );
  });

  it('escapes a C1 character split across two chunks, and OSC 52, BEL and CR inside a line', () => {
    const got = captureStderr();
    const relay = lineRelay('local');
    const bytes = Buffer.from('x\u009b2K\u202ey \x1b]52;c;cHduZWQ=\x07 a\rb\n');
    const cut = bytes.indexOf(0xc2) + 1;
    relay.write(bytes.subarray(0, cut));
    relay.write(bytes.subarray(cut));
    expect(got()).toBe('[local] x\\x9b2K\\u202ey \\x1b]52;c;cHduZWQ=\\x07 a\\x0db\n');
  });

  it('prints a line that never ends in pieces instead of holding it without bound', () => {
    const got = captureStderr();
    const relay = lineRelay('local');
    relay.write(Buffer.from('y'.repeat(10_000)));
    expect(got().split('\n').filter(Boolean).length).toBe(2);
  });
});
