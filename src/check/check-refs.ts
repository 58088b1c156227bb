// Check records travel with the repository like receipts: one ref per record,
//   refs/genjob/checks/<key>/<sha256> → a parentless commit (fixed author, committer and date 0) whose
//   tree is record.json, the record's exact bytes.
// The ref is named by the record's digest and the commit is the same on every machine, so two pushers
// of one record never conflict and a ref is never moved. Pulled records are hostile input: a ref must
// name a key and a digest, point at a commit holding a record.json blob within the size cap whose bytes
// hash to that digest and decode as a record of that key; only then is it stored in .gen/checks/.
import { GitFailedError } from '../core/errors.js';
import type { TrustedKey } from '../core/receipt-envelope.js';
import { sha256Hex } from '../core/sha256.js';
import { catFile } from '../git/cat-file.js';
import { MATERIAL_IDENT } from '../git/material-refs.js';
import { git } from '../git/run-git.js';
import { readdirOrEmpty, readIfExists } from '../store/durable.js';
import type { Store } from '../store/store.js';
import { decodeRecord, MAX_CHECK_RECORD_BYTES } from './record.js';
import { CHECKS_DIR, checksDir, recordedCheckers, writeRecord } from './record-store.js';

export const CHECK_REFS = 'refs/genjob/checks/';
/** Where `genjob pull` mirrors the remote's check refs before reading them (outside refs/genjob/ and the key refs' mirror). */
export const PULLED_CHECK_REFS = 'refs/genjob-pulled-checks/';
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

export interface PulledChecks {
  imported: number;
  present: number;
  /** Refs refused as malformed or hostile, and why. */
  refused: Array<{ ref: string; rule: string }>;
  /** Records not taken because no key pinned for checks signed them. */
  unsigned: number;
}

/** Fetch the remote's check refs and store each good record not here yet. */
export async function pullCheckRecords(
  store: Store,
  remote: string,
  trusted: readonly TrustedKey[],
): Promise<PulledChecks> {
  const root = store.root;
  await git(root, [
    'fetch',
    '--quiet',
    '--no-tags',
    '--prune',
    '--no-write-fetch-head',
    '--no-recurse-submodules',
    remote,
    `+${CHECK_REFS}*:${PULLED_CHECK_REFS}*`,
  ]);
  const out: PulledChecks = { imported: 0, present: 0, refused: [], unsigned: 0 };
  const candidates: Array<{ ref: string; key: string; digest: string; oid: string }> = [];
  for (const [name, ref] of await refsUnder(root, PULLED_CHECK_REFS)) {
    const m = NAME.exec(name);
    const shown = `${CHECK_REFS}${name}`;
    if (!m) out.refused.push({ ref: shown, rule: 'the ref does not name a key and a record digest' });
    else if (ref.type !== 'commit')
      out.refused.push({ ref: shown, rule: `points at a ${ref.type}, not a commit` });
    else candidates.push({ ref: shown, key: m[1]!, digest: m[2]!, oid: ref.oid });
  }
  const specs = candidates.map((c) => `${c.oid}:${RECORD_ENTRY}`);
  const sizes = await catFile(root, specs, { contents: false });
  const readable = candidates.filter((c, i) => {
    const s = sizes[i];
    if (s?.type !== 'blob')
      out.refused.push({ ref: c.ref, rule: `${RECORD_ENTRY} is missing or not a file` });
    else if (s.size > MAX_CHECK_RECORD_BYTES)
      out.refused.push({
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
  for (const [i, c] of readable.entries()) {
    const bytes = blobs[i]?.content ?? Buffer.alloc(0);
    if (sha256Hex(bytes) !== c.digest) {
      out.refused.push({ ref: c.ref, rule: 'the record does not hash to the digest its ref names' });
      continue;
    }
    let checker: string;
    try {
      const d = decodeRecord(bytes, c.ref, trusted);
      if (d.facts.key !== c.key)
        throw new Error(`it is a record of another job (${d.facts.key.slice(0, 12)})`);
      checker = d.facts.checker;
    } catch (err) {
      if ((err as { code?: string }).code === 'EGJ_CHECK_SIGNATURE') out.unsigned += 1;
      else out.refused.push({ ref: c.ref, rule: (err as Error).message.replace(`${c.ref}: `, '') });
      continue;
    }
    const there = readIfExists(store, `${checksDir(store, c.key, checker)}/${c.digest}.json`);
    if (there?.equals(bytes)) out.present += 1;
    else {
      writeRecord(store, c.key, checker, bytes);
      out.imported += 1;
    }
  }
  return out;
}
