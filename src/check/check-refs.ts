// Check records travel with the repository like receipts: one ref per record,
//   refs/genjob/checks/<key>/<sha256> → a parentless commit (fixed author, committer and date 0) whose
//   tree is record.json, the record's exact bytes.
// The ref is named by the record's digest and the commit is the same on every machine, so two pushers
// of one record never conflict and a ref is never moved. Pulled records are hostile input: a ref must
// name a key and a digest, point at a commit holding a record.json blob within the size cap whose bytes
// hash to that digest and decode as a record of that key. They stay refs (the gate reads them there):
// nothing pulled enters .gen/checks/.
import { GitFailedError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { catFile } from '../git/cat-file.js';
import { MATERIAL_IDENT, pulledRefs } from '../git/material-refs.js';
import { git } from '../git/run-git.js';
import { readdirOrEmpty, readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { CHECKS_DIR, checksDir, MAX_CHECK_RECORD_BYTES, recordedCheckers } from './record-paths.js';

export const CHECK_REFS = 'refs/genjob/checks/';
/** Where `genjob pull` mirrors the remote's check refs (material-refs.ts's pulled kinds). */
export const PULLED_CHECK_REFS = pulledRefs('checks');
const RECORD_ENTRY = 'record.json';
const NAME = /^([0-9a-f]{64})\/([0-9a-f]{64})$/;

interface LocalRecord {
  key: string;
  checker: string;
  digest: string;
  bytes: Buffer;
}

/** The record files of `keys` whose bytes are what their names say. */
function localRecords(store: Store, keys: readonly string[]): LocalRecord[] {
  const out: LocalRecord[] = [];
  // one listing of .gen/checks/: most keys have no records, and a failed readdir per key costs an error
  const checked = new Set(readdirOrEmpty(store, store.layout.dir(CHECKS_DIR)));
  for (const key of keys)
    if (checked.has(key))
      for (const checker of recordedCheckers(store, key))
        for (const name of readdirOrEmpty(store, checksDir(store, key, checker))) {
          const digest = /^([0-9a-f]{64})\.json$/.exec(name)?.[1];
          if (!digest) continue;
          const bytes = readIfExists(
            store,
            `${checksDir(store, key, checker)}/${name}`,
            MAX_CHECK_RECORD_BYTES,
          );
          if (bytes && sha256Hex(bytes) === digest) out.push({ key, checker, digest, bytes });
        }
  return out;
}

async function refsUnder(root: string, prefix: string): Promise<Map<string, { oid: string; type: string }>> {
  const r = await git(root, ['for-each-ref', '--format=%(objectname) %(objecttype) %(refname)', prefix]);
  const refs = new Map<string, { oid: string; type: string }>();
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const m = /^([0-9a-f]+) (\S+) (.+)$/.exec(line);
    if (m) refs.set(m[3]!.slice(prefix.length), { oid: m[1]!, type: m[2]! });
  }
  return refs;
}

/** Make the missing local refs (one fast-import for all of them). */
async function buildRefs(root: string, records: readonly LocalRecord[]): Promise<void> {
  const have = await refsUnder(root, CHECK_REFS);
  const chunks: Buffer[] = [];
  for (const r of records) {
    const name = `${r.key}/${r.digest}`;
    if (have.has(name)) continue;
    const ref = `${CHECK_REFS}${name}`;
    const subject = Buffer.from(`genjob check ${r.key} ${r.checker} sha256:${r.digest}\n`);
    chunks.push(
      Buffer.from(`reset ${ref}\ncommit ${ref}\nauthor ${MATERIAL_IDENT}\ncommitter ${MATERIAL_IDENT}\n`),
      Buffer.from(`data ${subject.length}\n`),
      subject,
      Buffer.from(`M 100644 inline ${RECORD_ENTRY}\ndata ${r.bytes.length}\n`),
      r.bytes,
      Buffer.from('\n\n'),
    );
  }
  if (chunks.length === 0) return;
  chunks.push(Buffer.from('done\n'));
  await git(root, ['fast-import', '--quiet', '--done'], { input: Buffer.concat(chunks) });
}

/** Push the check records of `keys` to `remote`; returns how many refs it created and found there. */
export async function pushCheckRecords(
  store: Store,
  remote: string,
  keys: readonly string[],
): Promise<{ created: number; present: number }> {
  const records = localRecords(store, keys);
  if (records.length === 0) return { created: 0, present: 0 };
  await buildRefs(store.root, records);
  const specs = [...new Set(records.map((r) => r.key))].map((k) => `${CHECK_REFS}${k}/*:${CHECK_REFS}${k}/*`);
  const r = await git(store.root, ['push', '--porcelain', '--no-verify', remote, ...specs]);
  let created = 0;
  let present = 0;
  for (const line of r.stdout.toString('utf8').split('\n')) {
    if (!line.includes(CHECK_REFS)) continue;
    if (line.startsWith('*')) created += 1;
    else if (line.startsWith('=')) present += 1;
    else throw new GitFailedError(['push', remote], 1, `the remote refused a check record ref: ${line}`);
  }
  return { created, present };
}

/** One record as a ref holds it: checked to be what the ref's name says, its signature not yet judged. */
export interface RefRecord {
  ref: string;
  key: string;
  digest: string;
  checker: string;
  bytes: Buffer;
}

/**
 * The records under `prefix` (refs/genjob/checks/ or pull's mirror of the remote's), of `keys` only when
 * given. A ref is used only when it names a key and a digest and points at a commit whose record.json,
 * within the size cap, hashes to that digest and decodes as a record of that key; any other is refused,
 * with the rule. Signatures are judged by the reader, under the policy it trusts (none is assumed here).
 */
export async function recordsUnder(
  root: string,
  prefix: string,
  keys?: ReadonlySet<string>,
): Promise<{ records: RefRecord[]; refused: Array<{ ref: string; rule: string }> }> {
  const refused: Array<{ ref: string; rule: string }> = [];
  const records: RefRecord[] = [];
  const candidates: Array<{ ref: string; key: string; digest: string; oid: string }> = [];
  for (const [name, ref] of await refsUnder(root, prefix)) {
    const m = NAME.exec(name);
    // named as the remote names them: that is where someone would look
    const shown = `${CHECK_REFS}${name}`;
    if (m && keys !== undefined && !keys.has(m[1]!)) continue;
    if (!m) refused.push({ ref: shown, rule: 'the ref does not name a key and a record digest' });
    else if (ref.type !== 'commit')
      refused.push({ ref: shown, rule: `points at a ${ref.type}, not a commit` });
    else candidates.push({ ref: shown, key: m[1]!, digest: m[2]!, oid: ref.oid });
  }
  const sizes = await catFile(
    root,
    candidates.map((c) => `${c.oid}:${RECORD_ENTRY}`),
    { contents: false },
  );
  const readable = candidates.filter((c, i) => {
    const s = sizes[i];
    if (s?.type !== 'blob') refused.push({ ref: c.ref, rule: `${RECORD_ENTRY} is missing or not a file` });
    else if (s.size > MAX_CHECK_RECORD_BYTES)
      refused.push({
        ref: c.ref,
        rule: `${RECORD_ENTRY} is ${s.size} bytes, over the cap of ${MAX_CHECK_RECORD_BYTES}`,
      });
    else return true;
    return false;
  });
  const blobs = await catFile(
    root,
    readable.map((c) => `${c.oid}:${RECORD_ENTRY}`),
    { contents: true },
  );
  const { decodeRecord } = await import('./record.js'); // loaded by the readers only: push never decodes
  for (const [i, c] of readable.entries()) {
    const bytes = blobs[i]?.content ?? Buffer.alloc(0);
    if (sha256Hex(bytes) !== c.digest) {
      refused.push({ ref: c.ref, rule: 'the record does not hash to the digest its ref names' });
      continue;
    }
    try {
      const d = decodeRecord(bytes, c.ref, []);
      if (d.facts.key !== c.key)
        throw new Error(`it is a record of another job (${d.facts.key.slice(0, 12)})`);
      records.push({ ref: c.ref, key: c.key, digest: c.digest, checker: d.facts.checker, bytes });
    } catch (err) {
      refused.push({ ref: c.ref, rule: (err as Error).message.replace(`${c.ref}: `, '') });
    }
  }
  return { records, refused };
}

/** Make this clone's refs/genjob/checks/ refs of `keys` from its own records (as push does), for its own gate. */
export async function recordCheckRefs(store: Store, keys: readonly string[]): Promise<void> {
  await buildRefs(store.root, localRecords(store, keys));
}
