// A result line that cannot be written (stdout on a full device, or a closed pipe) ends the command
// quietly with exit 5 — no stack trace — and the work it did stays done and recorded.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/store/journal.js';
import { Store } from '../../src/store/store.js';
import { CLI, DEMO_GENERATOR, makeSandbox, mintKey, snapshot, TIMEOUT_INSTRUCTION } from './helpers.js';

const PATHS = ['src/user.py', 'tests/test_user.py'];

/** Run the CLI with its stdout on /dev/full. */
async function toDevFull(cwd: string, env: Record<string, string>, args: readonly string[]) {
  // the descriptor itself, not a pipe execa would copy from: the CLI must see the ENOSPC
  const full = openSync('/dev/full', 'w');
  try {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { ...process.env, ...env, GENJOB_DEBUG: '' },
      stdio: ['ignore', full, 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    const exitCode = await new Promise<number | null>((resolve) => child.once('close', resolve));
    return { exitCode, stderr };
  } finally {
    closeSync(full);
  }
}

describe('stdout that cannot be written', () => {
  it('mint > /dev/full: exit 5, one EGJ_IO line naming ENOSPC, and the job is minted', async () => {
    const sb = await makeSandbox();
    const r = await toDevFull(sb.repo, { XDG_CACHE_HOME: sb.cache }, [
      'mint',
      '-m',
      TIMEOUT_INSTRUCTION,
      ...PATHS,
    ]);
    expect(r.exitCode).toBe(5);
    expect(r.stderr).toMatch(
      /^genjob: EGJ_IO: stdout: write failed: no space left on device \(ENOSPC\);[^\n]*\n$/,
    );
    expect(readdirSync(join(sb.repo, '.gen', 'queue'))).toHaveLength(1);
  });

  it('revert > /dev/full: exit 5, and the revert is done and journalled', async () => {
    const sb = await makeSandbox();
    const original = snapshot(sb.repo);
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, PATHS);
    expect((await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    const r = await toDevFull(sb.repo, { XDG_CACHE_HOME: sb.cache }, ['revert', key]);
    expect(r.exitCode).toBe(5);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(snapshot(sb.repo)).toEqual(original);
    expect(readJournal(new Store(sb.repo), key).map((e) => e.event)).toContain('reverted');
  });

  it('mint | head -c0: exit 5 and nothing on stderr (the reader left)', async () => {
    const sb = await makeSandbox();
    const r = await execa(
      'bash',
      [
        '-c',
        `set -o pipefail; sleep 0.2 | true; ${JSON.stringify(process.execPath)} ${JSON.stringify(CLI)} mint -m x src/user.py | head -c0`,
      ],
      { cwd: sb.repo, env: { XDG_CACHE_HOME: sb.cache, GENJOB_DEBUG: '' }, reject: false },
    );
    expect(r.exitCode).toBe(5);
    expect(String(r.stderr)).toBe('');
    expect(readdirSync(join(sb.repo, '.gen', 'queue'))).toHaveLength(1);
  });
});
