// A disk that fails under `check` is EGJ_IO (exit 5), one line naming the file, and nothing left behind:
// the stat of an output's verified bytes failing with EIO (strace on exactly that file: -P) once ended
// the process with an unhandled rejection (exit 1 and a stack), the git commands started beside it
// outliving the scratch directory they worked in.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { failingOn, haveStrace } from '../helpers/strace-fault.js';
import { CLI, DEMO_GENERATOR, makeSandbox, mintKey, TIMEOUT_INSTRUCTION } from './helpers.js';

describe.skipIf(!haveStrace)('a disk that fails under check', () => {
  it('the stat of an output failing with EIO: EGJ_IO (exit 5) naming it, no scratch left; a re-run records', async () => {
    const sb = await makeSandbox();
    writeFileSync(join(sb.repo, 'genjob.config.json'), JSON.stringify({ checkers: { t: { run: 'true' } } }));
    await execa('git', ['add', '-A'], { cwd: sb.repo });
    await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base'], {
      cwd: sb.repo,
    });
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py', 'tests/test_user.py']);
    const work = await sb.genjob(['work', '--once', '--no-sandbox', '--generator', DEMO_GENERATOR]);
    expect(work.exitCode, work.stderr).toBe(0);
    const output = join(sb.repo, '.gen', 'out', key, 'src', 'user.py');

    const r = await execa(
      'strace',
      failingOn(output, 'statx,newfstatat', 'EIO', [process.execPath, CLI, 'check', key, '--no-sandbox']),
      { cwd: sb.repo, env: { XDG_CACHE_HOME: sb.cache, GENJOB_DEBUG: '' }, reject: false },
    );
    expect(r.exitCode, r.stderr).toBe(5);
    expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    const lines = r.stderr.split('\n').filter((l) => l.startsWith('genjob: '));
    expect(lines).toEqual([`genjob: EGJ_IO: ${output}: stat failed: i/o error (EIO)`]);
    expect(readdirSync(join(sb.repo, '.gen', 'staging')).filter((n) => n.startsWith('.check-'))).toEqual([]);

    const again = await sb.genjob(['check', key, '--no-sandbox']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(readdirSync(join(sb.repo, '.gen', 'checks', key, 't'))).toHaveLength(1);
  });
});
