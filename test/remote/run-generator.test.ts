import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runGenerator } from '../../src/remote/run-generator.js';

function processState(pid: number): string {
  try {
    return /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 'gone';
  } catch {
    return 'gone';
  }
}

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gj-gen-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const base = () => ({
  workspace: dir,
  env: { GENJOB_INSTRUCTION: 'hi' },
  timeoutMs: 10_000,
  usageFile: join(dir, '..', `${dir.split('/').pop()}.usage`),
});

describe('runGenerator', () => {
  it('runs the command in the workspace with the GENJOB_ variables', async () => {
    const run = await runGenerator({
      ...base(),
      command: 'printf "%s" "$GENJOB_INSTRUCTION" > out.txt && test -n "$GENJOB_USAGE_FILE"',
    });
    expect(run.exitCode).toBe(0);
    expect(existsSync(join(dir, 'out.txt'))).toBe(true);
  });

  it('keeps the tail of stderr and the exit status of a failing generator', async () => {
    const run = await runGenerator({ ...base(), command: 'echo first >&2; echo last words >&2; exit 7' });
    expect(run.exitCode).toBe(7);
    expect(run.stderrTail).toMatch(/last words$/);
  });

  it('kills the whole process group on timeout, including what the generator started', async () => {
    const pidFile = join(dir, 'child.pid');
    const run = await runGenerator({
      ...base(),
      timeoutMs: 500,
      command: `sleep 30 & echo $! > ${pidFile}; wait`,
    });
    expect(run.timedOut).toBe(true);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await new Promise((r) => setTimeout(r, 100));
    // the background sleep is gone too (or a zombie waiting for init to reap it: no longer running)
    expect(processState(pid)).toMatch(/^(gone|Z)$/);
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
});
