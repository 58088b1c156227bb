// A shadow plane's storage: .gen/shadow/<NAME>/ holds results/<key>/{receipt.json,run.json,
// files/<path>}, attempts/<key>/<N>.json (the plane's own epochs), staging/ and journal.jsonl. The
// receipt and files are the host's; run.json is this worker's own record of how it ran the job
// (generator, sandbox flags), sealed under the user's secret, the only thing promote takes from here. Nothing here is a live name:
// live workers, verify and apply never look under shadow/, and nothing is ever moved from here into
// a live directory (promote regenerates through the live path instead).
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { errnoOf, UsageError } from '../core/errors.js';
import { SHADOW_NAME } from '../core/plane.js';
import {
  appendNoFollow,
  createExclusive,
  readdirOrEmpty,
  readIfExists,
  replaceFile,
} from '../store/durable.js';
import { assertRealDirs } from '../store/real-dirs.js';
import { readSealed, type SealedKind, type SealedRead, writeSealed } from '../store/sealed-file.js';
import type { Store } from '../store/store.js';

export function checkShadowName(name: string): string {
  if (!SHADOW_NAME.test(name))
    throw new UsageError(
      'EGJ_BAD_SHADOW_NAME',
      `${JSON.stringify(name)}: a shadow plane name is 1-64 of a-z 0-9 . _ - and starts with a letter or digit`,
    );
  return name;
}

/**
 * How the worker ran a shadow job (results/<key>/run.json): written by `work --shadow` beside the
 * host's answer, never taken from it, so what promote pins is what the user ran, whatever the host says.
 */
export interface ShadowRun {
  schema: 'genjob/shadow-run@1';
  key: string;
  /** The plane's epoch of the run whose answer sits beside this record. */
  epoch: number;
  /** The generator the user named (--generator, or the config file's); null: the host chose. */
  generator: string | null;
  /** The sandbox flags the run's serve was started with (--generator-bind, --generator-env, ...). */
  serve_args: string[];
  destination: string;
  at: string;
}

/** A run record's seal names its plane and key: one moved to another plane or key is not followed. */
function runKind(name: string, key: string): SealedKind {
  return {
    domain: 'genjob-shadow-run-v1',
    name: `${name}/${key}`,
    what: 'shadow run record',
    is: (r) =>
      r.schema === 'genjob/shadow-run@1' &&
      r.key === key &&
      Number.isSafeInteger(r.epoch) &&
      (r.generator === null || typeof r.generator === 'string') &&
      Array.isArray(r.serve_args) &&
      r.serve_args.every((a) => typeof a === 'string'),
  };
}

export class ShadowStore {
  readonly dir: string;
  readonly plane: string;
  constructor(
    readonly store: Store,
    readonly name: string,
  ) {
    checkShadowName(name);
    this.dir = join(store.layout.gen, 'shadow', name);
    this.plane = `shadow:${name}`;
  }

  static planes(store: Store): string[] {
    return readdirOrEmpty(store, join(store.layout.gen, 'shadow'))
      .filter((n) => SHADOW_NAME.test(n))
      .sort();
  }

  ensure(): this {
    const dirs = ['results', 'attempts', 'staging'].map((d) => join(this.dir, d));
    // a branch can commit .gen/shadow/NAME (or a directory in it) as a link out of the repository
    // (.gen/shadow itself: the store's own ensure(), which opened it)
    assertRealDirs(this.store, [this.dir, ...dirs], 'genjob', 'writes');
    for (const d of dirs) this.store.fs.mkdirSync(d, { recursive: true });
    return this;
  }

  resultDir(key: string): string {
    return join(this.dir, 'results', key);
  }
  receiptFile(key: string): string {
    return join(this.resultDir(key), 'receipt.json');
  }
  filesDir(key: string): string {
    return join(this.resultDir(key), 'files');
  }
  get staging(): string {
    return join(this.dir, 'staging');
  }

  keys(): string[] {
    return readdirOrEmpty(this.store, join(this.dir, 'results'))
      .filter((n) => /^[0-9a-f]{64}$/.test(n))
      .sort();
  }

  receipt(key: string): Buffer | undefined {
    return readIfExists(this.store, this.receiptFile(key));
  }

  runFile(key: string): string {
    return join(this.resultDir(key), 'run.json');
  }

  /**
   * The worker's record of the run whose answer is kept for the key, followed only when sealed under
   * the user's `secret` (a branch can commit a shadow plane too); or why it is not, or none.
   */
  run(key: string, secret: Buffer | null): SealedRead<ShadowRun> {
    return readSealed(this.store, this.runFile(key), secret, runKind(this.name, key));
  }

  /** The next epoch of this plane for the key (exclusive create: never reused, never a live epoch file). */
  nextEpoch(key: string): number {
    const dir = join(this.dir, 'attempts', key);
    this.store.fs.mkdirSync(dir, { recursive: true });
    assertRealDirs(this.store, [dir], 'genjob', 'writes');
    let epoch = Math.max(0, ...this.store.fs.readdirSync(dir).map((n) => Number.parseInt(n, 10) || 0)) + 1;
    for (;;) {
      try {
        createExclusive(
          this.store,
          join(dir, `${epoch}.json`),
          Buffer.from(`${JSON.stringify({ epoch, at: new Date().toISOString() })}\n`),
        );
        return epoch;
      } catch (err) {
        if (errnoOf(err) !== 'EEXIST') throw err;
        epoch += 1;
      }
    }
  }

  /**
   * Make `filesDir` (extracted under staging/), `receiptBytes` and the worker's `run` record the
   * plane's result for the key. Built whole in staging/, then swapped in by rename; an older result is
   * set aside and removed.
   */
  commit(
    key: string,
    receiptBytes: Uint8Array,
    filesDir: string,
    run: ShadowRun,
    secret: Buffer | null,
  ): void {
    const { fs } = this.store;
    const entry = join(this.staging, `e-${process.pid}-${randomBytes(6).toString('hex')}`);
    fs.mkdirSync(entry, { mode: 0o700 });
    fs.renameSync(filesDir, join(entry, 'files'));
    replaceFile(this.store, join(entry, 'receipt.json'), receiptBytes);
    writeSealed(this.store, join(entry, 'run.json'), secret, runKind(this.name, key), run);
    const target = this.resultDir(key);
    const aside = `${entry}.old`;
    try {
      fs.renameSync(target, aside);
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT') throw err;
    }
    fs.renameSync(entry, target);
    fs.rmSync(aside, { recursive: true, force: true });
  }

  journal(event: Record<string, unknown>): void {
    mkdirSync(this.dir, { recursive: true });
    // a branch can commit journal.jsonl as a link too: the append never follows it
    appendNoFollow(
      this.store,
      join(this.dir, 'journal.jsonl'),
      Buffer.from(
        `${JSON.stringify({ at: new Date().toISOString(), pid: process.pid, plane: this.plane, ...event })}\n`,
      ),
    );
  }
}
