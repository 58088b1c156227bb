// The generator host's result cache: one entry per (key, generator, job digest) under
// $XDG_CACHE_HOME/genjob (default ~/.cache/genjob). A redelivered job — a retry, a reaped
// lease, a second worker — is answered from here, so the generator runs once per key per host.
// An entry is built outside the cache and renamed into results/ whole, sealed with a MAC that only
// serve can make (cache-mac.ts); an entry that fails its MAC or its file hashes is set aside in
// quarantine/ and never served. Workspaces live in a sibling directory (<cache>-work), never inside.
// Outbox rule: started/<name>.json is written before a generation starts and removed once its
// entry is in place, so a generation that died mid-way is seen as in doubt, not silently re-run.

import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdtemp, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errnoOf, ioErrorAt } from '../core/errors.js';
import type { SandboxRecord } from '../sandbox/policy.js';
import { nodeFs } from '../store/fs-port.js';
import { hashFile } from '../store/hash-file.js';
import { takeOwnedLock } from '../store/lock-owner.js';
import { type ProcessId, thisProcess } from '../store/process-identity.js';
import { entryMac, loadCacheSecret, macMatches } from './cache-mac.js';
import { syncDirectory, syncTree } from './sync-tree.js';
import type { Output } from './workspace-diff.js';
import { writeNewFile } from './write-new-file.js';

export interface CachedResult {
  job_digest: string;
  status: 'ok' | 'rejected' | 'aborted';
  reason: string | null;
  outputs: Output[];
  generator: { command: string; version: string | null };
  timings: { started_at: string; finished_at: string; generate_ms: number };
  /** How the generator was confined; absent in entries made before the sandbox (unconfined). */
  sandbox?: SandboxRecord;
  usage?: { prompt_tokens: number; completion_tokens: number; requests: number };
}

/** Who started a generation (host, pid and process start, so a reused pid is not taken for it) and when. */
export interface StartedRecord extends ProcessId {
  started_at: string;
}

const MAC_FILE = 'mac';

/** An error that says the entry's files are not what serve made (a symlink, a directory): tampering, not the disk. */
function shapeChanged(err: unknown): boolean {
  return ['ELOOP', 'EISDIR', 'ENOTDIR'].includes(errnoOf(err) ?? '');
}

export class ResultCache {
  /** Where per-run scratch directories (workspace, job file) and entries being built live. */
  readonly workDir: string;
  private secret: Buffer | undefined;
  /** Entries renamed into place whose directory could not be fsynced: their started records stay. */
  readonly #unsynced = new Set<string>();

  constructor(
    readonly dir: string,
    workDir?: string,
  ) {
    this.workDir = workDir ?? `${dir.replace(/\/+$/, '')}-work`;
  }

  async init(): Promise<void> {
    for (const d of ['results', 'tmp', 'locks', 'started', 'quarantine'])
      nodeFs.mkdirSync(join(this.dir, d), { recursive: true, mode: 0o700 });
    nodeFs.mkdirSync(this.workDir, { recursive: true, mode: 0o700 });
    this.secret = await loadCacheSecret(this.dir);
  }

  private key(): Buffer {
    if (!this.secret) throw new Error('result cache used before init()');
    return this.secret;
  }

  entryName(key: string, generator: string, jobDigest: string, plane = 'live', fresh?: string): string {
    // the plane is part of the key: a shadow answer is never served to a live request, nor the reverse
    // (live keeps its pre-plane name, so existing entries stay valid); so is a fresh generation's label
    // (a promoted or retried job), so that run is never answered with the key's earlier result
    const planePart = plane === 'live' ? '' : `\0${plane}`;
    const freshPart = fresh === undefined ? '' : `\0fresh:${fresh}`;
    const g = createHash('sha256')
      .update(`${generator}\0${jobDigest}${planePart}${freshPart}`)
      .digest('hex')
      .slice(0, 16);
    return `${key}.${g}`;
  }

  entryDir(name: string): string {
    return join(this.dir, 'results', name);
  }

  /**
   * The entry, when it exists and is intact (MAC and every file's hash); a damaged one is quarantined.
   * A disk that fails while the entry is read is EGJ_IO, and the entry stays: a paid-for result is never
   * set aside for a transient error.
   */
  async read(name: string): Promise<CachedResult | undefined> {
    const dir = this.entryDir(name);
    let bytes: Buffer;
    try {
      bytes = await readFile(join(dir, 'result.json'), { flag: constants.O_RDONLY | constants.O_NOFOLLOW });
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return undefined;
      if (!shapeChanged(err)) throw ioErrorAt(join(dir, 'result.json'), err);
      return this.quarantine(name, `result.json unreadable (${(err as Error).message})`);
    }
    const mac = await readFile(join(dir, MAC_FILE), 'utf8').catch((err: unknown) => {
      if (errnoOf(err) === 'ENOENT' || shapeChanged(err)) return '';
      throw ioErrorAt(join(dir, MAC_FILE), err);
    });
    if (!macMatches(this.key(), name, bytes, mac))
      return this.quarantine(name, 'its MAC does not match: changed by something other than serve');
    const result = JSON.parse(bytes.toString('utf8')) as CachedResult;
    for (const o of result.outputs) {
      const got = await hashFile(join(dir, 'files', o.path)).catch((err: unknown) => {
        if (errnoOf(err) === 'ENOENT' || shapeChanged(err)) return undefined;
        throw err; // EGJ_IO naming the file
      });
      if (got?.sha256 !== o.sha256 || got.bytes !== o.bytes)
        return this.quarantine(name, `output ${JSON.stringify(o.path)} does not hash to its recorded sha256`);
    }
    return result;
  }

  private async quarantine(name: string, why: string): Promise<undefined> {
    const aside = join(this.dir, 'quarantine', `${name}-${Date.now()}-${process.pid}`);
    await rename(this.entryDir(name), aside).catch(() => {});
    process.stderr.write(
      `genjob serve: EGJ_CACHE_TAMPERED: ${this.entryDir(name)}: ${why}; set aside in ${aside}, not served\n`,
    );
    return undefined;
  }

  /**
   * A fresh private directory for one attempt (workspace, job file, usage file), outside the cache: in
   * `runsDir` when given (one a sandbox user can reach: sandbox-user.ts), else in the work directory.
   */
  async scratch(runsDir = this.workDir): Promise<string> {
    return mkdtemp(join(runsDir, 'a-'));
  }

  /** A fresh directory to build an entry in (outside the cache and outside any sandbox's view). */
  async tmpDir(): Promise<string> {
    return mkdtemp(join(this.workDir, 'b-'));
  }

  /**
   * Seal a finished entry (built in `built`, holding result.json and files/) and move it into place;
   * true when this one is the entry now. An entry already there (a racing delivery) stands: false. Any
   * other failure is thrown (the caller still holds the result in `built` and delivers it from there).
   */
  async commit(name: string, built: string): Promise<boolean> {
    const resultFile = join(built, 'result.json');
    const bytes = await readFile(resultFile).catch((err: unknown) => {
      throw ioErrorAt(resultFile, err); // a read's or close's error names no file
    });
    await writeNewFile(join(built, MAC_FILE), `${entryMac(this.key(), name, bytes)}\n`);
    syncTree(built); // whole on disk before its name is, so a crash finds it whole or not at all
    try {
      await rename(built, this.entryDir(name));
    } catch (err) {
      if (!(await stat(this.entryDir(name)).catch(() => undefined))) throw err;
      await rm(built, { recursive: true, force: true }); // someone committed it first: theirs stands
      return false;
    }
    try {
      syncDirectory(dirname(this.entryDir(name)));
    } catch (err) {
      // in place but maybe not on disk: answered all the same, and its started record is kept, so a
      // crash leaves the generation in doubt rather than gone unseen
      this.#unsynced.add(name);
      process.stderr.write(`genjob serve: ${(err as Error).message}; the started record is kept\n`);
    }
    return true;
  }

  /** Set an entry aside and delete it (only for a deliberate retry of an aborted generation). */
  async discard(name: string): Promise<void> {
    const aside = join(this.dir, 'tmp', `discard-${name}-${process.pid}-${Date.now()}`);
    try {
      await rename(this.entryDir(name), aside);
    } catch {
      return; // no such entry
    }
    await rm(aside, { recursive: true, force: true });
  }

  private startedFile(name: string): string {
    return join(this.dir, 'started', `${name}.json`);
  }

  /** Outbox: record (durably, exclusively) that a generation for this entry is starting. */
  async markStarted(name: string): Promise<void> {
    const rec: StartedRecord = { ...thisProcess(), started_at: new Date().toISOString() };
    await writeNewFile(this.startedFile(name), `${JSON.stringify(rec)}\n`);
    // its name too: a record a crash loses would let a paid-for generation run again unseen
    syncDirectory(dirname(this.startedFile(name)));
  }

  /** A generation that started and never put its entry in place (read under the entry lock). */
  async startedRecord(name: string): Promise<StartedRecord | undefined> {
    let text: string;
    try {
      text = await readFile(this.startedFile(name), 'utf8');
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') return undefined;
      throw ioErrorAt(this.startedFile(name), err); // the disk, not a generation in doubt
    }
    try {
      return JSON.parse(text) as StartedRecord;
    } catch {
      return { host: '', pid: 0, start: 0, started_at: 'unknown (unreadable record)' };
    }
  }

  async clearStarted(name: string): Promise<void> {
    if (this.#unsynced.has(name)) return;
    await unlink(this.startedFile(name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }

  /**
   * Take the entry's lock (held while generating), or undefined while another live serve holds it.
   * It is an owned lock (lock-owner.ts): a lock whose holder died is taken over at once, not after its
   * 20 s staleness. Waiting for a turn is generation-turn.ts's business.
   */
  async tryLock(name: string): Promise<(() => Promise<void>) | undefined> {
    const lock = await takeOwnedLock(join(this.dir, 'locks', `${name}.lock`), { waitMs: 0, staleMs: 20_000 });
    // another process may have taken the lock after ours looked stale: commit() keeps the first entry
    return lock && (() => lock.release().catch(() => {}));
  }
}
