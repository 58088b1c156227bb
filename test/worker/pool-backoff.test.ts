// A host that failed is left alone for --host-backoff (1 s unless told), twice as long after each
// failure in a row up to a minute, and takes no more jobs after MAX_FAILURES in a row; the flag and
// its config key refuse a wait that is not above 0 or longer than that minute.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeLauncher } from '../../src/transport/launcher.js';
import { BACKOFF_BASE_MS, BACKOFF_MAX_MS, MAX_FAILURES, PoolHost } from '../../src/worker/pool.js';
import { tempDir } from '../helpers/temp-store.js';

const GENJOB = new URL('../../bin/genjob.js', import.meta.url).pathname;

/** A host's waits after each of `n` failures in a row, and whether it was given up after each. */
function waits(host: PoolHost, n: number): Array<[number, boolean]> {
  const out: Array<[number, boolean]> = [];
  for (let i = 0; i < n; i++) out.push([host.markDown('refused', 0), host.retired !== undefined]);
  return out;
}

// markDown reads only the launcher's destination
const launcher = { destination: 'gen@box' } as unknown as ServeLauncher;

describe('a pool host that fails again and again', () => {
  it('waits 1 s, then twice as long after each failure in a row, and is given up after the seventh', () => {
    expect(BACKOFF_BASE_MS).toBe(1000);
    expect(MAX_FAILURES).toBe(7);
    expect(waits(new PoolHost(launcher, 1), 7)).toEqual([
      [1000, false],
      [2000, false],
      [4000, false],
      [8000, false],
      [16_000, false],
      [32_000, false],
      [BACKOFF_MAX_MS, true],
    ]);
  });

  it('starts from the --host-backoff it was given, and never waits more than a minute', () => {
    expect(waits(new PoolHost(launcher, 1, 50), 3)).toEqual([
      [50, false],
      [100, false],
      [200, false],
    ]);
    expect(waits(new PoolHost(launcher, 1, 40_000), 2)).toEqual([
      [40_000, false],
      [BACKOFF_MAX_MS, false],
    ]);
  });

  it('counts again from the first wait once a job reached a generator there', () => {
    const host = new PoolHost(launcher, 1, 50);
    waits(host, 3);
    host.markUp();
    expect(waits(host, 1)).toEqual([[50, false]]);
  });
});

describe('--host-backoff and host_backoff', () => {
  const work = (cwd: string, args: string[]) =>
    spawnSync(process.execPath, [GENJOB, 'work', '--drain', '--generator', 'true', ...args], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, XDG_CONFIG_HOME: join(cwd, 'xdg') },
    });

  it.each(['0', '-1', '61', 'soon'])('refuses --host-backoff %s before anything is claimed (exit 2)', (v) => {
    const dir = tempDir('gj-backoff-');
    const r = work(dir, ['--host-backoff', v]);
    expect({ status: r.status, stderr: r.stderr }).toMatchObject({
      status: 2,
      stderr: expect.stringContaining(
        `option '--host-backoff <seconds>' argument '${v}' is invalid. takes a number of seconds above 0`,
      ),
    });
  });

  it('takes a wait of a fraction of a second, on the command line or from the config file', () => {
    const dir = tempDir('gj-backoff-');
    spawnSync(process.execPath, [GENJOB, 'init'], { cwd: dir });
    expect(work(dir, ['--host-backoff', '0.05']).status).toBe(0); // queue empty
    writeFileSync(join(dir, 'genjob.config.json'), JSON.stringify({ host_backoff: 0.5 }));
    expect(work(dir, []).status).toBe(0);
  });

  it('refuses a config file whose host_backoff is longer than a minute (exit 2, naming the file)', () => {
    const dir = tempDir('gj-backoff-');
    spawnSync(process.execPath, [GENJOB, 'init'], { cwd: dir });
    const file = join(dir, 'genjob.config.json');
    writeFileSync(file, JSON.stringify({ host_backoff: 61 }));
    const r = work(dir, []);
    expect({ status: r.status, stderr: r.stderr }).toMatchObject({
      status: 2,
      stderr: expect.stringContaining('genjob.config.json'),
    });
    expect(r.stderr).toContain('"host_backoff": Too big: expected number to be <=60');
  });
});
