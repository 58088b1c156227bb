// `genjob cancel KEY` of a running job, through the built CLI: the worker stands down at its next
// heartbeat and sends `cancel` on its session; serve (a local child, or over the suite's sshd) kills
// the generator and answers the stopped run without caching it. No process of the run survives the
// worker, the job is in dead/ as cancelled, `work` exits 0, and `retry KEY` makes it generate again.
// Over ssh, killing the session alone would leave the generator running: serve ignores SIGHUP so
// that a generation the worker lost is still finished and cached.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { liveProcesses } from '../helpers/processes.js';
import { useSshd } from '../helpers/sshd.js';
import { genDir as localGenDir, makeSandbox, mintKey } from './helpers.js';
import {
  genDir,
  genjob,
  hostResults,
  journal,
  mint,
  remoteServe,
  sshFlags,
  useBoxes,
  waitFor,
  waitWhileRunning,
} from './ssh-helpers.js';

const sshd = useSshd();
const newBox = useBoxes();

/** A sleep no other test runs, so /proc shows exactly this run's generator. */
function uniqueSleep(): string[] {
  return ['sleep', `${600 + Math.floor(Math.random() * 1000)}.${process.pid}`];
}

/**
 * A generator that counts its runs in `dir/runs`; its first run touches `dir/started` and then sleeps
 * (long past the test's time limit); later runs add a line to `target`.
 */
function countingScript(dir: string, sleep: string[], target: string): string {
  const runs = path.join(dir, 'runs');
  return [
    `n=$(cat ${runs} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ${runs}`,
    `if [ $n = 1 ]; then touch ${path.join(dir, 'started')}; ${sleep.join(' ')}; fi`,
    `echo '# run' $n >> ${target}`,
  ].join('\n');
}

const runs = (dir: string) => Number(readFileSync(path.join(dir, 'runs'), 'utf8'));

/** The why.json of each dead item of `key` whose name starts with `kind`. */
function deadWhys(deadDir: string, key: string, kind: 'job' | 'receipt'): Array<Record<string, unknown>> {
  if (!existsSync(deadDir)) return [];
  return readdirSync(deadDir)
    .filter((n) => n.startsWith(`${key}.${kind}.`) && n.endsWith('.why.json'))
    .map((n) => JSON.parse(readFileSync(path.join(deadDir, n), 'utf8')));
}

/** The stopped run's receipt, kept in dead/ beside the cancelled job. */
function cancelledReceipt(deadDir: string, key: string): Record<string, unknown> {
  const name = readdirSync(deadDir).find(
    (n) => n.startsWith(`${key}.receipt.e1.`) && !n.endsWith('.why.json'),
  );
  return JSON.parse(readFileSync(path.join(deadDir, name!), 'utf8'));
}

describe('genjob cancel of a running job', () => {
  // unconfined, nothing but serve's kill of the generator's process group ends it: serve's own
  // death would not (the generator is in a group of its own)
  it.each([
    { how: 'confined', flags: [] },
    { how: 'with --no-sandbox', flags: ['--no-sandbox'] },
  ])(
    'with a local serve, $how: the generator is killed, the job is dead as cancelled, work exits 0; retry generates again',
    async ({ flags }) => {
      const sb = await makeSandbox();
      const sleep = uniqueSleep();
      const gen = sb.script('slow.sh', countingScript(sb.base, sleep, 'README.md'));
      const key = await mintKey(sb, 'Take your time', ['README.md']);
      const worker = sb.genjob(['work', '--once', '--lease-ttl', '1', ...flags, '--generator', gen]);
      await waitFor('the generator to sleep', () => liveProcesses(sleep).length === 1);

      const c = await sb.genjob(['cancel', key]);
      expect(c.exitCode).toBe(0);
      expect(c.stdout).toMatch(/cancelled \(was running\)/);
      const w = await worker;
      expect(liveProcesses(sleep)).toEqual([]); // gone when the worker is, not later
      expect(w.exitCode).toBe(0);
      expect(w.stderr).toContain(`${key.slice(0, 12)} stood down: cancelled (genjob cancel) during epoch 1`);
      expect(localGenDir(sb, 'running')).toEqual([]);
      expect(localGenDir(sb, 'receipts')).toEqual([]);
      expect(localGenDir(sb, 'leases')).toEqual([]);
      const dead = path.join(sb.repo, '.gen', 'dead');
      expect(deadWhys(dead, key, 'job')).toMatchObject([{ code: 'EGJ_CANCELLED' }]);
      expect(deadWhys(dead, key, 'receipt')).toMatchObject([{ code: 'EGJ_CANCELLED', epoch: 1 }]);
      expect(cancelledReceipt(dead, key)).toMatchObject({ status: 'aborted', reason: /^cancelled: / });
      expect(hostResults(path.join(sb.cache, 'genjob'), key)).toEqual([]); // answered, never cached

      const r = await sb.genjob(['retry', key.slice(0, 8)]);
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toContain('back in the queue (it was cancelled; that record stays in dead/)');
      const again = await sb.genjob(['work', '--once', '--quiet', ...flags, '--generator', gen]);
      expect(again.exitCode).toBe(0);
      expect(runs(sb.base)).toBe(2);
      expect((await sb.genjob(['verify', key])).stdout).toMatch(/ok: 1 output\(s\), epoch 2/);
      expect(deadWhys(dead, key, 'job')).toHaveLength(1); // the cancelled record stays
    },
  );

  it('over ssh: serve kills the generator on the host and caches nothing; retry generates again', async () => {
    const sb = await newBox();
    const sleep = uniqueSleep();
    const gen = `sh ${path.join(sb.dir, 'slow.sh')}`;
    await writeFile(path.join(sb.dir, 'slow.sh'), countingScript(sb.dir, sleep, 'src/a.txt'));
    const key = await mint(sb, 'Take your time', ['src/a.txt']);
    const flags = ['--generator', gen, ...sshFlags(sshd(), remoteServe(sb.hostCache))];
    const worker = genjob(sb, ['work', '--once', '--lease-ttl', '1', ...flags]);
    await waitWhileRunning(
      'the generator to sleep on the host',
      () => liveProcesses(sleep).length === 1,
      worker,
    );

    expect((await genjob(sb, ['cancel', key])).exitCode).toBe(0);
    const w = await worker;
    expect(liveProcesses(sleep)).toEqual([]);
    expect(w.exitCode).toBe(0);
    expect(String(w.stderr)).toContain(`${key.slice(0, 12)} stood down: cancelled`);
    expect(genDir(sb, 'receipts')).toEqual([]);
    const dead = path.join(sb.repo, '.gen', 'dead');
    expect(deadWhys(dead, key, 'job')).toMatchObject([{ code: 'EGJ_CANCELLED' }]);
    expect(cancelledReceipt(dead, key)).toMatchObject({ status: 'aborted', reason: /^cancelled: / });
    expect(hostResults(sb.hostCache, key)).toEqual([]);

    expect((await genjob(sb, ['retry', key])).exitCode).toBe(0);
    const again = await genjob(sb, ['work', '--once', ...flags]);
    expect(again.exitCode).toBe(0);
    expect(runs(sb.dir)).toBe(2);
    expect(journal(sb, key).filter((e) => e.event === 'received')).toHaveLength(1);
    expect(readFileSync(path.join(sb.repo, '.gen/received', `${key}.json`)).length).toBeGreaterThan(0);
  });
});
