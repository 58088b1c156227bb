// A worker thought dead comes back: its lease was reaped and the job worked again (epoch 2) by a second
// worker on another host. When the first worker resumes and delivers, it must detect the lost lease, stand
// down with exit 4 and leave its receipt in dead/ (EGJ_EPOCH_SUPERSEDED); the applied bytes are epoch 2's.
// "Thought dead" is made real with SIGSTOP (a heartbeat cannot be stopped from outside the process).
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { peekEpoch } from '../../src/core/receipt-peek.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { readJournal } from '../../src/store/journal.js';
import { mintJob } from '../../src/store/mint-job.js';
import { afterTest } from '../helpers/temp-store.js';
import { spawnCli, until as untilPolls, workerRepo } from './worker-helpers.js';

const until = (what: string, cond: () => boolean) => untilPolls(what, cond, 60_000); // polls of 10 ms: a guard against a hang only

// The first worker's generation blocks until the test releases it; each worker's bytes name the worker.
const GENERATOR = `printf '%s %s\\n' "$GENJOB_KEY" "$WORKER_TAG" >> "$GEN_LOG"
if [ "$WORKER_TAG" = first ]; then
  : > "$STARTED"
  while [ ! -e "$RELEASE" ]; do sleep 0.05; done
fi
printf 'from the %s worker\\n' "$WORKER_TAG" > a.txt
`;

function procState(pid: number): string {
  // /proc/<pid>/stat: "pid (comm) S ..."
  return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '')[0]!;
}

describe('a late worker', () => {
  it('stands down with exit 4 and its receipt goes to dead/ when its lease was reaped and the job worked again', async () => {
    const {
      base,
      root,
      store,
      generator: gen,
    } = workerRepo('genjob-late-', GENERATOR, { 'a.txt': 'original\n' });
    const job = buildJob('rewrite a.txt', [{ path: 'a.txt', sha256: sha256Hex('original\n') }]);
    const { key } = mintJob(store, job);
    const env = (tag: string) => ({
      ...process.env,
      WORKER_TAG: tag,
      XDG_CACHE_HOME: join(base, `cache-${tag}`), // two hosts: no shared result cache
      GEN_LOG: join(base, 'gen.log'),
      STARTED: join(base, 'started'),
      RELEASE: join(base, 'release'),
    });
    const genjob = (args: string[], tag = 'ops') => spawnCli(root, args, env(tag));

    const first = genjob(['work', '--once', '--lease-ttl', '1', ...gen], 'first');
    afterTest(() => {
      writeFileSync(join(base, 'release'), '');
      first.kill('SIGCONT');
      first.kill('SIGKILL');
    });
    await until('the first generation to start', () => existsSync(join(base, 'started')));

    // the first worker freezes: no more heartbeats. Its lease ages past the TTL (made so, not waited for).
    process.kill(first.pid!, 'SIGSTOP');
    await until('the first worker to stop', () => procState(first.pid!) === 'T');
    const past = new Date(Date.now() - 3_600_000);
    utimesSync(store.layout.lease(key), past, past);
    const reap = await genjob(['reap', '--lease-ttl', '1', '--json']);
    expect(reap.exitCode).toBe(0);
    expect(JSON.parse(reap.stdout).reaped).toMatchObject([{ key, epoch: 1 }]);

    const second = await genjob(['work', '--drain', '--lease-ttl', '60', '--json', ...gen], 'second');
    expect(second.exitCode, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout).outcomes).toMatchObject([{ key, outcome: 'received', epoch: 2 }]);
    const applied = await genjob(['apply', '--all']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('from the second worker\n');

    // the first worker wakes up and delivers epoch 1's result
    writeFileSync(join(base, 'release'), '');
    process.kill(first.pid!, 'SIGCONT');
    const late = await first;
    expect(late.exitCode, late.stderr).toBe(4);
    expect(late.stderr).toMatch(/stood down: .*(lease|epoch)/);

    // its heartbeat sees the lease is gone and it stands down, dropping its session; if its answer had
    // already arrived, that receipt is kept raw in dead/ with the reason. Either way nothing of epoch 1
    // is committed: the committed receipt and the tree are epoch 2's
    const dead = readdirSync(store.layout.dir('dead'));
    const receipt = dead.find((n) => n.startsWith(`${key}.receipt.e1.`) && !n.endsWith('.why.json'));
    if (receipt !== undefined) {
      expect(peekEpoch(readFileSync(join(store.layout.dir('dead'), receipt)))).toBe(1);
      const why = JSON.parse(readFileSync(join(store.layout.dir('dead'), `${receipt}.why.json`), 'utf8'));
      expect(why).toMatchObject({ key, code: 'EGJ_EPOCH_SUPERSEDED' });
    } else expect(late.stderr).toMatch(/lease/);
    expect(peekEpoch(readFileSync(store.layout.receipt(key)))).toBe(2);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('from the second worker\n');
    expect(readdirSync(store.layout.dir('applied'))).toEqual([`${key}.json`]);
    for (const s of ['queue', 'running', 'received']) expect(readdirSync(store.layout.dir(s))).toEqual([]);
    expect(readJournal(store, key).filter((e) => e.event === 'applied')).toHaveLength(1);
    // a second apply changes nothing
    expect((await genjob(['apply', '--all'])).exitCode).toBe(0);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('from the second worker\n');
  });
});
