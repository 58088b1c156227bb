// Helpers for the end-to-end tests that race, freeze, stop or kill `genjob work`: a temp repository
// whose .gen/ the test also reads as a Store, a shell generator beside it (outside the repository),
// the built CLI spawned with execa (reject: false, an env the caller gives) and a poll that names what
// it waited for. Temp dirs and registered cleanups go after each test (test/helpers/temp-store.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { mintJob } from '../../src/store/mint-job.js';
import type { Store } from '../../src/store/store.js';
import { tempRepo } from '../helpers/temp-store.js';

export const CLI = join(import.meta.dirname, '../../bin/genjob.js');

export interface WorkerRepo {
  /** Scratch space holding the repository, gen.sh and whatever the test puts beside them. */
  base: string;
  /** The repository root (`base/repo`, with .git/). */
  root: string;
  store: Store;
  /** `--generator sh base/gen.sh`, plus `--generator-env NAME` for each of HARNESS_ENV. */
  generator: string[];
}

/**
 * Variables the tests' generator scripts read (a confined generator gets only the environment
 * names passed with --generator-env).
 */
export const HARNESS_ENV = [
  'GEN_LOG',
  'WORKER_TAG',
  'STARTED',
  'RELEASE',
  'CRASH_GEN_NTH',
  'CRASH_GEN_MARK',
  'WORKER_PID_FILE',
];

/** A fresh repository holding `files`, its Store made, and `script` as base/gen.sh. */
export function workerRepo(prefix: string, script: string, files: Record<string, string> = {}): WorkerRepo {
  const { base, root, store } = tempRepo(prefix, files);
  writeFileSync(join(base, 'gen.sh'), script);
  const passEnv = HARNESS_ENV.flatMap((name) => ['--generator-env', name]);
  return { base, root, store, generator: ['--generator', `sh ${join(base, 'gen.sh')}`, ...passEnv] };
}

/**
 * Spawn the built CLI in `root` with `env`; `preload` is a module for node's --import. Unless `env`
 * says otherwise, a confined generator may read and write the scratch space around the repository.
 */
export function spawnCli(root: string, args: readonly string[], env: NodeJS.ProcessEnv, preload?: string) {
  return execa(process.execPath, [...(preload ? ['--import', preload] : []), CLI, ...args], {
    cwd: root,
    env: { GENJOB_GENERATOR_BIND_RW: dirname(root), ...env },
    reject: false,
  });
}

/** Poll `cond` every 10 ms, at most `tries` times; then fail naming `what` (and what `explain` says). */
export async function until(
  what: string,
  cond: () => boolean,
  tries: number,
  explain?: () => string,
): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`gave up waiting for ${what}${explain ? `\n${explain()}` : ''}`);
}

/** `n` jobs of one file each (`f/<i>.txt`, holding `old <i>`), minted into `store`; their keys in order. */
export function mintFileJobs(store: Store, n: number): string[] {
  mkdirSync(join(store.root, 'f'), { recursive: true });
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const path = `f/${i}.txt`;
    const bytes = Buffer.from(`old ${i}\n`);
    writeFileSync(join(store.root, path), bytes);
    keys.push(mintJob(store, buildJob(path, [{ path, sha256: sha256Hex(bytes) }])).key);
  }
  return keys;
}
