// Pulled material is hostile input. These tests build key refs in a real repository — the material
// `genjob push` makes, and objects git itself would never write (raw trees and commits) — and pin the
// rule readPulled gives for each refused shape, and what it returns for good material.
import { beforeEach, describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { DEFAULT_CONSTRAINTS, type Job } from '../../src/core/job.js';
import { MAX_DEPTH } from '../../src/core/paths.js';
import { MAX_RECEIPT_BYTES } from '../../src/core/receipt.js';
import { buildMaterial } from '../../src/git/build-material.js';
import { fetchKeyRefs } from '../../src/git/fetch-material.js';
import { keyRef, PULLED_REFS } from '../../src/git/material-refs.js';
import {
  MAX_DEPTH_TREE_BYTES,
  MAX_JOB_FILE_BYTES,
  MAX_OUTPUTS,
  MAX_PULL_BYTES,
  MAX_PULL_TREE_ENTRIES,
  MAX_REF_TREE_BYTES,
  MAX_REF_TREE_ENTRIES,
  type PulledRef,
  readPulled,
  TREE_LIMITS,
  type TreeLimits,
} from '../../src/git/read-material.js';
import { jobFileBytes } from '../../src/store/mint-job.js';
import { type Repo, tempGitRepo } from './git-repo.js';
import { jobWithReceipt } from './job-fixture.js';

const NEW = Buffer.from('new\n');

interface Doc {
  job: Job;
  jobBytes: Buffer;
  receiptBytes: Buffer;
}

/** A job asking for `paths` and the canonical receipt of its outputs `outputs` (path → bytes). */
function documents(
  instruction: string,
  outputs: Record<string, Buffer>,
  constraints = DEFAULT_CONSTRAINTS,
): Doc {
  const { job, receipt } = jobWithReceipt(instruction, outputs, constraints);
  return { job, jobBytes: jobFileBytes(job), receiptBytes: canonicalBytes(receipt) };
}

/** `d`'s material with out/src/a.py, as genjob push builds it under refs/genjob/keys/<key> of `r`. */
async function pushed(r: Repo, d: Doc): Promise<string> {
  await buildMaterial(r.root, [
    {
      key: d.job.key,
      job: d.jobBytes,
      receipt: d.receiptBytes,
      receiptSha256: '0',
      outputs: [{ path: 'src/a.py', bytes: NEW }],
    },
  ]);
  return r.git(['rev-parse', keyRef(d.job.key)]);
}

type Entry = [mode: string, name: string, oid: string];

/** A raw tree object with exactly `entries`, in that order (git checks nothing). */
function rawTree(repo: Repo, entries: Entry[]): string {
  const oidBytes = repo.objectFormat === 'sha256' ? 32 : 20;
  const parts = entries.map(([mode, name, oid]) => {
    const id = Buffer.from(oid, 'hex');
    expect(id.length).toBe(oidBytes);
    return Buffer.concat([Buffer.from(`${mode} ${name}\0`), id]);
  });
  return repo.object('tree', Buffer.concat(parts));
}

const blob = (repo: Repo, bytes: string | Buffer) => repo.object('blob', bytes);

/** An object's size in bytes, as git's size check sees it. */
const objectSize = (repo: Repo, oid: string) => Number(repo.git(['cat-file', '-s', oid]));

/** A commit object naming `tree`, written as is. */
const rawCommit = (repo: Repo, tree: string) =>
  repo.object('commit', `tree ${tree}\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nm\n`);

/** The standard top of a material tree: job.json, receipt.json, out/ (as given). */
function topTree(repo: Repo, d: Doc, out: Entry[], extra: Entry[] = []): string {
  return rawTree(repo, [
    ['100644', 'job.json', blob(repo, d.jobBytes)],
    ['100644', 'receipt.json', blob(repo, d.receiptBytes)],
    ['40000', 'out', rawTree(repo, out)],
    ...extra,
  ]);
}

const pulled = (key: string, oid: string, type = 'commit'): PulledRef & { key: string } => ({
  ref: `${PULLED_REFS}${key}`,
  oid,
  type,
  key,
});

/** readPulled's rule for one ref whose commit has root tree `tree`. */
async function ruleFor(repo: Repo, d: Doc, tree: string): Promise<string> {
  const [outcome] = await readPulled(repo.root, [pulled(d.job.key, rawCommit(repo, tree))]);
  expect(outcome!.ok).toBe(false);
  return (outcome as { rule: string }).rule;
}

/** A job whose outputs a.txt (4 bytes) and b.txt (2 bytes) are exactly at its max_file_bytes and max_total_bytes. */
const tight = () =>
  documents(
    'Tight',
    { 'a.txt': Buffer.from('1234'), 'b.txt': Buffer.from('56') },
    { max_file_bytes: 4, max_total_bytes: 6 },
  );

let repo: Repo;
let doc: Doc;
let newBlob: string;
beforeEach(() => {
  repo = tempGitRepo('gj-material-');
  doc = documents('Rewrite a.py', { 'src/a.py': NEW });
  newBlob = blob(repo, NEW);
});

/** out/src/a.py as a tree entry list for out/. */
const outSrc = (r: Repo, name = 'a.py', mode = '100644', oid?: string): Entry[] => [
  ['40000', 'src', rawTree(r, [[mode, name, oid ?? blob(r, NEW)]])],
];

describe('readPulled accepts', () => {
  it('the material genjob push builds, returning its job, receipt and outputs by contract path', async () => {
    const commit = await pushed(repo, doc);
    expect(await readPulled(repo.root, [pulled(doc.job.key, commit)])).toEqual([
      {
        ok: true,
        material: {
          key: doc.job.key,
          ref: `${PULLED_REFS}${doc.job.key}`,
          commit,
          job: doc.jobBytes,
          receipt: doc.receiptBytes,
          outputs: [{ path: 'src/a.py', bytes: NEW }],
        },
      },
    ]);
  });

  it('material in a sha256 repository (32-byte object ids in trees)', async () => {
    const r = tempGitRepo('gj-material-256-', { objectFormat: 'sha256' });
    const tree = topTree(r, doc, outSrc(r));
    const commit = rawCommit(r, tree);
    expect(commit).toHaveLength(64);
    const [outcome] = await readPulled(r.root, [pulled(doc.job.key, commit)]);
    expect(outcome).toMatchObject({ ok: true, material: { outputs: [{ path: 'src/a.py', bytes: NEW }] } });
  });

  it('an output of exactly 64 MiB, and one as deep as a contract path may be', async () => {
    const cap = 64 * 1024 * 1024;
    const bytes = Buffer.alloc(cap, 0x20);
    const parts = Array.from({ length: 31 }, (_, i) => `d${i}`);
    const deepPath = `${parts.join('/')}/f`;
    const d = documents('Big and deep', { big: bytes, [deepPath]: NEW });
    let deep: Entry[] = [['100644', 'f', newBlob]];
    for (const part of [...parts].reverse()) deep = [['40000', part, rawTree(repo, deep)]];
    const tree = topTree(repo, d, [['100644', 'big', blob(repo, bytes)], ...deep]);
    const [outcome] = await readPulled(repo.root, [pulled(d.job.key, rawCommit(repo, tree))]);
    expect(outcome!.ok ? outcome!.material.outputs.map((o) => [o.path, o.bytes.length]) : outcome).toEqual([
      ['big', cap],
      [deepPath, NEW.length],
    ]);
  });

  it('nothing to read: no refs, no outcomes', async () => {
    expect(await readPulled(repo.root, [])).toEqual([]);
  });

  it('exactly the most outputs a key may have', async () => {
    const many: Record<string, Buffer> = {};
    for (let i = 0; i < MAX_OUTPUTS; i++) many[`o${i}`] = NEW;
    const d = documents('Many', many);
    const tree = topTree(
      repo,
      d,
      Object.keys(many).map((n): Entry => ['100644', n, newBlob]),
    );
    const [outcome] = await readPulled(repo.root, [pulled(d.job.key, rawCommit(repo, tree))]);
    expect(outcome!.ok).toBe(true);
    expect((outcome as { material: { outputs: unknown[] } }).material.outputs).toHaveLength(MAX_OUTPUTS);
  });

  it('outputs of exactly the job’s max_file_bytes and, together, its max_total_bytes', async () => {
    const d = tight();
    const tree = topTree(repo, d, [
      ['100644', 'a.txt', blob(repo, '1234')],
      ['100644', 'b.txt', blob(repo, '56')],
    ]);
    const [outcome] = await readPulled(repo.root, [pulled(d.job.key, rawCommit(repo, tree))]);
    expect(outcome!.ok).toBe(true);
  });
});

describe('readPulled judges each ref on its own', () => {
  it('two refs naming one key (this clone’s and a pulled one): one refused, the other read', async () => {
    const commit = await pushed(repo, doc);
    const mine = { ...pulled(doc.job.key, commit), ref: `refs/genjob/keys/${doc.job.key}` };
    const outcomes = await readPulled(repo.root, [pulled(doc.job.key, newBlob, 'blob'), mine]);
    expect(outcomes).toEqual([
      {
        ok: false,
        key: doc.job.key,
        ref: `${PULLED_REFS}${doc.job.key}`,
        rule: 'points at a blob, not a commit',
      },
      expect.objectContaining({ ok: true, material: expect.objectContaining({ ref: mine.ref }) }),
    ]);
  });
});

describe('readPulled refuses', () => {
  it('a ref that points at a tag or a blob, not a commit', async () => {
    const tree = topTree(repo, doc, outSrc(repo));
    const tag = repo.object(
      'tag',
      `object ${rawCommit(repo, tree)}\ntype commit\ntag t\ntagger a <a@b> 0 +0000\n\nm\n`,
    );
    expect(await readPulled(repo.root, [pulled(doc.job.key, tag, 'tag')])).toEqual([
      {
        ok: false,
        key: doc.job.key,
        ref: `${PULLED_REFS}${doc.job.key}`,
        rule: 'points at a tag, not a commit',
      },
    ]);
    expect(await readPulled(repo.root, [pulled(doc.job.key, newBlob, 'blob')])).toEqual([
      {
        ok: false,
        key: doc.job.key,
        ref: `${PULLED_REFS}${doc.job.key}`,
        rule: 'points at a blob, not a commit',
      },
    ]);
  });

  it('a ref that points at a blob larger than a commit may be is never read: the refusal is its own, the other keys are read', async () => {
    const huge = blob(repo, Buffer.alloc(64 * 1024 * 1024 + 1, 0x61));
    const tree = topTree(repo, doc, outSrc(repo));
    const other = documents('Other', { 'src/a.py': NEW });
    const outcomes = await readPulled(repo.root, [
      pulled(other.job.key, huge, 'blob'),
      pulled(doc.job.key, rawCommit(repo, tree)),
    ]);
    expect(outcomes.map((o) => (o.ok ? 'read' : o.rule))).toEqual(['points at a blob, not a commit', 'read']);
  }, 30_000);

  it('a commit that names no tree in its header, or whose object is not here', async () => {
    const tree = topTree(repo, doc, outSrc(repo));
    const commit = repo.object('commit', `author a <a@b> 0 +0000\n\ntree ${tree}\n`);
    const absent = 'ab'.repeat(20);
    expect(
      await readPulled(repo.root, [pulled(doc.job.key, commit), pulled('e'.repeat(64), absent)]),
    ).toEqual([
      { ok: false, key: doc.job.key, ref: `${PULLED_REFS}${doc.job.key}`, rule: 'the commit names no tree' },
      {
        ok: false,
        key: 'e'.repeat(64),
        ref: `${PULLED_REFS}${'e'.repeat(64)}`,
        rule: 'the commit names no tree',
      },
    ]);
  });

  it('a root or an out/ that is not a tree', async () => {
    expect(await ruleFor(repo, doc, newBlob)).toBe('(root) is not a tree');
    const outBlob = rawTree(repo, [
      ['100644', 'job.json', blob(repo, doc.jobBytes)],
      ['100644', 'receipt.json', blob(repo, doc.receiptBytes)],
      ['40000', 'out', newBlob],
    ]);
    expect(await ruleFor(repo, doc, outBlob)).toBe('out/ is not a tree');
  });

  it('a tree object that does not parse', async () => {
    const broken = repo.object('tree', Buffer.from('100644 name-without-nul'));
    expect(await ruleFor(repo, doc, broken)).toBe('(root): malformed tree object');
    const badOut = rawTree(repo, [['40000', 'out', repo.object('tree', Buffer.from('100644 x'))]]);
    expect(await ruleFor(repo, doc, badOut)).toBe('out/: malformed tree object');
  });

  it.each<[string, Entry[], string]>([
    [
      'an extra file',
      [['100644', 'notes.txt', 'B']],
      'unexpected entry "notes.txt" (mode 100644) at the top',
    ],
    [
      'an executable job.json',
      [['100755', 'job.json', 'B']],
      'unexpected entry "job.json" (mode 100755) at the top',
    ],
    [
      'a receipt.json directory',
      [['40000', 'receipt.json', 'T']],
      'unexpected entry "receipt.json" (mode 40000) at the top',
    ],
    ['an out file', [['100644', 'out', 'B']], 'unexpected entry "out" (mode 100644) at the top'],
    ['an out symlink', [['120000', 'out', 'B']], 'unexpected entry "out" (mode 120000) at the top'],
  ])('%s at the top', async (_what, top, rule) => {
    const entries = top.map(([m, n, o]): Entry => [m, n, o === 'B' ? newBlob : rawTree(repo, [])]);
    expect(await ruleFor(repo, doc, rawTree(repo, entries))).toBe(rule);
  });

  it('an output path that fails the path rules', async () => {
    const tree = topTree(repo, doc, [['100644', 'a\\b', newBlob]]);
    expect(await ruleFor(repo, doc, tree)).toBe('"out/a\\\\b": path contains a backslash');
    const deep = topTree(repo, doc, [['40000', '.git', rawTree(repo, [['100644', 'config', newBlob]])]]);
    expect(await ruleFor(repo, doc, deep)).toBe('"out/.git": path is inside .git/');
  });

  it.each([
    ['100755', 'an executable'],
    ['120000', 'a symlink'],
    ['160000', 'a submodule'],
  ])('an output of mode %s (%s)', async (mode) => {
    const tree = topTree(repo, doc, outSrc(repo, 'a.py', mode, newBlob));
    expect(await ruleFor(repo, doc, tree)).toBe(
      `"out/src/a.py" has mode ${mode}: only regular files (100644) are accepted`,
    );
  });

  it('more outputs than a key may have', async () => {
    const names = Array.from({ length: MAX_OUTPUTS + 1 }, (_, i) => `o${i}`);
    const tree = topTree(
      repo,
      doc,
      names.map((n): Entry => ['100644', n, newBlob]),
    );
    expect(await ruleFor(repo, doc, tree)).toBe(`more than ${MAX_OUTPUTS} outputs`);
  });

  it('material without its job.json or its receipt.json', async () => {
    const noJob = rawTree(repo, [
      ['100644', 'receipt.json', blob(repo, doc.receiptBytes)],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, noJob)).toBe('job.json or receipt.json is missing');
    const noReceipt = rawTree(repo, [
      ['100644', 'job.json', blob(repo, doc.jobBytes)],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, noReceipt)).toBe('job.json or receipt.json is missing');
  });

  it('two outputs whose names fold to the same path', async () => {
    const tree = topTree(repo, doc, [
      ['100644', 'A.txt', newBlob],
      ['100644', 'a.txt', newBlob],
    ]);
    expect(await ruleFor(repo, doc, tree)).toBe('"out/a.txt" appears twice (after case and Unicode folding)');
  });

  it('a document entry that names a tree object', async () => {
    const tree = rawTree(repo, [
      ['100644', 'job.json', rawTree(repo, [])],
      ['100644', 'receipt.json', blob(repo, doc.receiptBytes)],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, tree)).toBe('job.json is not a blob');
  });

  it('a document entry whose object is not here', async () => {
    const tree = rawTree(repo, [
      ['100644', 'job.json', blob(repo, doc.jobBytes)],
      ['100644', 'receipt.json', 'cd'.repeat(20)],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, tree)).toBe('receipt.json is not a blob');
  });

  it('a receipt of exactly its size cap is read (and then judged by what it holds)', async () => {
    const atCap = rawTree(repo, [
      ['100644', 'job.json', blob(repo, doc.jobBytes)],
      ['100644', 'receipt.json', blob(repo, Buffer.alloc(MAX_RECEIPT_BYTES, 0x20))],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, atCap)).toMatch(/^receipt\.json: /);
  });

  it('a receipt, a job file or an output above its size cap, before reading it', async () => {
    const over = (n: number) => Buffer.alloc(n + 1, 0x20);
    const bigReceipt = rawTree(repo, [
      ['100644', 'job.json', blob(repo, doc.jobBytes)],
      ['100644', 'receipt.json', blob(repo, over(MAX_RECEIPT_BYTES))],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, bigReceipt)).toBe(
      `receipt.json is ${MAX_RECEIPT_BYTES + 1} bytes, above the cap of ${MAX_RECEIPT_BYTES}`,
    );
    const bigJob = rawTree(repo, [
      ['100644', 'job.json', blob(repo, over(MAX_JOB_FILE_BYTES))],
      ['100644', 'receipt.json', blob(repo, doc.receiptBytes)],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, bigJob)).toBe(
      `job.json is ${MAX_JOB_FILE_BYTES + 1} bytes, above the cap of ${MAX_JOB_FILE_BYTES}`,
    );
    const cap = 64 * 1024 * 1024;
    const bigOut = topTree(repo, doc, [['100644', 'big', blob(repo, over(cap))]]);
    expect(await ruleFor(repo, doc, bigOut)).toBe(`out/big is ${cap + 1} bytes, above the cap of ${cap}`);
  });

  it('every key of a pull that would read more than its cap in all', async () => {
    const chunk = blob(repo, Buffer.alloc(64 * 1024 * 1024, 0x20));
    const n = Math.floor(MAX_PULL_BYTES / (64 * 1024 * 1024)) + 1;
    const heavy = topTree(
      repo,
      doc,
      Array.from({ length: n }, (_, i): Entry => ['100644', `c${i}`, chunk]),
    );
    const small = documents('Small', { 'b.txt': NEW });
    const light = topTree(repo, small, [['100644', 'b.txt', newBlob]]);
    expect(
      await readPulled(repo.root, [
        pulled(doc.job.key, rawCommit(repo, heavy)),
        pulled(small.job.key, rawCommit(repo, light)),
      ]),
    ).toEqual([
      {
        ok: false,
        key: doc.job.key,
        ref: `${PULLED_REFS}${doc.job.key}`,
        rule: `the pull would read more than ${MAX_PULL_BYTES} bytes`,
      },
      {
        ok: false,
        key: small.job.key,
        ref: `${PULLED_REFS}${small.job.key}`,
        rule: `the pull would read more than ${MAX_PULL_BYTES} bytes`,
      },
    ]);
  });

  it('a tree named over and over (fan-out), once its entries pass the bound, before the next depth is queued', async () => {
    // 700 directories naming one tree of 700 directories naming one tree of 700: 343 million paths in 70 KB
    const fan = (n: number, oid: string) =>
      rawTree(
        repo,
        Array.from({ length: n }, (_, i): Entry => ['40000', `d${i}`, oid]),
      );
    const t2 = fan(700, fan(700, rawTree(repo, [])));
    const tree = topTree(
      repo,
      doc,
      Array.from({ length: 700 }, (_, k): Entry => ['40000', `d${k}`, t2]),
    );
    expect(await ruleFor(repo, doc, tree)).toBe(
      `its trees hold more than ${MAX_REF_TREE_ENTRIES} entries (a tree counted once for each name it has)`,
    );
  });

  it('the key whose fan-out would make one depth of the pull read its trees past the cap, before reading them, leaving the others alone', async () => {
    // one tree of 10,000 entries named 1,000 times: over 300 MB of trees at depth 2 if read as named
    const empty = rawTree(repo, []);
    const wide = rawTree(
      repo,
      Array.from({ length: 10_000 }, (_, i): Entry => ['40000', `e${i}`, empty]),
    );
    const bytes = objectSize(repo, wide);
    const tree = topTree(
      repo,
      doc,
      Array.from({ length: 1000 }, (_, i): Entry => ['40000', `d${i}`, wide]),
    );
    const good = documents('Good', { 'g.txt': Buffer.from('g') });
    const goodTree = topTree(repo, good, [['100644', 'g.txt', blob(repo, 'g')]]);
    const outcomes = await readPulled(repo.root, [
      pulled(doc.job.key, rawCommit(repo, tree)),
      pulled(good.job.key, rawCommit(repo, goodTree)),
    ]);
    expect(outcomes.map((o) => (o.ok ? o.material.outputs : o.rule))).toEqual([
      `its trees at depth 2 are ${1000 * bytes} bytes (a tree counted once for each name it has), above the cap of ${MAX_REF_TREE_BYTES}`,
      [{ path: 'g.txt', bytes: Buffer.from('g') }],
    ]);
    expect(1000 * bytes).toBeGreaterThan(256 * 1024 * 1024);
    expect(MAX_DEPTH_TREE_BYTES).toBeLessThan(256 * 1024 * 1024);
  });

  it('at each tree bound exactly, with small bounds: every key read (a tree named by several keys counted once a depth)', async () => {
    const outputs = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`o${i}`, NEW]));
    const docs = ['One', 'Two', 'Three'].map((n) => documents(n, outputs));
    const out = Object.keys(outputs).map((name): Entry => ['100644', name, newBlob]);
    const roots = docs.map((d) => topTree(repo, d, out));
    const size = (oid: string) => objectSize(repo, oid);
    const outTree = rawTree(repo, out);
    expect(3 * size(outTree)).toBeGreaterThan(size(roots[0]!) + size(roots[1]!) + size(roots[2]!));
    const limits: TreeLimits = {
      refEntries: 3 + 20,
      pullEntries: 3 * (3 + 20),
      refBytes: size(outTree),
      // depth 0 reads the three roots, depth 1 the one out/ they share
      depthBytes: Math.max(
        roots.map(size).reduce((x, y) => x + y),
        size(outTree),
      ),
    };
    const outcomes = await readPulled(
      repo.root,
      docs.map((d, i) => pulled(d.job.key, rawCommit(repo, roots[i]!))),
      limits,
    );
    expect(outcomes.map((o) => (o.ok ? 'read' : o.rule))).toEqual(['read', 'read', 'read']);
  });

  it('a key past the bytes one depth of the pull may read is refused before its trees are read; a smaller key after it still fits', async () => {
    const [a, b, c] = ['A', 'B', 'C'].map((n) => documents(n, { 'src/a.py': NEW })) as [Doc, Doc, Doc];
    const rootA = topTree(repo, a, outSrc(repo));
    const rootB = topTree(repo, b, outSrc(repo), [['100644', 'padding', newBlob]]);
    const rootC = topTree(repo, c, outSrc(repo));
    const size = (oid: string) => objectSize(repo, oid);
    expect(size(rootB)).toBeGreaterThan(size(rootC));
    const limits = { ...TREE_LIMITS, depthBytes: size(rootA) + size(rootC) };
    const outcomes = await readPulled(
      repo.root,
      [
        pulled(a.job.key, rawCommit(repo, rootA)),
        pulled(b.job.key, rawCommit(repo, rootB)),
        pulled(c.job.key, rawCommit(repo, rootC)),
      ],
      limits,
    );
    expect(outcomes.map((o) => (o.ok ? 'read' : o.rule))).toEqual([
      'read',
      `the pull would read more than ${limits.depthBytes} bytes of trees at depth 0`,
      'read',
    ]);
  });

  it('the keys past the tree entries one pull may walk, each within its own bound', async () => {
    // 300 directories naming one tree of 1,000 empty directories: 300,300 entries a key, four keys
    const empty = rawTree(repo, []);
    const inner = rawTree(
      repo,
      Array.from({ length: 1000 }, (_, i): Entry => ['40000', `e${i}`, empty]),
    );
    const out = Array.from({ length: 300 }, (_, i): Entry => ['40000', `d${i}`, inner]);
    const docs = [doc, ...[1, 2, 3].map((n) => documents(`Other ${n}`, { 'src/a.py': NEW }))];
    expect(4 * 300_300).toBeGreaterThan(MAX_PULL_TREE_ENTRIES);
    expect(300_303).toBeLessThan(MAX_REF_TREE_ENTRIES);
    const outcomes = await readPulled(
      repo.root,
      docs.map((d) => pulled(d.job.key, rawCommit(repo, topTree(repo, d, out)))),
    );
    expect(
      outcomes.map((o) => (o.ok ? 'read' : o.rule)),
      JSON.stringify(outcomes.map((o) => !o.ok && o.rule)),
    ).toEqual([
      'read',
      'read',
      'read',
      `the pull would walk more than ${MAX_PULL_TREE_ENTRIES} tree entries`,
    ]);
  });

  it('a key refused part-way through a depth: its other trees there are not walked, so they take nothing from the pull’s bound', async () => {
    const a = documents('A', { 'x/l': NEW });
    const empty = rawTree(repo, []);
    // out/x is walked first and refuses the key (a symlink); out/y, three entries, comes after it
    const rootA = topTree(repo, a, [
      ['40000', 'x', rawTree(repo, [['120000', 'l', newBlob]])],
      [
        '40000',
        'y',
        rawTree(
          repo,
          [0, 1, 2].map((i): Entry => ['40000', `e${i}`, empty]),
        ),
      ],
    ]);
    const rootB = topTree(repo, doc, outSrc(repo));
    // A: 3 + 2 + 1 (out/x) entries, B: 3 + 1 + 1; out/y's 3 more would leave no room for B's last one
    const limits = { ...TREE_LIMITS, pullEntries: 6 + 5 + 3 - 1 };
    const outcomes = await readPulled(
      repo.root,
      [pulled(a.job.key, rawCommit(repo, rootA)), pulled(doc.job.key, rawCommit(repo, rootB))],
      limits,
    );
    expect(outcomes.map((o) => (o.ok ? 'read' : o.rule))).toEqual([
      '"out/x/l" has mode 120000: only regular files (100644) are accepted',
      'read',
    ]);
  });

  it('the most tree entries legitimate material can have (every output under MAX_DEPTH - 1 directories of its own), and not one more', async () => {
    // out/o<i>/d/…/d/f: MAX_DEPTH components below out/; the chain below o<i> is one tree named 10,000 times
    const chainPath = (i: number) => `o${i}/${'d/'.repeat(MAX_DEPTH - 2)}f`;
    const outputs = Object.fromEntries(Array.from({ length: MAX_OUTPUTS }, (_, i) => [chainPath(i), NEW]));
    const d = documents('Deep', outputs);
    let chain = rawTree(repo, [['100644', 'f', newBlob]]);
    for (let level = 0; level < MAX_DEPTH - 2; level++) chain = rawTree(repo, [['40000', 'd', chain]]);
    const out = Array.from({ length: MAX_OUTPUTS }, (_, i): Entry => ['40000', `o${i}`, chain]);
    expect(3 + MAX_OUTPUTS * MAX_DEPTH).toBe(MAX_REF_TREE_ENTRIES);
    const [read] = await readPulled(repo.root, [pulled(d.job.key, rawCommit(repo, topTree(repo, d, out)))]);
    expect(read!.ok, JSON.stringify(read)).toBe(true);
    expect((read as { material: { outputs: unknown[] } }).material.outputs).toHaveLength(MAX_OUTPUTS);
    const [over] = await readPulled(repo.root, [
      pulled(d.job.key, rawCommit(repo, topTree(repo, d, [...out, ['40000', 'z', rawTree(repo, [])]]))),
    ]);
    expect(over!.ok ? 'read' : over!.rule).toBe(
      `its trees hold more than ${MAX_REF_TREE_ENTRIES} entries (a tree counted once for each name it has)`,
    );
  }, 60_000);

  it('a job file that does not parse, is another key’s, or is not in canonical form', async () => {
    const notJson = rawTree(repo, [
      ['100644', 'job.json', blob(repo, '{not json')],
      ['100644', 'receipt.json', blob(repo, doc.receiptBytes)],
      ['40000', 'out', rawTree(repo, outSrc(repo))],
    ]);
    expect(await ruleFor(repo, doc, notJson)).toMatch(/^job\.json: .*malformed JSON/);
    const other = documents('Other', { 'src/a.py': NEW });
    const othersJob = topTree(repo, other, outSrc(repo));
    expect(await ruleFor(repo, doc, othersJob)).toBe(
      `job.json is the job of key ${other.job.key.slice(0, 12)}, not of the ref's key`,
    );
    const spaced = { ...doc, jobBytes: Buffer.from(JSON.stringify(doc.job, null, 2)) };
    expect(await ruleFor(repo, doc, topTree(repo, spaced, outSrc(repo)))).toBe(
      'job.json is not in canonical form',
    );
  });

  it('a receipt that does not decode', async () => {
    const bad = { ...doc, receiptBytes: Buffer.from('{"schema":"nope"}') };
    expect(await ruleFor(repo, doc, topTree(repo, bad, outSrc(repo)))).toMatch(/^receipt\.json: /);
  });

  it('an output above the job’s max_file_bytes, or outputs above its max_total_bytes', async () => {
    const d = tight();
    const fileOver = topTree(repo, d, [['100644', 'a.txt', blob(repo, '12345')]]);
    expect(await ruleFor(repo, d, fileOver)).toBe("out/a.txt is larger than the job's max_file_bytes");
    const totalOver = topTree(repo, d, [
      ['100644', 'a.txt', blob(repo, '1234')],
      ['100644', 'b.txt', blob(repo, '567')],
    ]);
    expect(await ruleFor(repo, d, totalOver)).toBe("the outputs are larger than the job's max_total_bytes");
  });

  it('with the first rule a key broke, and leaves the other keys of the pull alone', async () => {
    const twinsNoReceipt = rawTree(repo, [
      ['100644', 'job.json', blob(repo, doc.jobBytes)],
      [
        '40000',
        'out',
        rawTree(repo, [
          ['100644', 'A', newBlob],
          ['100644', 'a', newBlob],
        ]),
      ],
    ]);
    const good = documents('Good', { 'g.txt': Buffer.from('g') });
    const goodTree = topTree(repo, good, [['100644', 'g.txt', blob(repo, 'g')]]);
    const third = documents('Third', { 't.txt': Buffer.from('t') });
    const thirdTree = topTree(repo, third, [['100644', 't.txt', blob(repo, 't')]]);
    const outcomes = await readPulled(repo.root, [
      pulled('e'.repeat(64), newBlob, 'blob'),
      pulled(doc.job.key, rawCommit(repo, twinsNoReceipt)),
      pulled(good.job.key, rawCommit(repo, goodTree)),
      pulled(third.job.key, rawCommit(repo, thirdTree)),
    ]);
    expect(outcomes.map((o) => (o.ok ? o.material.outputs : o.rule))).toEqual([
      'points at a blob, not a commit',
      'job.json or receipt.json is missing',
      [{ path: 'g.txt', bytes: Buffer.from('g') }],
      [{ path: 't.txt', bytes: Buffer.from('t') }],
    ]);
  });
});

/** Far from anything this test fetches: neither bound decides it. */
const BOUNDS = { timeoutMs: 600_000, maxBytes: 64 * 1024 * 1024 };

describe('fetchKeyRefs', () => {
  it('mirrors the remote’s key refs (forced and pruned), naming each ref’s object, type and key', async () => {
    const remote = tempGitRepo('gj-material-remote-');
    const commit = await pushed(remote, doc);
    const tag = remote.object('tag', `object ${commit}\ntype commit\ntag t\ntagger a <a@b> 0 +0000\n\nm\n`);
    remote.git(['update-ref', 'refs/genjob/keys/not-a-key', commit]);
    remote.git(['update-ref', `refs/genjob/keys/${'d'.repeat(64)}`, tag]);
    remote.git(['update-ref', 'refs/heads/other', commit]);
    const local = tempGitRepo('gj-material-local-');
    const { refs, skipped } = await fetchKeyRefs(local.root, remote.root, BOUNDS);
    expect(skipped).toEqual([]);
    expect(refs).toEqual([
      { oid: commit, type: 'commit', ref: `${PULLED_REFS}${doc.job.key}`, key: doc.job.key },
      { oid: tag, type: 'tag', ref: `${PULLED_REFS}${'d'.repeat(64)}`, key: 'd'.repeat(64) },
      { oid: commit, type: 'commit', ref: `${PULLED_REFS}not-a-key`, key: null },
    ]);
    // the remote moves one ref and deletes another: the mirror follows
    const moved = rawCommit(remote, remote.git(['rev-parse', `${commit}^{tree}`]));
    remote.git(['update-ref', keyRef(doc.job.key), moved]);
    remote.git(['update-ref', '-d', 'refs/genjob/keys/not-a-key']);
    remote.git(['update-ref', '-d', `refs/genjob/keys/${'d'.repeat(64)}`]);
    expect((await fetchKeyRefs(local.root, remote.root, BOUNDS)).refs).toEqual([
      { oid: moved, type: 'commit', ref: `${PULLED_REFS}${doc.job.key}`, key: doc.job.key },
    ]);
    expect(local.git(['for-each-ref', '--format=%(refname)'])).toBe(`${PULLED_REFS}${doc.job.key}`);
    expect(local.git(['tag', '-l'])).toBe('');
  });
});
