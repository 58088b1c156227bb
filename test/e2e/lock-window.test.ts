// An apply killed in the instant after it made the apply lock and before it recorded itself as the
// holder (strace delivers SIGKILL on the first look at the lock directory after its mkdir: the lock
// exists, no owner record does) does not make the next apply wait out the lock's staleness: the killed
// apply's intent names it, it is gone, and the next apply takes the lock over at once and finishes.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { haveStrace } from '../helpers/strace-fault.js';
import { CLI, DEMO_GENERATOR, makeSandbox, mintKey, snapshot, TIMEOUT_INSTRUCTION } from './helpers.js';

describe.skipIf(!haveStrace)('a lock whose holder died before recording itself', () => {
  it('is taken over at once by the next apply', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py', 'tests/test_user.py']);
    const work = await sb.genjob(['work', '--once', '--no-sandbox', '--generator', DEMO_GENERATOR]);
    expect(work.exitCode, work.stderr).toBe(0);
    const before = snapshot(sb.repo);
    const lockDir = join(sb.repo, '.gen', 'locks', 'apply.lock');
    const killed = await execa(
      'strace',
      [
        '-f',
        '-qq',
        '-o',
        join(sb.base, 'strace.log'),
        // only calls naming the lock directory: the first stat after its mkdir ends the process
        '-P',
        lockDir,
        '-e',
        'trace=mkdir,statx,newfstatat',
        '-e',
        'inject=statx,newfstatat:signal=KILL:when=1',
        process.execPath,
        CLI,
        'apply',
        key,
      ],
      { cwd: sb.repo, env: { XDG_CACHE_HOME: sb.cache, GENJOB_DEBUG: '' }, reject: false },
    );
    expect(killed.signal ?? killed.exitCode).toMatch(/SIGKILL|137/);
    // the killed apply made the lock and wrote nothing else: no record, the tree untouched
    expect(existsSync(lockDir)).toBe(true);
    expect(existsSync(`${lockDir}.owner`)).toBe(false);
    expect(snapshot(sb.repo)).toEqual(before);

    const again = await sb.genjob(['apply', key]);
    expect(again.exitCode, again.stderr).toBe(0); // not EGJ_LOCKED until the lock is stale
    expect(snapshot(sb.repo)).not.toEqual(before);
    expect(readdirSync(join(sb.repo, '.gen', 'locks')).filter((n) => n.startsWith('apply.lock'))).toEqual([]);
  });
});
