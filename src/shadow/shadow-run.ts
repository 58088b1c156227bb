// Run existing jobs again in a shadow plane: read each job where it stands (queue/, received/,
// applied/ — never claimed, leased, moved or requeued), ship its inputs (from the tree, or from
// objects/ when an apply has replaced them) with `plane: shadow:NAME`, and keep the answer under
// .gen/shadow/NAME/. A timeout, a refusal or a crash here changes no live file: the only writes
// are under the plane's own directory.
import { join } from 'node:path';
import { GenjobError } from '../core/errors.js';
import type { Job } from '../core/job.js';
import { pathExists } from '../core/path-exists.js';
import { planeOf } from '../core/plane.js';
import type { Receipt } from '../core/receipt.js';
import { loadJob } from '../store/job-files.js';
import { findJob } from '../store/job-states.js';
import { jobFileBytes } from '../store/mint-job.js';
import type { Store } from '../store/store.js';
import { InputChangedError } from '../transport/archive-errors.js';
import type { ServeLauncher } from '../transport/launcher.js';
import { packTar } from '../transport/tar-pack.js';
import { extractAnswer } from '../worker/extract-answer.js';
import { InDoubtError, type RelayFactory, type ServeClient } from '../worker/serve-client.js';
import { compareFiles } from '../worker/take-result.js';
import { REQUEST_MARGIN_MS } from '../worker/work-one.js';
import { ShadowStore } from './shadow-store.js';

export interface ShadowRunOptions {
  store: Store;
  name: string;
  launcher: ServeLauncher;
  /** Arguments for the serve this run starts (the sandbox flags, as for live work). */
  serveArgs?: readonly string[];
  generator: string | null;
  timeoutMs: number;
  workerId: string;
  decodeReceipt: (bytes: Buffer, file: string) => Receipt;
  /** Seals each run record (what promote pins); null: they are kept unsealed, and promote refuses them. */
  userSecret: Buffer | null;
  onOutcome?: (o: ShadowOutcome) => void;
  /** Relays each session's stderr (serve's and the generator's output). */
  relayStderr?: RelayFactory;
}

export type ShadowOutcome =
  | { key: string; outcome: 'stored'; epoch: number; status: Receipt['status']; cached: boolean }
  | { key: string; outcome: 'skipped' | 'refused' | 'in-doubt'; reason: string };

/** The states whose jobs a shadow plane may run again (read only). */
const RUNNABLE = new Set(['queue', 'received', 'applied']);

/** Where to read an input's bytes: the tree while it still holds them, else the apply's backup in objects/. */
function inputSource(store: Store, path: string, sha256: string): string {
  const object = store.layout.object(sha256);
  return pathExists(object) ? object : join(store.root, path);
}

export async function runShadow(o: ShadowRunOptions, keys: readonly string[]): Promise<ShadowOutcome[]> {
  const plane = new ShadowStore(o.store, o.name).ensure();
  const outcomes: ShadowOutcome[] = [];
  let client: ServeClient | undefined;
  const session = async () => {
    if (client?.alive) return client;
    const { ServeClient } = await import('../worker/serve-client.js');
    await o.launcher.shipmentFacts();
    client = await ServeClient.open(o.launcher, o.serveArgs ?? [], {
      maxAnswerBytes: 8 * 1024 ** 3,
      helloTimeoutMs: 60_000,
      ...(o.relayStderr ? { relayStderr: o.relayStderr } : {}),
    });
    return client;
  };
  const drop = () => {
    client?.kill();
    client = undefined;
  };
  try {
    for (const key of keys) {
      const outcome = await runOne(o, plane, key, session, drop);
      plane.journal({ event: `shadow-${outcome.outcome}`, ...outcome });
      outcomes.push(outcome);
      o.onOutcome?.(outcome);
    }
  } finally {
    await client?.close();
  }
  return outcomes;
}

async function runOne(
  o: ShadowRunOptions,
  plane: ShadowStore,
  key: string,
  session: () => Promise<ServeClient>,
  drop: () => void,
): Promise<ShadowOutcome> {
  const { store } = o;
  const found = findJob(store, key);
  if (!found || !RUNNABLE.has(found.state))
    return {
      key,
      outcome: 'skipped',
      reason: `job is ${found ? `in ${found.state}/` : 'unknown'}; only queued, received or applied jobs are run in a shadow plane`,
    };
  let job: Job;
  let digest: string;
  try {
    ({ job, digest } = loadJob(store, found.state, key));
  } catch (err) {
    if (!(err instanceof GenjobError)) throw err;
    return { key, outcome: 'skipped', reason: err.message };
  }
  const epoch = plane.nextEpoch(key);
  const budget = o.timeoutMs + REQUEST_MARGIN_MS;
  const req = {
    type: 'run' as const,
    key,
    job_digest: digest,
    epoch,
    worker_id: o.workerId,
    generator: o.generator,
    timeout_ms: o.timeoutMs,
    plane: plane.plane,
  };
  let inputGone: InputChangedError | undefined;
  let s: ServeClient;
  let answer: Awaited<ReturnType<ServeClient['request']>>;
  try {
    s = await session();
    s.working(key);
    answer = await s.request(req, budget, async (w) => {
      try {
        await packTar(
          [
            { name: 'job.json', bytes: jobFileBytes(job) },
            ...job.inputs
              .filter((i) => i.sha256 !== null)
              .map((i) => ({
                name: `files/${i.path}`,
                file: inputSource(store, i.path, i.sha256!),
                expectSha256: i.sha256!,
              })),
          ],
          (chunk) => w.chunk(chunk),
        );
      } catch (err) {
        if (!(err instanceof InputChangedError)) throw err;
        inputGone = err;
        await w.abort();
        return;
      }
      await w.end();
    });
  } catch (err) {
    if (!(err instanceof InDoubtError)) throw err;
    drop();
    return { key, outcome: 'in-doubt', reason: err.message };
  }
  if (inputGone)
    return {
      key,
      outcome: 'skipped',
      reason: `${inputGone.message}; its inputs are no longer in the tree or objects/`,
    };
  if (answer.type === 'none') return { key, outcome: 'refused', reason: 'the host answered "none" to a run' };
  if (answer.type === 'error')
    return { key, outcome: 'refused', reason: `the host refused: ${answer.code}: ${answer.message}` };
  let receipt: Receipt;
  try {
    receipt = o.decodeReceipt(answer.receiptBytes, `receipt from ${o.launcher.destination}`);
  } catch (err) {
    drop();
    if (!(err instanceof GenjobError)) throw err;
    return { key, outcome: 'refused', reason: err.message };
  }
  if (
    receipt.key !== key ||
    receipt.job_digest !== digest ||
    receipt.epoch !== epoch ||
    planeOf(receipt) !== plane.plane
  ) {
    drop();
    return {
      key,
      outcome: 'refused',
      reason: `the host answered with a receipt for another job, epoch or plane (${planeOf(receipt)})`,
    };
  }
  let staged: Awaited<ReturnType<typeof extractAnswer>>;
  try {
    staged = await s.deadline(budget, () => extractAnswer(answer.tar, job, plane.staging));
  } catch (err) {
    drop();
    if (err instanceof InDoubtError) return { key, outcome: 'in-doubt', reason: err.message };
    if (!(err instanceof GenjobError)) throw err;
    return { key, outcome: 'refused', reason: `result archive refused: ${err.message}` };
  }
  const mismatch = compareFiles(receipt, staged.files);
  if (mismatch) {
    store.fs.rmSync(staged.dir, { recursive: true, force: true });
    return { key, outcome: 'refused', reason: mismatch };
  }
  plane.commit(
    key,
    answer.receiptBytes,
    staged.dir,
    {
      schema: 'genjob/shadow-run@1',
      key,
      epoch,
      generator: o.generator,
      serve_args: [...(o.serveArgs ?? [])],
      destination: o.launcher.destination,
      at: new Date().toISOString(),
    },
    o.userSecret,
  );
  return { key, outcome: 'stored', epoch, status: receipt.status, cached: receipt.cached };
}
