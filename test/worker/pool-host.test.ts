// A pool's host: `N/spec` gives it N slots; once it failed it is left alone for --host-backoff (1 s
// unless told), twice as long after each failure in a row up to a minute, and takes no more jobs after
// MAX_FAILURES in a row; the flag and its config key refuse a wait that is not above 0 or over a minute.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ServeLauncher } from '../../src/transport/launcher.js';
import {
  BACKOFF_BASE_MS,
  BACKOFF_MAX_MS,
  MAX_FAILURES,
  Pool,
  PoolHost,
  parseSlots,
} from '../../src/worker/pool.js';
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

  it('is down until its wait is over, and at once again when a session opens; given up, for good', () => {
    const host = new PoolHost(launcher, 1, 50);
    expect(host.isDown(0)).toBe(false);
    host.markDown('refused', 1000);
    expect([host.isDown(1000), host.isDown(1049), host.isDown(1050)]).toEqual([true, true, false]);
    host.markDown('refused', 2000);
    expect([host.isDown(2099), host.isDown(2100)]).toEqual([true, false]);
    host.markReachable();
    expect(host.isDown(2000)).toBe(false);
    waits(host, MAX_FAILURES);
    expect(host.isDown(Number.MAX_SAFE_INTEGER)).toBe(true);
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

describe('a pool', () => {
  it('refuses a host given twice, and counts the slots of all', () => {
    const at = (destination: string) => ({ destination }) as unknown as ServeLauncher;
    expect(() => new Pool([new PoolHost(at('a'), 2), new PoolHost(at('a'), 1)], 0)).toThrow(
      expect.objectContaining({
        code: 'EGJ_USAGE',
        message: 'a is given twice; give it once with a slot count (N/a)',
      }),
    );
    expect(new Pool([new PoolHost(at('a'), 2), new PoolHost(at('b'), 3)], 0).slotCount).toBe(5);
  });
});

describe('parseSlots', () => {
  it('reads N/spec as N slots on spec, and a bare spec as the default', () => {
    expect(parseSlots('4/gen@box', 2, '--host')).toEqual({ slots: 4, spec: 'gen@box' });
    expect(parseSlots('1/box', 2, '--host')).toEqual({ slots: 1, spec: 'box' });
    expect(parseSlots('1024/box', 2, '--host')).toEqual({ slots: 1024, spec: 'box' });
    expect(parseSlots('gen@box', 2, '--host')).toEqual({ slots: 2, spec: 'gen@box' });
    // only digits before the first "/" are a count: the rest is the spec as given
    expect(parseSlots('srun -n1 /bin/serve', 3, '--launch')).toEqual({
      slots: 3,
      spec: 'srun -n1 /bin/serve',
    });
    expect(parseSlots('2/a/b', 1, '--launch')).toEqual({ slots: 2, spec: 'a/b' });
    expect(parseSlots('x2/box', 1, '--host')).toEqual({ slots: 1, spec: 'x2/box' });
  });

  it.each([
    ['', '--host', 'host'],
    ['2/', '--host', 'host'],
    ['  ', '--launch', 'command'],
    ['3/ ', '--launch', 'command'],
  ])("refuses %j for %s: it names no %s (a script's unset variable; exit 2)", (spec, flag, what) => {
    expect(() => parseSlots(spec, 1, flag)).toThrow(
      expect.objectContaining({
        code: 'EGJ_USAGE',
        exitCode: 2,
        message: `${flag} ${JSON.stringify(spec)}: names no ${what}`,
      }),
    );
  });

  it.each(['0/box', '1025/box', '99999999999999999999/box'])(
    'refuses %s: a count is 1 to 1024 (exit 2)',
    (spec) => {
      expect(() => parseSlots(spec, 1, '--host')).toThrow(
        expect.objectContaining({
          code: 'EGJ_USAGE',
          exitCode: 2,
          message: `--host ${spec}: the slot count before "/" must be 1 to 1024`,
        }),
      );
    },
  );
});
