// Turn material into git objects and local refs refs/genjob/keys/<key> with ONE `git fast-import` per
// ~64 MB: every blob, tree and commit of a batch goes into one pack, no process per file. Each commit is
// parentless with fixed identities and date, so the same material gives the same commit id anywhere.
// --force: the local refs are genjob's cache of what .gen/ holds and may be rebuilt.

import type { Material } from './local-material.js';
import {
  JOB_ENTRY,
  keyRef,
  MATERIAL_IDENT,
  materialSubject,
  OUT_DIR,
  RECEIPT_ENTRY,
} from './material-refs.js';
import { git } from './run-git.js';

const BATCH_BYTES = 64 * 1024 * 1024;

/** A fast-import path: always C-quoted (paths are checked by pathProblem, so no control characters). */
function quote(path: string): string {
  return `"${path.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function data(chunks: Buffer[], bytes: Uint8Array): void {
  chunks.push(Buffer.from(`data ${bytes.length}\n`), Buffer.from(bytes), Buffer.from('\n'));
}

/** The fast-import commands that record one key's material under its ref. */
export function materialCommands(m: Material): Buffer[] {
  const ref = keyRef(m.key);
  const chunks: Buffer[] = [
    Buffer.from(`reset ${ref}\ncommit ${ref}\nauthor ${MATERIAL_IDENT}\ncommitter ${MATERIAL_IDENT}\n`),
  ];
  data(chunks, Buffer.from(`${materialSubject(m.key, m.receiptSha256)}\n`));
  const file = (path: string, bytes: Uint8Array) => {
    chunks.push(Buffer.from(`M 100644 inline ${quote(path)}\n`));
    data(chunks, bytes);
  };
  file(JOB_ENTRY, m.job);
  file(RECEIPT_ENTRY, m.receipt);
  for (const o of m.outputs) file(`${OUT_DIR}${o.path}`, o.bytes);
  chunks.push(Buffer.from('\n'));
  return chunks;
}

/** Write the objects and local refs of every material, in as few fast-import runs as the size allows. */
export async function buildMaterial(root: string, materials: Iterable<Material>): Promise<void> {
  let batch: Buffer[] = [];
  let size = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    batch.push(Buffer.from('done\n'));
    await git(root, ['fast-import', '--quiet', '--force', '--done'], { input: Buffer.concat(batch) });
    batch = [];
    size = 0;
  };
  for (const m of materials) {
    const chunks = materialCommands(m);
    batch.push(...chunks);
    size += chunks.reduce((n, c) => n + c.length, 0);
    if (size >= BATCH_BYTES) await flush();
  }
  await flush();
}
