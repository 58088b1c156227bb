// Bench fixtures written straight to disk, so setting up 1,000 queued jobs does not cost 1,000 mint
// processes: job files in the exact bytes `genjob mint` writes (checked against a real mint at start),
// received jobs with receipts and out/ files shaped as `genjob work` leaves them, random and text files.
import { createHash, randomFillSync } from 'node:crypto';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** RFC 8785 for the values genjob uses: sorted keys, no whitespace. */
export function canonical(v) {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
    .join(',')}}`;
}

/** A job document for `inputs` [{path, sha256|null}], as src/core/job.ts builds it. */
export function makeJob(instruction, inputs) {
  const sorted = [...inputs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const map = Object.create(null);
  for (const i of sorted) map[i.path] = i.sha256;
  const key = sha256(canonical({ instruction, inputs: map }));
  const job = {
    schema: 'genjob/job@1',
    key,
    instruction,
    inputs: sorted,
    constraints: { max_file_bytes: 64 * 1024 * 1024, max_total_bytes: 512 * 1024 * 1024 },
  };
  return { job, key, digest: sha256(canonical(job)), bytes: Buffer.from(`${canonical(job)}\n`) };
}

export function queueJob(root, made) {
  writeFileSync(join(root, '.gen', 'queue', `${made.key}.json`), made.bytes);
}

/**
 * A received job as `genjob work` leaves it: received/<key>.json, attempts/<key>/1.json,
 * receipts/<key>.json (a plain canonical receipt, epoch 1) and out/<key>/<path> written by `writeOut`.
 */
export function receivedJob(root, made, outputs, writeOut) {
  const gen = join(root, '.gen');
  writeFileSync(join(gen, 'received', `${made.key}.json`), made.bytes);
  mkdirSync(join(gen, 'attempts', made.key), { recursive: true });
  writeFileSync(
    join(gen, 'attempts', made.key, '1.json'),
    `${JSON.stringify({ key: made.key, epoch: 1 })}\n`,
  );
  const now = new Date().toISOString();
  const receipt = {
    schema: 'genjob/receipt@1',
    key: made.key,
    job_digest: made.digest,
    epoch: 1,
    status: 'ok',
    outputs: [...outputs].sort((a, b) => (a.path < b.path ? -1 : 1)),
    reason: null,
    worker: { id: 'bench', host: 'bench' },
    generator: { command: 'bench', version: null },
    timings: { started_at: now, finished_at: now, generate_ms: 0 },
    cached: false,
  };
  writeFileSync(join(gen, 'receipts', `${made.key}.json`), canonical(receipt));
  for (const o of outputs) {
    const file = join(gen, 'out', made.key, ...o.path.split('/'));
    mkdirSync(dirname(file), { recursive: true });
    writeOut(file, o);
  }
}

/** `bytes` of random (incompressible) data at `file`; returns its sha256. */
export function randomFile(file, bytes) {
  mkdirSync(dirname(file), { recursive: true });
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(8 * 1024 * 1024);
  const fd = openSync(file, 'w');
  try {
    for (let left = bytes; left > 0; ) {
      const n = Math.min(buf.length, left);
      randomFillSync(buf, 0, n);
      hash.update(buf.subarray(0, n));
      for (let off = 0; off < n; ) off += writeSync(fd, buf, off, n - off);
      left -= n;
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/** Source-like text: lines of random base64, `bytes` long. */
export function textBytes(bytes) {
  const raw = Buffer.allocUnsafe(Math.ceil((bytes * 3) / 4) + 3);
  randomFillSync(raw);
  const b64 = raw.toString('base64').slice(0, bytes).split('');
  for (let i = 63; i < b64.length; i += 64) b64[i] = '\n';
  if (b64.length > 0) b64[b64.length - 1] = '\n';
  return Buffer.from(b64.join(''));
}

/** `count` small text files under `root`, 100 per directory; returns [{path, sha256}]. */
export function smallFiles(root, count, bytes, prefix = 'src') {
  const out = [];
  for (let i = 0; i < count; i++) {
    const path = `${prefix}/d${String(Math.floor(i / 100)).padStart(3, '0')}/f${String(i % 100).padStart(2, '0')}.txt`;
    const data = textBytes(bytes);
    const file = join(root, ...path.split('/'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, data);
    out.push({ path, sha256: sha256(data), data });
  }
  return out;
}

/**
 * `count` files of TypeScript-like source, `bytes` each, under `root`: the words a secret scanner's
 * keywords catch in real code (links, `process.env.GITHUB_TOKEN`, `secret` names, and in one file in
 * twenty a database URL whose password is a variable), but no credential. Returns their paths.
 */
export function codeFiles(root, count, bytes, prefix = 'code') {
  const lines = (i) => [
    `import { helper${i % 17} } from './helper-${i % 17}.js';`,
    `// see https://github.com/acme/project/issues/${i}`,
    'const token = process.env.GITHUB_TOKEN;',
    `export const secretName = 'service-${i}-secret';`,
    ...(i % 20 === 0
      ? [`const url = \`postgres://app:${'$'}{process.env.DB_PASSWORD}@db.internal:5432/app\`;`]
      : []),
  ];
  const body = (i) =>
    `export function compute${i}(values: number[]): number {\n  return values.reduce((sum, v) => sum + v * ${i}, 0);\n}\n`;
  const out = [];
  for (let i = 0; i < count; i++) {
    const path = `${prefix}/m${String(Math.floor(i / 100)).padStart(3, '0')}/f${String(i % 100).padStart(2, '0')}.ts`;
    let text = `${lines(i).join('\n')}\n`;
    for (let k = 0; text.length < bytes; k++) text += body(i * 100 + k);
    const file = join(root, ...path.split('/'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text.slice(0, bytes));
    out.push(path);
  }
  return out;
}
