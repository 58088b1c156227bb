// A promotion pin: .gen/promoted/<key>.json names the generator a shadow plane was run with and the
// sandbox flags of that run (both from the worker's own record of it, never from the host's receipt),
// so the next live attempts of the key run that generator, confined the same way, through the live path
// (new epoch, live plane, every verify rule). The pin is only a choice of how to run: no shadow byte or
// receipt is ever copied into live state. A pin names a command and can loosen the sandbox, and a branch
// can commit any file under .gen/: so `promote` seals it under the user's secret (store/sealed-file.ts),
// and a pin whose seal does not hold is no pin (the job runs with the worker's own generator and flags).
import { join } from 'node:path';
import { exists, readdirOrEmpty } from './durable.js';
import { readSealed, type SealedKind, type SealedRead, writeSealed } from './sealed-file.js';
import type { Store } from './store.js';

export interface Promotion {
  schema: 'genjob/promotion@1';
  key: string;
  job_digest: string;
  plane: string;
  generator: string;
  /** serve's sandbox flags for the key's live attempts. */
  serve_args: string[];
  shadow_receipt_sha256: string;
  at: string;
}

export function pinFile(store: Store, key: string): string {
  return join(store.layout.dir('promoted'), `${key}.json`);
}

function pinKind(key: string): SealedKind {
  return {
    // Stryker disable next-line StringLiteral: a domain only has to differ from the secret's other uses, each a literal of its own
    domain: 'genjob-promotion-v1',
    name: key,
    what: 'promotion pin',
    is: (p) =>
      p.schema === 'genjob/promotion@1' &&
      // Stryker disable next-line ConditionalExpression: the seal binds a pin to its key's name and promote seals each pin under its own key, so a sealed pin of another key never reaches this
      p.key === key &&
      typeof p.generator === 'string' &&
      typeof p.shadow_receipt_sha256 === 'string' &&
      Array.isArray(p.serve_args) &&
      p.serve_args.every((a) => typeof a === 'string'),
  };
}

/** The key's pin, followed only when `secret` (the user's) sealed it. */
export function readPromotion(store: Store, key: string, secret: Buffer | null): SealedRead<Promotion> {
  return readSealed(store, pinFile(store, key), secret, pinKind(key));
}

export function writePromotion(store: Store, secret: Buffer, p: Promotion): void {
  store.fs.mkdirSync(store.layout.dir('promoted'), { recursive: true });
  writeSealed(store, pinFile(store, p.key), secret, pinKind(p.key), p);
}

/** The generator of some promoted job still waiting: what `work` without --generator checks a host with. */
export function anyPromotedGenerator(store: Store, secret: Buffer | null): string | undefined {
  for (const name of readdirOrEmpty(store, store.layout.dir('promoted'))) {
    // Stryker disable next-line ConditionalExpression,StringLiteral: any other name, cut the same way, names no queued job
    if (!name.endsWith('.json')) continue;
    const key = name.slice(0, -'.json'.length);
    if (!exists(store, store.layout.jobFile('queue', key))) continue;
    const read = readPromotion(store, key, secret);
    if (read !== undefined && 'record' in read) return read.record.generator;
  }
  return undefined;
}
