// --launch against a real Slurm: a one-node cluster on this machine (test/helpers/slurm.ts), and
// `work --launch 'srun -N1 --quiet -u … serve --session'` draining 50 jobs through it — the framed
// protocol over srun's forwarded stdin/stdout (-u: srun otherwise holds output back until a
// newline). srun exports its whole environment to the job (--export=ALL), so what genjob gives it is
// what reaches the node: the worker's secrets must not, a name passed with --launch-env must.
// Spawns the built CLI (npm run build first).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SlurmHandle, slurmMissing, startSlurm } from '../helpers/slurm.js';
import { afterTest } from '../helpers/temp-store.js';
import { eventsPerKey, mintMany, runsPerKey } from './pool-helpers.js';
import {
  CLI,
  genDir,
  genjob,
  mint,
  NODE,
  REPO_ROOT,
  type Sandbox,
  sandbox,
  writeGenerator,
} from './ssh-helpers.js';

const missing = slurmMissing();

describe.skipIf(missing !== null)(
  `work --launch over Slurm${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let slurm: SlurmHandle;
    let sb: Sandbox;
    beforeAll(async () => {
      slurm = await startSlurm();
      sb = await sandbox();
    });
    afterAll(async () => {
      await slurm?.stop();
      await sb?.cleanup();
    });

    it('drains 50 jobs through srun: each received once, generated once, the journal naming the launcher', async () => {
      const keys = mintMany(sb, 50);
      const counter = path.join(sb.dir, 'runs');
      const gen = await writeGenerator(sb.dir, { counter, target: 'src/a.txt', text: 'from slurm\n' });
      const launch = `srun -N1 --quiet -u ${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache} --generator-bind-rw ${sb.dir} --generator-bind ${REPO_ROOT}`;
      const w = await genjob(
        sb,
        [
          'work',
          '--drain',
          '--json',
          '--generator',
          gen,
          '--launch-env',
          'SLURM_CONF',
          '--launch',
          `2/${launch}`,
        ],
        {
          env: { XDG_CACHE_HOME: sb.workerCache, NO_COLOR: '1', ...slurm.env() },
        },
      );
      expect(w.stderr).not.toContain('back in the queue');
      expect(w.exitCode).toBe(0);
      expect(genDir(sb, 'received')).toEqual(keys.map((k) => `${k}.json`).sort());
      expect([genDir(sb, 'queue'), genDir(sb, 'running'), genDir(sb, 'dead')]).toEqual([[], [], []]);
      const received = eventsPerKey(sb, 'received');
      expect([...received.values()].every((n) => n === 1) && received.size === 50).toBe(true);
      expect([...runsPerKey(counter).values()].filter((n) => n !== 1)).toEqual([]);
      expect(runsPerKey(counter).size).toBe(50);
      const result = JSON.parse(String(w.stdout));
      expect(result.hosts).toEqual([
        { destination: `launch:${launch}`, slots: 2, received: 50, requeued: 0, dead: 0, other: 0 },
      ]);
      expect(result.queue_listings).toBeLessThan(10); // listed per batch, never once per job
    });

    it("never lets the worker's environment reach the job's node: only the allowlist and the --launch-env names arrive", async () => {
      const own = await sandbox();
      const sb = own;
      afterTest(() => own.cleanup());
      const key = await mint(sb, 'env check', ['src/a.txt']);
      const counter = path.join(sb.dir, 'env-runs');
      const gen = await writeGenerator(sb.dir, { counter, target: 'src/a.txt', text: 'env checked\n' });
      // the step writes the environment it got on the node, then becomes serve
      const nodeEnv = path.join(sb.dir, 'node-env');
      const serve = `${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache} --generator-bind-rw ${sb.dir} --generator-bind ${REPO_ROOT}`;
      const launch = `srun -N1 --quiet -u sh -c 'env > ${nodeEnv}; exec "$0" "$@"' ${serve}`;
      const w = await genjob(
        sb,
        [
          'work',
          '--once',
          '--generator',
          gen,
          '--launch-env',
          'SLURM_CONF',
          '--launch-env',
          'GENJOB_TEST_PASSED',
          '--launch',
          launch,
        ],
        {
          env: {
            XDG_CACHE_HOME: sb.workerCache,
            NO_COLOR: '1',
            ...slurm.env(),
            AWS_SECRET_ACCESS_KEY: 'worker-secret-never-on-the-node',
            OPENAI_API_KEY: 'sk-worker-secret-never-on-the-node',
            GENJOB_TEST_PASSED: 'named-with-launch-env',
          },
        },
      );
      expect(w.exitCode, String(w.stderr)).toBe(0);
      expect(genDir(sb, 'received')).toEqual([`${key}.json`]);
      const seen = readFileSync(nodeEnv, 'utf8');
      expect(seen).toMatch(/^SLURM_JOB_ID=\d+$/m); // it is the job's environment on the node
      expect(seen).toContain('GENJOB_TEST_PASSED=named-with-launch-env\n');
      expect(seen).not.toContain('worker-secret-never-on-the-node');
      expect(seen).not.toMatch(/^(AWS_SECRET_ACCESS_KEY|OPENAI_API_KEY)=/m);
    });
  },
);
