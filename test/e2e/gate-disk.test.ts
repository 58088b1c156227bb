// A disk that fails while a run's gate reads decides nothing: reading the run's seal, an output the gate
// verifies, or the check record it requires, with EIO (injected by strace on exactly that file: -P) is
// EGJ_IO, exit 5, with no gate record written; the gate run again on a sound disk decides the run and
// writes its one record. Before, the first read as "not minted by your genjob" (exit 3), the second failed
// the job, closing the gate NOT met, and the third was a record ignored (an older one would decide).
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { failingOn, haveStrace } from '../helpers/strace-fault.js';
import {
  CLI,
  DEMO_GENERATOR,
  genDir,
  makeSandbox,
  mintKey,
  type Sandbox,
  TIMEOUT_INSTRUCTION,
} from './helpers.js';

const PATHS = ['src/user.py', 'tests/test_user.py'];
const GATE = ['gate', '--run', 'r', '--min-pass', '1'];
const GATE_CHECKED = [...GATE, '--require-check', 't'];

/** `gate`, with every openat of `file` failing with EIO. */
const gateFailingOn = (sb: Sandbox, file: string, gate: readonly string[]) =>
  execa('strace', failingOn(file, 'openat', 'EIO', [process.execPath, CLI, ...gate]), {
    cwd: sb.repo,
    env: { XDG_CACHE_HOME: sb.cache, GENJOB_DEBUG: '' },
    reject: false,
  });

describe.skipIf(!haveStrace)('a disk that fails under the gate', () => {
  const files = [
    { what: "the run's seal", file: (sb: Sandbox, _key: string) => join(sb.repo, '.gen', 'runs', 'r.seal') },
    {
      what: 'an output the gate verifies',
      file: (sb: Sandbox, key: string) => join(sb.repo, '.gen', 'out', key, 'src', 'user.py'),
    },
    {
      what: 'the check record it requires',
      checked: true,
      file: (sb: Sandbox, key: string) => {
        const dir = join(sb.repo, '.gen', 'checks', key, 't');
        return join(dir, readdirSync(dir).find((n) => n.endsWith('.json'))!);
      },
    },
  ];
  for (const f of files)
    it(`reading ${f.what}: EGJ_IO (exit 5), no gate record; the next gate decides`, async () => {
      const sb = await makeSandbox();
      const gate = f.checked ? GATE_CHECKED : GATE;
      if (f.checked) {
        // a checker that passes, its record on HEAD (a check runs on HEAD plus the outputs)
        writeFileSync(
          join(sb.repo, 'genjob.config.json'),
          JSON.stringify({ checkers: { t: { run: 'true' } } }),
        );
        await execa('git', ['add', '-A'], { cwd: sb.repo });
        await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base'], {
          cwd: sb.repo,
        });
      }
      const key = await mintKey(sb, TIMEOUT_INSTRUCTION, PATHS, ['--run', 'r']);
      const work = await sb.genjob(['work', '--once', '--no-sandbox', '--generator', DEMO_GENERATOR]);
      expect(work.exitCode, work.stderr).toBe(0);
      if (f.checked) {
        const check = await sb.genjob(['check', key, '--no-sandbox']);
        expect(check.exitCode, check.stderr).toBe(0);
      }
      const file = f.file(sb, key);
      expect(existsSync(file)).toBe(true);

      const r = await gateFailingOn(sb, file, gate);
      expect(r.exitCode, r.stderr).toBe(5);
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('genjob: '));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^genjob: EGJ_IO: .*: [\w ()]+ failed: .*\(EIO\)$/);
      expect(lines[0]).toContain(file);
      expect(genDir(sb, 'runs/r.gates')).toEqual([]);

      const again = await sb.genjob(gate);
      expect(again.exitCode, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^gate r: met: 1\/1 = 100\.0% passed/m);
      expect(genDir(sb, 'runs/r.gates')).toEqual(['1.json', '1.seal']);
    });
});
