// Where everything lives under .gen/ (docs/queue-format.md). On-disk names are public API.
import { join } from 'node:path';

export const STATE_DIRS = ['queue', 'running', 'received', 'applied', 'reverted', 'dead'] as const;
export type JobState = Exclude<(typeof STATE_DIRS)[number], 'dead'>;

export class Layout {
  readonly gen: string;
  constructor(readonly root: string) {
    this.gen = join(root, '.gen');
  }
  dir(name: string): string {
    return join(this.gen, name);
  }
  jobFile(state: JobState, key: string): string {
    return join(this.gen, state, `${key}.json`);
  }
  lease(key: string): string {
    return join(this.gen, 'leases', `${key}.json`);
  }
  attemptsDir(key: string): string {
    return join(this.gen, 'attempts', key);
  }
  attempt(key: string, epoch: number): string {
    return join(this.gen, 'attempts', key, `${epoch}.json`);
  }
  receipt(key: string): string {
    return join(this.gen, 'receipts', `${key}.json`);
  }
  outDir(key: string): string {
    return join(this.gen, 'out', key);
  }
  object(sha256: string): string {
    return join(this.gen, 'objects', sha256);
  }
  applying(key: string): string {
    return join(this.gen, 'applying', `${key}.json`);
  }
  /** The single journal file of genjob 0.1, still read (and folded by gc); events now go to journal.d/. */
  get journal(): string {
    return join(this.gen, 'journal.jsonl');
  }
  get tmp(): string {
    return join(this.gen, 'tmp');
  }
  get staging(): string {
    return join(this.gen, 'staging');
  }
}

/** Directories other parts of genjob make under .gen/ when they first write there. */
export const LATER_DIRS = [
  'journal.d',
  'tombstones',
  'promoted',
  'shadow',
  'runs',
  'batches',
  'checks',
  'check-setup',
] as const;

/** Every directory genjob creates under .gen/, in creation order. */
export const ALL_DIRS = [
  'queue',
  'running',
  'received',
  'applied',
  'reverted',
  'dead',
  'leases',
  'attempts',
  'receipts',
  'out',
  'objects',
  'applying',
  'tmp',
  'staging',
  'locks',
] as const;
