// A promotion pin: .gen/promoted/<key>.json names the generator a shadow plane was run with and the
// sandbox flags of that run (both from the worker's own record of it, never from the host's receipt),
// so the next live attempts of the key run that generator, confined the same way, through the live path
// (new epoch, live plane, every verify rule). The pin is only a choice of how to run: no shadow byte or
// receipt is ever copied into live state.
import { join } from 'node:path';
import { exists, readdirOrEmpty, readIfExists, replaceFile } from './durable.js';
import type { Store } from './store.js';

export interface Promotion {
  schema: 'genjob/promotion@1';
  key: string;
  job_digest: string;
  plane: string;
  generator: string;
  /** serve's sandbox flags for the key's live attempts (absent in pins made before they were kept). */
  serve_args?: string[];
  shadow_receipt_sha256: string;
  at: string;
}

function pinFile(store: Store, key: string): string {
  return join(store.layout.dir('promoted'), `${key}.json`);
}

export function readPromotion(store: Store, key: string): Promotion | undefined {
  const bytes = readIfExists(store, pinFile(store, key));
  if (bytes === undefined) return undefined;
  try {
    const p = JSON.parse(bytes.toString('utf8')) as Promotion;
    const args = p.serve_args;
    const argsOk = args === undefined || (Array.isArray(args) && args.every((a) => typeof a === 'string'));
    return typeof p.generator === 'string' && p.key === key && argsOk ? p : undefined;
  } catch {
    return undefined;
  }
}

export function writePromotion(store: Store, p: Promotion): void {
  store.fs.mkdirSync(store.layout.dir('promoted'), { recursive: true });
  replaceFile(store, pinFile(store, p.key), Buffer.from(`${JSON.stringify(p, null, 2)}\n`));
}

/** The generator of some promoted job still waiting: what `work` without --generator checks a host with. */
export function anyPromotedGenerator(store: Store): string | undefined {
  for (const name of readdirOrEmpty(store, store.layout.dir('promoted'))) {
    if (!name.endsWith('.json')) continue;
    const key = name.slice(0, -'.json'.length);
    const p = readPromotion(store, key);
    if (p !== undefined && exists(store, store.layout.jobFile('queue', key))) return p.generator;
  }
  return undefined;
}
