// Read each key's material pull fetched into refs/genjob-pulled/keys/ (fetch-material.ts), trusting none
// of it: the ref must name exactly one key and point at a commit; its tree may hold only job.json,
// receipt.json (regular files, mode 100644) and out/ (directories and 100644 files whose paths pass
// pathProblem, no two folding to the same name); sizes are capped before any content is read; the
// job must be canonical and hash to its key. A tree may be named many times over (fan-out): the walk
// reads each distinct tree once per depth, caps the trees' sizes before reading them, and counts every
// entry before queuing it, so a small hostile ref is refused instead of filling memory. Receipt against job and bytes against receipt: verify.
import { parseJob } from '../core/job-schema.js';
import { foldedPath, MAX_DEPTH, pathProblem } from '../core/paths.js';
import { MAX_RECEIPT_BYTES } from '../core/receipt.js';
import { decodeReceipt } from '../core/receipt-decode.js';
import { jobFileBytes } from '../store/mint-job.js';
import { catFile, type GitObject, parseTree, type TreeEntry } from './cat-file.js';
import { JOB_ENTRY, keyOfRef, OUT_DIR, RECEIPT_ENTRY } from './material-refs.js';
import { git } from './run-git.js';

export const MAX_JOB_FILE_BYTES = 16 * 1024 * 1024;
export const MAX_OUTPUTS = 10_000;
/** What one pull may read into memory in all. */
export const MAX_PULL_BYTES = 1024 * 1024 * 1024;
/** Tree entries one ref's material may have (a tree counted once for each name it has): the three at the top, and each output under at most MAX_DEPTH - 1 directories of out/. */
export const MAX_REF_TREE_ENTRIES = MAX_OUTPUTS * MAX_DEPTH + 3;
/** Tree entries one pull may walk in all. */
export const MAX_PULL_TREE_ENTRIES = 1_000_000;
/** Bytes of one ref's trees at one depth (a tree counted once for each name it has), checked before they are read. */
export const MAX_REF_TREE_BYTES = 64 * 1024 * 1024;
/** Bytes of the distinct trees one depth of a pull reads (one cat-file, whose output is capped at 256 MiB). */
export const MAX_DEPTH_TREE_BYTES = 128 * 1024 * 1024;

/** The bounds on the trees a pull walks (the caps above; a test passes smaller ones to reach each edge cheaply). */
export interface TreeLimits {
  refEntries: number;
  pullEntries: number;
  refBytes: number;
  depthBytes: number;
}

export const TREE_LIMITS: TreeLimits = {
  refEntries: MAX_REF_TREE_ENTRIES,
  pullEntries: MAX_PULL_TREE_ENTRIES,
  refBytes: MAX_REF_TREE_BYTES,
  depthBytes: MAX_DEPTH_TREE_BYTES,
};

export interface PulledRef {
  ref: string;
  oid: string;
  type: string;
  /** The key the ref names, or null when its name is not refs/genjob/keys/<64 hex>. */
  key: string | null;
}

export interface PulledMaterial {
  key: string;
  /** The ref it was read from. */
  ref: string;
  commit: string;
  job: Buffer;
  receipt: Buffer;
  outputs: Array<{ path: string; bytes: Buffer }>;
}

export type ReadOutcome =
  | { ok: true; material: PulledMaterial }
  | { ok: false; key: string; ref: string; rule: string };

/** The refs under `under`, each with the key it names as `keys`<key> (null for any other name). */
export async function listKeyRefs(root: string, under: string, keys: string): Promise<PulledRef[]> {
  const r = await git(root, ['for-each-ref', '--format=%(objectname) %(objecttype) %(refname)', under]);
  const refs: PulledRef[] = [];
  for (const line of r.stdout.toString('utf8').split('\n')) {
    // Stryker disable next-line Regex: git writes each line in exactly this format, and a ref name has no space or newline
    const m = /^([0-9a-f]+) (\S+) (.+)$/.exec(line);
    if (m) refs.push({ oid: m[1]!, type: m[2]!, ref: m[3]!, key: keyOfRef(m[3]!, keys) });
  }
  return refs;
}

interface FileEntry {
  path: string;
  oid: string;
}

/** Read and check the material of `refs` (commits already known to name keys). */
export async function readPulled(
  root: string,
  refs: ReadonlyArray<PulledRef & { key: string }>,
  limits: TreeLimits = TREE_LIMITS,
): Promise<ReadOutcome[]> {
  // everything below is per ref (two refs may name one key: this clone's and the one pull fetched)
  const bad = new Map<string, string>();
  const files = new Map<string, FileEntry[]>();
  const refuse = (ref: string, rule: string): void => {
    if (!bad.has(ref)) bad.set(ref, rule);
  };
  for (const r of refs) {
    files.set(r.ref, []);
    if (r.type !== 'commit') refuse(r.ref, `points at a ${r.type}, not a commit`);
  }
  // commits → root trees
  const live = () => refs.filter((r) => !bad.has(r.ref));
  const commits = await catFile(
    root,
    live().map((r) => r.oid),
    { contents: true, maxOutput: 64 * 1024 * 1024 },
  );
  const oidBytes = (refs[0]?.oid.length ?? 40) / 2;
  let level: Array<{ ref: string; dir: string; oid: string }> = [];
  live().forEach((r, i) => {
    // Stryker disable next-line StringLiteral: any text without a tree line is refused alike
    const text = commits[i]?.content?.toString('utf8') ?? '';
    const m = /^tree ([0-9a-f]+)\n/.exec(text);
    if (!m) refuse(r.ref, 'the commit names no tree');
    else level.push({ ref: r.ref, dir: '', oid: m[1]! });
  });
  // walk the trees one depth at a time: their sizes first (one --batch-check), then each distinct tree
  // once (one --batch); a ref whose trees at this depth are too large is refused before they are read.
  // A tree named many times (fan-out) is parsed once per depth, its entries being the same under every
  // name; only a list whose entries were counted is kept, so what this holds stays within the entry bounds.
  const parsed = new Map<string, TreeEntry[]>();
  const entries = new Map<string, number>(); // per ref, counted before queuing
  let entriesInAll = 0;
  for (let depth = 0; level.length > 0; depth++) {
    parsed.clear();
    // Stryker disable next-line BooleanLiteral: contents here would be the unbounded read the sizes guard against (memory, not a result)
    const sized = await catFile(root, [...new Set(level.map((t) => t.oid))], { contents: false });
    const size = new Map(sized.flatMap((o) => (o === null ? [] : [[o.oid, o.size] as const])));
    const perRef = new Map<string, number>();
    for (const t of level) perRef.set(t.ref, (perRef.get(t.ref) ?? 0) + (size.get(t.oid) ?? 0));
    for (const [ref, bytes] of perRef)
      if (bytes > limits.refBytes)
        refuse(
          ref,
          `its trees at depth ${depth} are ${bytes} bytes (a tree counted once for each name it has), above the cap of ${limits.refBytes}`,
        );
    const read = new Set<string>();
    let depthBytes = 0;
    for (const t of level) {
      if (bad.has(t.ref) || read.has(t.oid)) continue;
      depthBytes += size.get(t.oid) ?? 0;
      if (depthBytes > limits.depthBytes) {
        refuse(t.ref, `the pull would read more than ${limits.depthBytes} bytes of trees at depth ${depth}`);
        depthBytes -= size.get(t.oid) ?? 0;
        continue;
      }
      read.add(t.oid);
    }
    const oids = [...read];
    const objects = await catFile(root, oids, { contents: true });
    const trees = new Map(oids.map((oid, i) => [oid, objects[i] ?? null]));
    const next: typeof level = [];
    for (const t of level) {
      if (bad.has(t.ref)) continue;
      const rule = walkTree(t, trees.get(t.oid) ?? null, next);
      if (rule !== null) refuse(t.ref, rule);
    }
    // Stryker disable next-line MethodExpression: a refused ref's trees are skipped at the next depth anyway (never read or walked); this only spares their size lookup
    level = next.filter((t) => !bad.has(t.ref));
  }
  /** Why the tree `t` names is refused, or null; its subtrees are queued on `next`, its files listed. */
  function walkTree(
    t: { ref: string; dir: string },
    obj: GitObject | null,
    next: typeof level,
  ): string | null {
    if (obj?.type !== 'tree' || !obj) return `${t.dir || '(root)'} is not a tree`;
    let list = parsed.get(obj.oid);
    if (list === undefined) {
      try {
        list = parseTree(obj.content!, oidBytes);
      } catch (err) {
        return `${t.dir || '(root)'}: ${(err as Error).message}`;
      }
    }
    const count = (entries.get(t.ref) ?? 0) + list.length;
    if (count > limits.refEntries)
      return `its trees hold more than ${limits.refEntries} entries (a tree counted once for each name it has)`;
    if (entriesInAll + list.length > limits.pullEntries)
      return `the pull would walk more than ${limits.pullEntries} tree entries`;
    entries.set(t.ref, count);
    entriesInAll += list.length;
    parsed.set(obj.oid, list);
    for (const e of list) {
      const path = `${t.dir}${e.name}`;
      if (t.dir === '') {
        if (e.name === 'out' && e.mode === '40000') next.push({ ...t, dir: OUT_DIR, oid: e.oid });
        else if ((e.name === JOB_ENTRY || e.name === RECEIPT_ENTRY) && e.mode === '100644')
          files.get(t.ref)!.push({ path, oid: e.oid });
        else return `unexpected entry ${JSON.stringify(e.name)} (mode ${e.mode}) at the top`;
        continue;
      }
      const problem = pathProblem(path.slice(OUT_DIR.length));
      if (problem) return `${JSON.stringify(path)}: ${problem}`;
      if (e.mode === '40000') next.push({ ...t, dir: `${path}/`, oid: e.oid });
      else if (e.mode === '100644') files.get(t.ref)!.push({ path, oid: e.oid });
      else return `${JSON.stringify(path)} has mode ${e.mode}: only regular files (100644) are accepted`;
      if (files.get(t.ref)!.length > MAX_OUTPUTS + 2) return `more than ${MAX_OUTPUTS} outputs`;
    }
    return null;
  }
  // names: both documents present, no two outputs folding together
  for (const r of live()) {
    const names = files.get(r.ref)!.map((f) => f.path);
    if (!names.includes(JOB_ENTRY) || !names.includes(RECEIPT_ENTRY))
      refuse(r.ref, 'job.json or receipt.json is missing');
    const folded = new Set<string>();
    for (const n of names) {
      if (folded.has(foldedPath(n)))
        refuse(r.ref, `${JSON.stringify(n)} appears twice (after case and Unicode folding)`);
      folded.add(foldedPath(n));
    }
  }
  // sizes before contents
  const wanted = live().flatMap((r) => files.get(r.ref)!.map((f) => ({ ref: r.ref, ...f })));
  const sizes = await catFile(
    root,
    wanted.map((f) => f.oid),
    { contents: false },
  );
  let total = 0;
  for (const [i, f] of wanted.entries()) {
    const s = sizes[i];
    if (s?.type !== 'blob' || !s) {
      refuse(f.ref, `${f.path} is not a blob`);
      continue;
    }
    const cap =
      f.path === JOB_ENTRY
        ? MAX_JOB_FILE_BYTES
        : f.path === RECEIPT_ENTRY
          ? MAX_RECEIPT_BYTES
          : 64 * 1024 * 1024;
    if (s.size > cap) refuse(f.ref, `${f.path} is ${s.size} bytes, above the cap of ${cap}`);
    total += s.size;
  }
  if (total > MAX_PULL_BYTES)
    for (const r of live()) refuse(r.ref, `the pull would read more than ${MAX_PULL_BYTES} bytes`);
  const toRead = wanted.filter((f) => !bad.has(f.ref));
  const blobs = await catFile(
    root,
    toRead.map((f) => f.oid),
    // Stryker disable next-line ArithmeticOperator: room for cat-file's object headers over contents already capped at MAX_PULL_BYTES above; only a pull of ~1 GiB reaches it
    { contents: true, maxOutput: MAX_PULL_BYTES + 64 * 1024 * 1024 },
  );
  const content = new Map<string, Map<string, Buffer>>();
  toRead.forEach((f, i) => {
    if (!content.has(f.ref)) content.set(f.ref, new Map());
    content.get(f.ref)!.set(f.path, blobs[i]!.content!);
  });
  return refs.map((r): ReadOutcome => {
    const rule = bad.get(r.ref) ?? checkDocuments(r.key, content.get(r.ref)!);
    if (rule) return { ok: false, key: r.key, ref: r.ref, rule };
    const byPath = content.get(r.ref)!;
    const outputs = [...byPath]
      .filter(([p]) => p.startsWith(OUT_DIR))
      .map(([p, bytes]) => ({ path: p.slice(OUT_DIR.length), bytes }));
    return {
      ok: true,
      material: {
        key: r.key,
        ref: r.ref,
        commit: r.oid,
        job: byPath.get(JOB_ENTRY)!,
        receipt: byPath.get(RECEIPT_ENTRY)!,
        outputs,
      },
    };
  });
}

/** The job parses, is canonical and is the key's; the receipt decodes (shape, canonical payload, schema); sizes fit the job. */
function checkDocuments(key: string, byPath: Map<string, Buffer>): string | null {
  const jobBytes = byPath.get(JOB_ENTRY)!;
  let job: ReturnType<typeof parseJob>['job'];
  try {
    job = parseJob(jobBytes, JOB_ENTRY).job;
  } catch (err) {
    return (err as Error).message;
  }
  if (job.key !== key) return `job.json is the job of key ${job.key.slice(0, 12)}, not of the ref's key`;
  if (!jobFileBytes(job).equals(jobBytes)) return 'job.json is not in canonical form';
  try {
    decodeReceipt(byPath.get(RECEIPT_ENTRY)!, RECEIPT_ENTRY);
  } catch (err) {
    return (err as Error).message;
  }
  let total = 0;
  for (const [p, bytes] of byPath) {
    if (!p.startsWith(OUT_DIR)) continue;
    if (bytes.length > job.constraints.max_file_bytes) return `${p} is larger than the job's max_file_bytes`;
    total += bytes.length;
  }
  if (total > job.constraints.max_total_bytes) return `the outputs are larger than the job's max_total_bytes`;
  return null;
}
