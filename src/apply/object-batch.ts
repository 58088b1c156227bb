// Content-addressed objects (objects/<sha256>) put in one batch: each new object's bytes go to an fsynced
// temp in .gen/tmp as soon as they are read (so no more than one file is held in memory), and publish()
// links them all and fsyncs objects/ once. Nothing may depend on an object of the batch (the write-ahead
// record) before publish() returns. An object already present is kept when its bytes hash to its name.
import { basename } from 'node:path';
import { ConflictError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import {
  discardStaged,
  publishStaged,
  readIfExists,
  replaceFile,
  type StagedFile,
  stageExclusive,
} from '../store/durable.js';
import type { Store } from '../store/store.js';

export class ObjectBatch {
  private readonly staged: StagedFile[] = [];
  private readonly seen = new Set<string>();

  constructor(private readonly store: Store) {}

  /** Make sure objects/<sha256> will hold `bytes` (which the caller has checked hash to sha256). */
  add(sha256: string, bytes: Uint8Array): void {
    if (this.seen.has(sha256)) return;
    this.seen.add(sha256);
    const file = this.store.layout.object(sha256);
    const existing = readIfExists(this.store, file);
    if (existing === undefined) this.staged.push(stageExclusive(this.store, file, bytes));
    else if (sha256Hex(existing) !== sha256) replaceFile(this.store, file, bytes); // corrupt: rare, durable at once
  }

  /** Link every staged object and fsync objects/ once; an object someone else published meanwhile is checked. */
  publish(): void {
    const staged = this.staged.splice(0);
    const created = publishStaged(this.store, staged);
    staged.forEach(({ target }, i) => {
      if (created[i]) return;
      const existing = readIfExists(this.store, target);
      const sha256 = basename(target);
      if (existing !== undefined && sha256Hex(existing) === sha256) return;
      // only a second apply (a stale lock taken twice) publishes objects; nothing depends on this one yet
      throw new ConflictError(
        'EGJ_LOCK_LOST',
        `${target}: another apply raced this one and left other bytes; run apply again (it replaces them)`,
      );
    });
  }

  /** Remove what was staged but not published (a failed check before the write-ahead record). */
  discard(): void {
    discardStaged(this.store, this.staged.splice(0));
  }
}
