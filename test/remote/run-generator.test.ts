import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readUsage, runGenerator, USAGE_MAX_BYTES } from '../../src/remote/run-generator.js';
import type { SandboxPolicy } from '../../src/sandbox/policy.js';
import { liveProcesses } from '../helpers/processes.js';
import { quietStderr } from '../helpers/quiet-stderr.js';

const relayed = quietStderr();

/** A child that leaves the generator's process group (setpgid, not setsid), then sleeps as `sleep MARKER`. */
const setpgidSleep = (marker: string) => `perl -e 'setpgrp(0, 0); exec "sleep", "${marker}"'`;

let dir: string;
let ws: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gj-gen-'));
  ws = join(dir, 'files');
  mkdirSync(ws);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const BWRAP: SandboxPolicy = {
  kind: 'bwrap',
  network: false,
  envNames: [],
  binds: [],
  bindsRw: [],
  hidden: [],
};
const NONE: SandboxPolicy = { ...BWRAP, kind: 'none' };

const base = (policy: SandboxPolicy = BWRAP) => ({
  workspace: ws,
  scratch: dir,
  readOnly: [],
  policy,
  env: { GENJOB_INSTRUCTION: 'hi' },
  timeoutMs: 600_000, // a guard against a hang only (one test sets its own, the subject)
  usageFile: join(dir, '..', `${dir.split('/').pop()}.usage`),
});

describe('runGenerator', () => {
  it('runs the command in the workspace with the GENJOB_ variables', async () => {
    const run = await runGenerator({
      ...base(),
      command: 'printf "%s" "$GENJOB_INSTRUCTION" > out.txt && test -n "$GENJOB_USAGE_FILE"',
    });
    expect(run.exitCode).toBe(0);
    expect(readFileSync(join(ws, 'out.txt'), 'utf8')).toBe('hi');
  });

  it('keeps the tail of stderr and the exit status of a failing generator', async () => {
    const run = await runGenerator({ ...base(), command: 'echo first >&2; echo last words >&2; exit 7' });
    expect(run.exitCode).toBe(7);
    expect(run.stderrTail).toMatch(/last words$/);
    // and relays both lines to serve's own stderr as they come
    expect(relayed()).toBe('first\nlast words\n');
  });

  for (const policy of [BWRAP, NONE]) {
    it(`(${policy.kind}) kills on timeout everything the generator started, even a child in its own process group`, async () => {
      const marker = `3600.${process.pid}${policy.kind.length}1`;
      const run = await runGenerator({
        ...base(policy),
        timeoutMs: 500,
        command: `${setpgidSleep(marker)} & sleep 30 & wait`,
      });
      expect(run.timedOut).toBe(true);
      expect(liveProcesses(['sleep', marker])).toEqual([]);
    });

    it(`(${policy.kind}) ends a setpgid child left behind when the generator exits`, async () => {
      const marker = `3600.${process.pid}${policy.kind.length}2`;
      const run = await runGenerator({
        ...base(policy),
        command: `${setpgidSleep(marker)} > /dev/null 2>&1 & exit 0`,
      });
      expect(run.exitCode).toBe(0);
      // bwrap exits with its command's status while the kernel is still tearing down the PID namespace
      // (SIGKILL to what is left in it): wait for that teardown, however slow the machine; the child
      // itself would sleep an hour, so its end can only be the kill (the test's guard stops a wait for it)
      while (liveProcesses(['sleep', marker]).length > 0) await new Promise((r) => setTimeout(r, 20));
      expect(liveProcesses(['sleep', marker])).toEqual([]);
    });

    it(`(${policy.kind}) passes only the allowlisted environment`, async () => {
      process.env.AWS_SECRET_ACCESS_KEY = 'fake-secret';
      process.env.GENJOB_SIGN_KEY = '/nowhere/key';
      process.env.PASSED_ON = 'yes';
      try {
        const run = await runGenerator({
          ...base({ ...policy, envNames: ['PASSED_ON'] }),
          command: 'env > env.txt',
        });
        expect(run.exitCode).toBe(0);
        const names = readFileSync(join(ws, 'env.txt'), 'utf8')
          .split('\n')
          .map((l) => l.split('=')[0] ?? '')
          .filter((n) => n !== '');
        expect(names).not.toContain('AWS_SECRET_ACCESS_KEY');
        expect(names).not.toContain('GENJOB_SIGN_KEY');
        expect(names).toContain('PASSED_ON');
        const allowed =
          /^(PATH|LANG|LANGUAGE|TERM|TZ|LC_.*|HOME|PWD|OLDPWD|SHLVL|_|GENJOB_INSTRUCTION|GENJOB_USAGE_FILE|GENJOB_RUN|PASSED_ON)$/;
        expect(names.filter((n) => !allowed.test(n))).toEqual([]);
      } finally {
        delete process.env.AWS_SECRET_ACCESS_KEY;
        delete process.env.GENJOB_SIGN_KEY;
        delete process.env.PASSED_ON;
      }
    });
  }

  it('(bwrap) the workspace is the only writable place and paths outside it are not there', async () => {
    writeFileSync(join(tmpdir(), `gj-outside-${process.pid}`), 'secret');
    try {
      const run = await runGenerator({
        ...base(),
        command: `test ! -e ${tmpdir()}/gj-outside-${process.pid} && ! touch /usr/x 2>/dev/null && ! test -e /root/.ssh && touch ok`,
      });
      expect(run.exitCode, run.stderrTail).toBe(0);
      expect(existsSync(join(ws, 'ok'))).toBe(true);
    } finally {
      rmSync(join(tmpdir(), `gj-outside-${process.pid}`), { force: true });
    }
  });

  for (const policy of [BWRAP, NONE]) {
    it(`(${policy.kind}) says why a generator Linux would not start was not started, not that it was killed`, async () => {
      // an environment string past 128 KiB: what an instruction minted by an older genjob could hold
      const run = await runGenerator({
        ...base(policy),
        env: { GENJOB_INSTRUCTION: 'x'.repeat(200_000) },
        command: 'touch ran',
      });
      expect(run).toMatchObject({ exitCode: null, signal: null, timedOut: false, cancelled: false });
      expect(run.startError).toBe(
        'spawn E2BIG: its environment or arguments are longer than Linux starts a program with',
      );
      expect(existsSync(join(ws, 'ran'))).toBe(false);
    });
  }

  for (const policy of [BWRAP, NONE]) {
    it(`(${policy.kind}) a variable holding a NUL starts no process and is said so, not thrown`, async () => {
      const run = await runGenerator({
        ...base(policy),
        env: { GENJOB_INSTRUCTION: 'a\0b' },
        command: 'touch ran',
      });
      expect(run).toMatchObject({
        exitCode: null,
        signal: null,
        startError: 'an argument or variable holds a NUL character',
      });
      expect(existsSync(join(ws, 'ran'))).toBe(false);
    });
  }

  it('a generator that ran has no start error, whatever its exit', async () => {
    expect((await runGenerator({ ...base(), command: 'exit 3' })).startError).toBeNull();
  });

  it('reads the usage a generator reports and ignores a malformed report', async () => {
    const good = base();
    writeFileSync(good.usageFile, JSON.stringify({ prompt_tokens: 12, completion_tokens: 3, requests: 1 }));
    expect((await runGenerator({ ...good, command: 'true' })).usage).toEqual({
      prompt_tokens: 12,
      completion_tokens: 3,
      requests: 1,
    });
    writeFileSync(good.usageFile, '{oops');
    expect((await runGenerator({ ...good, command: 'true' })).usage).toBeUndefined();
    rmSync(good.usageFile, { force: true });
  });

  it('keeps at most the last 40 whole lines of stderr, within 2 KiB', async () => {
    const run = await runGenerator({
      ...base(),
      command: 'for i in $(seq 1 300); do echo "line $i" >&2; done; exit 1',
    });
    const lines = run.stderrTail.split('\n');
    expect(lines).toHaveLength(40);
    expect(lines[0]).toBe('line 261');
    expect(lines.at(-1)).toBe('line 300');
    const long = await runGenerator({
      ...base(),
      command: 'head -c 5000 /dev/zero | tr "\\0" x >&2; echo >&2; echo end >&2',
    });
    expect(long.stderrTail).toBe('end'); // the 5000-byte line was cut by the byte cap: dropped, not half-kept
  });
});

describe('readUsage', () => {
  const usage = { prompt_tokens: 5, completion_tokens: 6, requests: 1 };
  it.each([
    { name: 'a FIFO (never blocks)', make: (f: string) => execFileSync('mkfifo', [f]) },
    { name: 'a link to /dev/zero (never read)', make: (f: string) => symlinkSync('/dev/zero', f) },
    {
      name: 'a link to a file of valid usage (never followed)',
      make: (f: string) => {
        writeFileSync(`${f}.real`, JSON.stringify(usage));
        symlinkSync(`${f}.real`, f);
      },
    },
    { name: 'a directory', make: (f: string) => mkdirSync(f) },
    {
      name: 'a file over the cap',
      make: (f: string) => writeFileSync(f, `${JSON.stringify(usage)}${' '.repeat(USAGE_MAX_BYTES)}`),
    },
    { name: 'nothing', make: () => {} },
  ])('tamper: ignores $name', async (c) => {
    const file = join(dir, 'usage.json');
    c.make(file);
    expect(await readUsage(file)).toBeUndefined();
  });

  it('reads a regular file of JSON up to the cap', async () => {
    const file = join(dir, 'usage.json');
    writeFileSync(file, `${JSON.stringify(usage)}${' '.repeat(USAGE_MAX_BYTES - 60)}`);
    expect(await readUsage(file)).toEqual(usage);
  });
});
