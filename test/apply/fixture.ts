// Test fixture for apply: a temp repository with a minted job sitting in received/ and its verified
// outputs in out/<key>/, plus a byte-for-byte snapshot of any directory tree (modes and symlinks included).
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { VerifiedApply } from '../../src/apply/apply-job.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { buildJob, jobDigest } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import type { FsPort } from '../../src/store/fs-port.js';
import { Store } from '../../src/store/store.js';

export interface FileSpec {
  bytes: string | Buffer;
  mode?: number;
}

export interface FixtureSpec {
  /** The tree at mint time. */
  files: Record<string, FileSpec | string | Buffer>;
  /** Allowed paths (inputs); those absent from `files` are files to create. */
  inputs: string[];
  /** What the generator returned. */
  outputs: Record<string, string | Buffer>;
}

export interface Fixture {
  root: string;
  v: VerifiedApply;
  /** Expected tree bytes after the apply, for every input path (null = absent). */
  expected: Map<string, Buffer | null>;
  /** Tree bytes at mint, for every input path. */
  original: Map<string, Buffer | null>;
  withFs(fs: FsPort): VerifiedApply;
}

const temps: string[] = [];

export function tempDir(prefix = 'genjob-apply-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true });
}

function spec(f: FileSpec | string | Buffer): FileSpec {
  return typeof f === 'string' || Buffer.isBuffer(f) ? { bytes: f } : f;
}

export function writeTree(root: string, files: Record<string, FileSpec | string | Buffer>): void {
  for (const [path, f] of Object.entries(files)) {
    const abs = join(root, path);
    mkdirSync(dirname(abs), { recursive: true });
    const { bytes, mode } = spec(f);
    writeFileSync(abs, bytes);
    chmodSync(abs, mode ?? 0o644);
  }
}

export function makeFixture(s: FixtureSpec): Fixture {
  const root = tempDir();
  writeTree(root, s.files);
  const store = new Store(root).ensure();
  const original = new Map<string, Buffer | null>();
  const inputs = s.inputs.map((path) => {
    const f = s.files[path];
    const bytes = f === undefined ? null : Buffer.from(spec(f).bytes);
    original.set(path, bytes);
    return { path, sha256: bytes === null ? null : sha256Hex(bytes) };
  });
  const job = buildJob('make the change', inputs);
  writeFileSync(store.layout.jobFile('received', job.key), canonicalBytes(job));
  const expected = new Map(original);
  const outputs = Object.entries(s.outputs).map(([path, content]) => {
    const bytes = Buffer.from(content);
    const abs = join(store.layout.outDir(job.key), path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, bytes);
    expected.set(path, bytes);
    return { path, sha256: sha256Hex(bytes), bytes: bytes.length };
  });
  const make = (fs?: FsPort): VerifiedApply => ({
    store: new Store(root, fs),
    job,
    jobDigest: jobDigest(job),
    receiptSha256: sha256Hex('receipt'),
    epoch: 1,
    outputs,
  });
  return { root, v: make(), expected, original, withFs: make };
}

export type Snapshot = Map<string, string>;

/** Every entry under `dir` (skipping `skip` names at the top): file bytes + mode, symlink targets, dirs. */
export function snapshot(dir: string, skip: readonly string[] = []): Snapshot {
  const out: Snapshot = new Map();
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      if (rel === '' && skip.includes(name)) continue;
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = lstatSync(join(dir, r));
      if (st.isSymbolicLink()) out.set(r, `symlink -> ${readlinkSync(join(dir, r))}`);
      else if (st.isDirectory()) {
        out.set(r, `dir ${(st.mode & 0o777).toString(8)}`);
        walk(r);
      } else
        out.set(r, `file ${(st.mode & 0o777).toString(8)} ${readFileSync(join(dir, r)).toString('base64')}`);
    }
  };
  walk('');
  return out;
}

/** The repository's bytes at `path`, or null when absent. */
export function readOrNull(root: string, path: string): Buffer | null {
  try {
    return readFileSync(join(root, path));
  } catch {
    return null;
  }
}
