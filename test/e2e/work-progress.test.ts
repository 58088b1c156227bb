// work: [done/total] with elapsed and ETA for --drain, time-stamped lines for --watch, the
// generator's output relayed (also without a terminal) unless --quiet, exit 130 after SIGINT once the
// job in flight finished, and --fail-on-error → exit 3 for CI.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, genDir, makeSandbox, mintKey, PKG } from './helpers.js';

describe('work progress and exit codes', () => {
  it('--drain counts [done/total] with the elapsed time and an ETA', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('gen.sh', 'echo x >> README.md');
    for (const i of [1, 2, 3]) await mintKey(sb, `Note ${i}`, ['README.md']);
    const r = await sb.genjob(['work', '--drain', '--generator', gen]);
    expect(r.exitCode).toBe(0);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^genjob: \[1\/3\] elapsed \d+s, eta \d+s [0-9a-f]{12} received ok/);
    expect(lines[1]).toMatch(/^genjob: \[2\/3\] elapsed \d+s, eta \d+s [0-9a-f]{12} received ok/);
    expect(lines[2]).toMatch(/^genjob: \[3\/3\] elapsed \d+s [0-9a-f]{12} received ok/);
  });

  it("relays the generator's output without a terminal (CI), each line named by its job; --quiet silences it", async () => {
    const sb = await makeSandbox();
    const gen = sb.script(
      'gen.sh',
      'echo "working on $GENJOB_KEY"; echo "a warning" >&2; echo x >> README.md',
    );
    const keys = [await mintKey(sb, 'One', ['README.md']), await mintKey(sb, 'Two', ['src/user.py'])];
    const r = await sb.genjob(['work', '--drain', '--generator', gen]);
    expect(r.exitCode).toBe(0);
    for (const key of keys) {
      const k = key.slice(0, 12);
      expect(r.stderr).toContain(`[${k}] working on ${key}\n`);
      expect(r.stderr).toContain(`[${k}] a warning\n`);
    }
    const sb2 = await makeSandbox();
    await mintKey(sb2, 'One', ['README.md']);
    const quiet = await sb2.genjob(['work', '--drain', '--quiet', '--generator', gen]);
    expect(quiet.exitCode).toBe(0);
    expect(quiet.stderr).toBe('');
  });

  it('--fail-on-error exits 3 when a job it took ended aborted; without it, 0', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('gen.sh', 'echo broken >&2; exit 7');
    await mintKey(sb, 'Fails', ['README.md']);
    const r = await sb.genjob(['work', '--once', '--quiet', '--fail-on-error', '--generator', gen]);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toMatch(/1 job\(s\) ended aborted or rejected/);
    const sb2 = await makeSandbox();
    await mintKey(sb2, 'Fails', ['README.md']);
    expect((await sb2.genjob(['work', '--once', '--quiet', '--generator', gen])).exitCode).toBe(0);
  });

  it('--watch stamps each line with the time; SIGINT exits 130 after the job in flight finished', async () => {
    const sb = await makeSandbox();
    const started = join(sb.base, 'started');
    const release = join(sb.base, 'release');
    const gen = sb.script(
      'gen.sh',
      `: > ${started}\nwhile [ ! -e ${release} ]; do sleep 0.05; done\necho x >> README.md`,
    );
    const key = await mintKey(sb, 'Slow', ['README.md']);
    const w = execa(process.execPath, [CLI, 'work', '--watch', '--generator', gen], {
      cwd: sb.repo,
      env: { XDG_CACHE_HOME: sb.cache, GENJOB_GENERATOR_BIND: PKG, GENJOB_GENERATOR_BIND_RW: sb.base },
      reject: false,
    });
    // waits on conditions, however slow the machine (the test's guard ends a wait for ever)
    while (!existsSync(started)) await new Promise((r) => setTimeout(r, 50));
    let said = '';
    w.stderr?.on('data', (d: Buffer) => {
      said += d.toString();
    });
    w.kill('SIGINT');
    while (!said.includes('SIGINT')) await new Promise((r) => setTimeout(r, 20));
    writeFileSync(release, '');
    const r = await w;
    expect(r.exitCode).toBe(130);
    expect(String(r.stderr)).toMatch(/SIGINT: no new claims/);
    expect(String(r.stderr)).toMatch(
      new RegExp(
        `\\ngenjob: \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z \\[1\\] ${key.slice(0, 12)} received ok`,
      ),
    );
    expect(genDir(sb, 'received')).toEqual([`${key}.json`]);
  });
});
