// The run gate under worker faults, through the built CLI: two workers killed -9 mid-run and their leases
// reaped — the gate stays 75 (open) at every step until every job has an outcome, then gives the right
// fraction; a worker frozen with SIGSTOP whose lease was reaped wakes after the gate closed and delivers
// its old epoch — refused by fencing, it changes neither the gate's verdict nor its record.
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { afterTest } from '../helpers/temp-store.js';
import { json, mintRun, mod, type RunBox, runBox } from './run-helpers.js';
import { descendantsOf } from './ssh-helpers.js';
import { spawnCli, until as untilPolls } from './worker-helpers.js';

// polls of 10 ms, at least 300 s: a guard against a hang only, and one that fires before the test's own
// 600 s limit, so a hang says what it waited for and where the jobs were
const until = (what: string, cond: () => boolean, explain?: () => string) =>
  untilPolls(what, cond, 30_000, explain);

function procState(pid: number): string {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '')[0]!; // "pid (comm) S ..."
}

/**
 * A worker of the run in the background, as if on its own host (its own result cache). Its lease TTL
 * is the default: a worker reaps stale leases as it starts, and with a TTL of 1 s a second worker
 * started on a loaded box could reap the first one's lease between two of its heartbeats, take the
 * job again itself, and leave the other blocked job unclaimed.
 */
/** Each background worker of the test: its pid, and once it has exited, its exit code and stderr's tail. */
const workers = new Map<string, { pid: number; exit?: string }>();

function worker(sb: RunBox, host: string, run: string, extra: string[] = []) {
  const w = spawnCli(sb.repo, ['work', '--run', run, '--quiet', ...extra, ...sb.gen], {
    ...process.env,
    XDG_CACHE_HOME: join(sb.base, `cache-${host}`),
  });
  const seen: { pid: number; exit?: string } = { pid: w.pid! };
  workers.set(host, seen);
  void w.then((r) => {
    seen.exit = `exit ${r.exitCode ?? r.signal}: ${String(r.stderr).slice(-1500)}`;
  });
  afterTest(() => {
    writeFileSync(join(sb.base, 'release'), '');
    w.kill('SIGCONT');
    w.kill('SIGKILL');
  });
  return w;
}

/** Processes whose environment names one of the sandbox's host caches: the serves a killed worker left. */
function orphans(base: string): number {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p)))
    try {
      if (readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`=${join(base, 'cache-')}`)) n++;
    } catch {
      // gone meanwhile, or not ours
    }
  return n;
}

const started = (sb: RunBox) => readdirSync(sb.base).filter((n) => n.startsWith('started-'));

/** Where the run's jobs are, which generations started, and how many serves are left: for a hang's message. */
function where(sb: RunBox): string {
  const state = (d: string) => readdirSync(join(sb.repo, '.gen', d)).map((n) => n.slice(0, 12));
  const each = [...workers].map(([host, w]) => {
    if (w.exit !== undefined) return `worker ${host} ${w.exit}`;
    try {
      // the worker and every process under it: state, where the kernel has it waiting, command line
      const procs = [{ pid: w.pid, cmdline: 'genjob work' }, ...descendantsOf(w.pid)].map((p) => {
        try {
          const wchan = readFileSync(`/proc/${p.pid}/wchan`, 'utf8');
          return `    ${p.pid} ${procState(p.pid)} ${wchan} ${p.cmdline.slice(0, 160)}`;
        } catch {
          return `    ${p.pid} gone`;
        }
      });
      return `worker ${host} running:\n${procs.join('\n')}`;
    } catch {
      return `worker ${host} gone`;
    }
  });
  const dir = join(sb.repo, '.gen', 'journal.d');
  const events = existsSync(dir)
    ? readdirSync(dir)
        .flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean))
        .sort()
        .slice(-40)
    : [];
  return `queue ${state('queue')} running ${state('running')} received ${state('received')} dead ${state('dead')}; started ${started(sb)}; serves left ${orphans(sb.base)}\n${each.join('\n')}\njournal (last 40):\n${events.join('\n')}`;
}

async function gateOpen(sb: RunBox, run: string): Promise<string> {
  const r = await sb.genjob(['gate', '--run', run]);
  expect(r.exitCode, r.stdout + r.stderr).toBe(75);
  return r.stdout;
}

describe('the run gate under worker faults', () => {
  it('stays 75 while workers killed -9 leave jobs running and until their leases are reaped and worked', async () => {
    const sb = await runBox(4);
    const jobs = await mintRun(sb, 'k');
    sb.setGen({ block: ['m00', 'm01'], fail: ['m03'] });
    const a = worker(sb, 'a', 'k');
    const b = worker(sb, 'b', 'k');
    await until(
      'both workers to be generating a blocked job',
      () => started(sb).length === 2,
      () => where(sb),
    );
    expect(await gateOpen(sb, 'k')).toMatch(/^gate k: open, waiting for \d of 4 job\(s\):/);

    process.kill(a.pid!, 'SIGKILL');
    process.kill(b.pid!, 'SIGKILL');
    await Promise.all([a, b]);
    const running = readdirSync(join(sb.repo, '.gen', 'running')).map((n) => n.slice(0, 12));
    expect(running).toHaveLength(2);
    const out = await gateOpen(sb, 'k');
    for (const k of running) expect(out).toContain(`  ${k}  running: its attempt has not delivered yet\n`);

    // the killed workers' leases are reaped (their processes are gone): queued again, still open
    const reaped = json<{ reaped: Array<{ key: string }> }>(
      await sb.genjob(['reap', '--lease-ttl', '60', '--json']),
    );
    expect(reaped.reaped.map((r) => r.key.slice(0, 12)).sort()).toEqual(running.sort());
    const queued = await gateOpen(sb, 'k');
    for (const k of running) expect(queued).toContain(`  ${k}  queued: no worker has taken it yet\n`);

    // a third worker, on another host, finishes the run: 3 of 4 pass (m03 aborts every time)
    sb.setGen({ fail: ['m03'] });
    const third = spawnCli(sb.repo, ['work', '--run', 'k', '--quiet', ...sb.gen], {
      ...process.env,
      XDG_CACHE_HOME: join(sb.base, 'cache-c'),
    });
    // a hang guard that fires before the test's own limit, so a hang shows where the jobs were
    let hung = '';
    const guard = setTimeout(() => {
      hung = where(sb);
      third.kill('SIGKILL');
    }, 300_000);
    const c = await third;
    clearTimeout(guard);
    expect(c.exitCode, `${c.stderr}${hung}`).toBe(0);
    const closed = await sb.genjob(['gate', '--run', 'k']);
    expect(closed.exitCode).toBe(3);
    expect(closed.stdout).toMatch(
      new RegExp(
        `^gate k: NOT met: 3/4 = 75\\.0% passed \\(min 100\\.0%; 1 failed\\)\\n {2}${jobs[3]!.key.slice(0, 12)} {2}receipt aborted\\n`,
      ),
    );
    expect((await sb.genjob(['gate', '--run', 'k', '--min-pass', '0.75'])).exitCode).toBe(0);
    for (const i of [0, 1, 2]) expect(readFileSync(join(sb.repo, mod(i)), 'utf8')).toBe(`# module ${i}\n`);
    // the serves the killed workers left still generate m00 and m01: let them end before the directory goes
    writeFileSync(join(sb.base, 'release'), '');
    await until(
      'the serves the killed workers left to end',
      () => orphans(sb.base) === 0,
      () => where(sb),
    );
  });

  it("work --run alone takes back a killed worker's jobs and works them, with no reap before it", async () => {
    const sb = await runBox(2);
    await mintRun(sb, 'w');
    sb.setGen({ block: ['m00', 'm01'] });
    const a = worker(sb, 'a', 'w', ['--concurrency', '2']);
    await until(
      'the worker to be generating both jobs',
      () => started(sb).length === 2,
      () => where(sb),
    );
    process.kill(a.pid!, 'SIGKILL');
    await a;
    expect(readdirSync(join(sb.repo, '.gen', 'running'))).toHaveLength(2);
    // their holder is gone: the run's next worker reaps them as it starts and works them (it said
    // "nothing queued in run w" and left the gate open for good)
    sb.setGen({});
    const next = await sb.genjob(['work', '--run', 'w', '--quiet', '--json', ...sb.gen], {
      env: { XDG_CACHE_HOME: join(sb.base, 'cache-b') },
    });
    expect(next.exitCode, next.stderr).toBe(0);
    const done = json<{ outcomes: Array<{ outcome: string }>; reaped: unknown[] }>(next);
    expect(done.reaped).toHaveLength(2);
    expect(done.outcomes.map((x) => x.outcome)).toEqual(['received', 'received']);
    expect((await sb.genjob(['gate', '--run', 'w'])).exitCode).toBe(0);
    writeFileSync(join(sb.base, 'release'), '');
    await until(
      'the serves the killed worker left to end',
      () => orphans(sb.base) === 0,
      () => where(sb),
    );
  });

  it('is not changed by a frozen worker that wakes after its lease was reaped and the gate closed', async () => {
    const sb = await runBox(2);
    const jobs = await mintRun(sb, 'f');
    const frozenKey = jobs[0]!.key;
    sb.setGen({ block: ['m00'] });
    const first = worker(sb, 'first', 'f');
    await until('the first worker to generate m00', () => existsSync(join(sb.base, `started-${frozenKey}`)));
    process.kill(first.pid!, 'SIGSTOP');
    await until('the first worker to stop', () => procState(first.pid!) === 'T');
    // its heartbeat stopped: the lease ages past the TTL (made so, not waited for) and is reaped
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(join(sb.repo, '.gen', 'leases', `${frozenKey}.json`), past, past);
    const reaped = json<{ reaped: Array<{ key: string; epoch: number }> }>(
      await sb.genjob(['reap', '--lease-ttl', '1', '--json']),
    );
    expect(reaped.reaped).toMatchObject([{ key: frozenKey, epoch: 1 }]);

    sb.setGen({});
    const second = await spawnCli(sb.repo, ['work', '--run', 'f', '--quiet', ...sb.gen], {
      ...process.env,
      XDG_CACHE_HOME: join(sb.base, 'cache-second'),
    });
    expect(second.exitCode, String(second.stderr)).toBe(0);
    const closed = await sb.genjob(['gate', '--run', 'f']);
    expect(closed.exitCode, closed.stdout).toBe(0);
    expect(closed.stdout).toMatch(/^gate f: met: 2\/2 = 100\.0% passed/);
    const recordFile = join(sb.repo, '.gen', 'runs', 'f.gates', '1.json');
    const record = readFileSync(recordFile);

    // the frozen worker wakes and delivers epoch 1's result: fenced off, it stands down (exit 4)
    writeFileSync(join(sb.base, 'release'), '');
    process.kill(first.pid!, 'SIGCONT');
    const late = await first;
    expect(late.exitCode, String(late.stderr)).toBe(4);
    // whether it stood down at its next heartbeat or at delivery, epoch 2's receipt stands
    expect(
      JSON.parse(readFileSync(join(sb.repo, '.gen', 'receipts', `${frozenKey}.json`), 'utf8')).epoch,
    ).toBe(2);

    const again = await sb.genjob(['gate', '--run', 'f']);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toBe(closed.stdout.replace(/\)\n$/, ', unchanged since it was written)\n'));
    expect(readdirSync(join(sb.repo, '.gen', 'runs', 'f.gates')).sort()).toEqual(['1.json', '1.seal']);
    expect(readFileSync(recordFile)).toEqual(record);
    expect((await sb.genjob(['apply', '--run', 'f', '--gated'])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe('# module 0\n# done: Edit m00\n');
  });
});
