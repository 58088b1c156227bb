// Put checked material into .gen/ as a received job, never over different bytes:
//   out/<key>/ is written in a fresh staging directory (O_EXCL files, each fsynced, directories fsynced)
//   and renamed into place; then receipts/<key>.json and received/<key>.json are published by exclusive
//   link, the job last, so a crash leaves nothing that looks received. Rerunning finishes a torn import
//   (what is there must equal what arrives). A key held locally with other bytes is a conflict.
import { chmodSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { jobDigest } from '../core/job.js';
import { parseJob } from '../core/job-schema.js';
import { createExclusive, fsyncDir, publishExclusive, readIfExists } from '../store/durable.js';
import { findJob } from '../store/job-states.js';
import { journal } from '../store/journal.js';
import type { Store } from '../store/store.js';
import type { PulledMaterial } from './read-material.js';

export type ImportOutcome =
  | { status: 'imported' }
  | { status: 'present' }
  | { status: 'skipped'; why: string }
  | { status: 'conflict'; why: string };

function digestOf(state: string, bytes: Buffer): string | null {
  try {
    const doc = JSON.parse(bytes.toString('utf8'));
    return jobDigest(state === 'applied' ? doc.job : doc);
  } catch {
    return null;
  }
}

export function importMaterial(store: Store, m: PulledMaterial, remote: string): ImportOutcome {
  const key = m.key;
  const digest = parseJob(m.job, 'job.json').digest;
  const found = findJob(store, key);
  if (found && digestOf(found.state, found.bytes) !== digest)
    return { status: 'conflict', why: `${found.file} is another job document for this key` };
  const receiptFile = store.layout.receipt(key);
  const localReceipt = readIfExists(store, receiptFile);
  if (localReceipt !== undefined && !localReceipt.equals(m.receipt))
    return { status: 'conflict', why: `${receiptFile} holds another receipt for this key` };
  if (found && (found.state === 'queue' || found.state === 'running'))
    return { status: 'skipped', why: `the job is in ${found.state}/ here; work or drop it first` };
  if (found && localReceipt !== undefined) return { status: 'present' };

  const outDir = store.layout.outDir(key);
  if (!sameOutputs(store, outDir, m.outputs)) {
    if (existsDir(outDir)) return { status: 'conflict', why: `${outDir} holds other outputs for this key` };
    writeOut(store, outDir, m.outputs);
  }
  if (
    !publishExclusive(store, receiptFile, m.receipt) &&
    !readIfExists(store, receiptFile)?.equals(m.receipt)
  )
    return { status: 'conflict', why: `${receiptFile} holds another receipt for this key` };
  const jobFile = store.layout.jobFile('received', key);
  if (!publishExclusive(store, jobFile, m.job) && !readIfExists(store, jobFile)?.equals(m.job))
    return { status: 'conflict', why: `${jobFile} is another job document for this key` };
  journal(store, { event: 'pulled', key, remote, commit: m.commit });
  return { status: 'imported' };
}

function existsDir(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** out/<key>/ exists and holds exactly these files with these bytes. */
function sameOutputs(store: Store, outDir: string, outputs: PulledMaterial['outputs']): boolean {
  if (!existsDir(outDir)) return false;
  const want = new Map(outputs.map((o) => [o.path, o.bytes]));
  let count = 0;
  const walk = (rel: string): boolean => {
    for (const d of readdirSync(rel ? join(outDir, rel) : outDir, { withFileTypes: true })) {
      const path = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) {
        if (!walk(path)) return false;
        continue;
      }
      const bytes = want.get(path);
      if (!d.isFile() || bytes === undefined) return false;
      count += 1;
      const here = readIfExists(store, join(outDir, path));
      if (!here?.equals(bytes)) return false;
    }
    return true;
  };
  try {
    return walk('') && count === want.size;
  } catch {
    return false;
  }
}

function writeOut(store: Store, outDir: string, outputs: PulledMaterial['outputs']): void {
  const staging = join(
    store.layout.staging,
    `pull-${process.pid}-${Math.random().toString(36).slice(2, 10)}`,
  );
  mkdirSync(staging, { mode: 0o700 });
  try {
    const dirs = new Set<string>([staging]);
    for (const o of outputs) {
      const file = join(staging, ...o.path.split('/'));
      mkdirSync(dirname(file), { recursive: true });
      for (let d = dirname(file); d.startsWith(staging); d = dirname(d)) dirs.add(d);
      createExclusive(store, file, o.bytes);
    }
    for (const d of dirs) fsyncDir(store, d);
    chmodSync(staging, 0o755);
    store.fs.renameSync(staging, outDir);
    fsyncDir(store, dirname(outDir));
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  }
}
