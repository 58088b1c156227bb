// The secret scan measured on a labelled corpus (fixtures/secrets-corpus/: real formats, FAKE values,
// filled in at run time by corpus-values.ts). Every file goes through mint itself, in process; a sample
// (every listed case, each stored encoding, a few kinds of each rule family) through the built CLI. The test fails on a miss
// outside KNOWN_MISSES, on more than one false alarm, on any listed case got wrong, when secretlint
// run alone (no prefilter) reports a file the scan passed, and when docs/trust.md's table is not the
// one this run measured (UPDATE_SECRETS_TABLE=1 rewrites it).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mint } from '../../src/commands/mint.js';
import { GenjobError } from '../../src/core/errors.js';
import { lintWithPreset, PRESET_RULE_IDS } from '../../src/secrets/preset-engine.js';
import { createSecretScanner } from '../../src/secrets/scanner.js';
import { Store } from '../../src/store/store.js';
import { type CorpusEncoding, encodeCorpusFile, renderCorpusFile } from './corpus-values.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const CORPUS = join(HERE, '../../fixtures/secrets-corpus');
const TRUST_MD = join(HERE, '../../docs/trust.md');
const BIN = fileURLToPath(new URL('../../bin/genjob.js', import.meta.url));

interface Labelled {
  path: string;
  secret: boolean;
  kind: string;
  encoding?: CorpusEncoding;
  /** The cases an unseen corpus showed wrong: `missed` must be refused, `false-alarm` must pass. */
  listed?: 'missed' | 'false-alarm';
  note?: string;
}

const { files } = JSON.parse(readFileSync(join(CORPUS, 'manifest.json'), 'utf8')) as { files: Labelled[] };
/** Secrets with no format to recognise: counted against recall, documented in docs/trust.md. */
const KNOWN_MISSES = new Set(['generic-password']);

interface Judged extends Labelled {
  refused: boolean;
  /** What refused it: a path rule, a secretlint rule or a genjob rule. */
  by?: string;
  bytes: Buffer;
}

let root: string;
let judged: Judged[];

/** The rule an EGJ_SECRET message names: `(… (rule env-file))` or `(secretlint aws: AWSAccessKeyID)`. */
function ruleOf(message: string): string {
  const path = /\(rule ([\w-]+)\)\)/.exec(message);
  if (path) return `path: ${path[1]}`;
  return /looks like a secret \((.+?)\); refusing/.exec(message)?.[1] ?? '?';
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'genjob-corpus-'));
  mkdirSync(join(root, '.git'));
  const store = new Store(root).ensure();
  judged = [];
  for (const f of files) {
    const committed = readFileSync(join(CORPUS, 'files', f.path));
    const template = committed.toString('utf8');
    const bytes = template.includes('{{')
      ? encodeCorpusFile(renderCorpusFile(f.path, template), f.encoding)
      : f.encoding === undefined
        ? committed
        : encodeCorpusFile(template, f.encoding);
    mkdirSync(dirname(join(root, f.path)), { recursive: true });
    writeFileSync(join(root, f.path), bytes);
    judged.push({ ...f, refused: false, bytes });
  }
  for (const j of judged) {
    try {
      // absolute paths: mint resolves what it is given against the working directory
      await mint({ root: store.root, paths: [join(root, j.path)], message: `corpus: ${j.path}` });
    } catch (err) {
      if (!(err instanceof GenjobError) || err.code !== 'EGJ_SECRET') throw err;
      j.refused = true;
      j.by = ruleOf(err.message);
    }
  }
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the secret-scan corpus, through mint', () => {
  it('holds at least 150 files: 40 credential kinds, 30 benign look-alikes', () => {
    const secretKinds = new Set(files.filter((f) => f.secret).map((f) => f.kind));
    expect(files.length).toBeGreaterThanOrEqual(150);
    expect(secretKinds.size).toBeGreaterThanOrEqual(40);
    expect(files.filter((f) => !f.secret).length).toBeGreaterThanOrEqual(30);
    expect(new Set(files.map((f) => f.path)).size).toBe(files.length);
  });

  it('misses no secret outside the documented formatless kinds, and no listed one', () => {
    const misses = judged.filter((j) => j.secret && !j.refused);
    expect(misses.filter((m) => !KNOWN_MISSES.has(m.kind)).map((m) => `${m.path} (${m.kind})`)).toEqual([]);
    expect(judged.filter((j) => j.listed === 'missed' && !j.refused).map((j) => j.path)).toEqual([]);
    const { recall } = totals();
    expect(recall).toBeGreaterThanOrEqual(0.97);
  });

  it('raises at most one false alarm, and none on a listed one', () => {
    const alarms = judged.filter((j) => !j.secret && j.refused);
    expect(alarms.filter((a) => a.listed === 'false-alarm').map((a) => `${a.path}: ${a.by}`)).toEqual([]);
    expect(alarms.length, alarms.map((a) => `${a.path}: ${a.by}`).join('; ')).toBeLessThanOrEqual(1);
  });

  it('loses nothing to the prefilter: secretlint alone, every rule on, reports no file the scan passed', async () => {
    const all = new Set(PRESET_RULE_IDS);
    const lost: string[] = [];
    for (const j of judged) {
      const scanner = createSecretScanner({ path: j.path, size: j.bytes.length });
      for (let at = 0; at < j.bytes.length; at += 64 * 1024)
        scanner.push(j.bytes.subarray(at, at + 64 * 1024));
      const scanned = new Set((await scanner.end()).findings.map((f) => f.rule));
      const text = j.encoding === undefined || j.encoding === 'utf8' ? j.bytes.toString('utf8') : undefined;
      if (text === undefined || text.includes('\0')) continue;
      for (const f of await lintWithPreset(text, j.path, all))
        if (!scanned.has(f.rule)) lost.push(`${j.path}: ${f.rule}`);
    }
    expect(lost).toEqual([]);
  });

  it('is the table docs/trust.md shows (UPDATE_SECRETS_TABLE=1 rewrites it)', () => {
    const table = corpusTable();
    const doc = readFileSync(TRUST_MD, 'utf8');
    const [start, end] = [doc.indexOf(TABLE_START), doc.indexOf(TABLE_END)];
    expect(start).toBeGreaterThan(0);
    const updated = `${doc.slice(0, start + TABLE_START.length)}\n${table}${doc.slice(end)}`;
    if (process.env['UPDATE_SECRETS_TABLE'] === '1') writeFileSync(TRUST_MD, updated);
    else expect(doc).toBe(updated);
  });
});

describe('the secret-scan corpus, through the built CLI', () => {
  // every listed case, one file of each stored encoding and of a few kinds each part of the scan decides
  const SAMPLE_KINDS = new Set([
    'env-file', // a path rule
    'github-token', // secretlint
    'stripe-live-key',
    'private-key-ed25519', // genjob's own rule, where secretlint's skips the key
    'azure-sas-token',
    'commit-hash', // benign
    'docs-placeholder',
  ]);
  const sample = files.filter(
    (f, i) =>
      f.listed !== undefined ||
      (SAMPLE_KINDS.has(f.kind) && files.findIndex((g) => g.kind === f.kind) === i) ||
      (f.encoding !== undefined && files.findIndex((g) => g.encoding === f.encoding) === i),
  );

  it.each(sample.map((f) => ({ path: f.path })))(
    '$path: the CLI refuses it exactly when mint did in process, naming the same rule',
    async ({ path }) => {
      const r = await execa(process.execPath, [BIN, 'mint', '--root', root, '-m', `cli: ${path}`, path], {
        cwd: root,
        reject: false,
      });
      const mine = judged.find((j) => j.path === path)!;
      if (mine.refused) {
        expect(r.exitCode).toBe(2);
        expect(r.stderr).toMatch(
          new RegExp(`^genjob: EGJ_SECRET: ${path.replace(/[.]/g, '\\.')}(:\\d+)?: looks like a secret`, 'm'),
        );
        expect(ruleOf(r.stderr)).toBe(mine.by);
      } else expect(r.exitCode, r.stderr).toBe(0);
      expect(mine.refused || KNOWN_MISSES.has(mine.kind)).toBe(mine.secret);
    },
    30_000,
  );
});

function totals() {
  const tp = judged.filter((j) => j.secret && j.refused).length;
  const fn = judged.filter((j) => j.secret && !j.refused).length;
  const fp = judged.filter((j) => !j.secret && j.refused).length;
  return { tp, fn, fp, precision: tp / (tp + fp), recall: tp / (tp + fn) };
}

const TABLE_START = '<!-- secrets-corpus-table: made by test/secrets/corpus.test.ts -->';
const TABLE_END = '<!-- /secrets-corpus-table -->';
const pct = (x: number) => `${(Math.round(x * 1000) / 10).toFixed(1)}%`;

/** The per-kind table, from this run. */
function corpusTable(): string {
  const { tp, fn, fp, precision, recall } = totals();
  const benign = judged.filter((j) => !j.secret);
  const lines = [
    '| corpus | files | secret | benign | kinds | false alarms | misses | precision | recall |',
    '|---|---|---|---|---|---|---|---|---|',
    `| \`fixtures/secrets-corpus/\` | ${judged.length} | ${tp + fn} | ${benign.length} | ${new Set(judged.filter((j) => j.secret).map((j) => j.kind)).size} | ${fp} | ${fn} | ${pct(precision)} | ${pct(recall)} |`,
    '',
    "Per kind (a kind's precision is 100% unless a benign file was refused as it):",
    '',
    '| kind | files | refused | recall | refused by |',
    '|---|---|---|---|---|',
  ];
  const kinds = [...new Set(judged.filter((j) => j.secret).map((j) => j.kind))].sort();
  for (const k of kinds) {
    const of = judged.filter((j) => j.secret && j.kind === k);
    const caught = of.filter((j) => j.refused);
    const by = [...new Set(caught.map((j) => `\`${j.by}\``))].sort().join(', ');
    lines.push(
      `| ${k} | ${of.length} | ${caught.length} | ${pct(caught.length / of.length)} | ${by || '—'} |`,
    );
  }
  lines.push('', '| benign look-alike | files | refused (false alarms) |', '|---|---|---|');
  for (const k of [...new Set(benign.map((j) => j.kind))].sort()) {
    const of = benign.filter((j) => j.kind === k);
    lines.push(`| ${k} | ${of.length} | ${of.filter((j) => j.refused).length} |`);
  }
  return `${lines.join('\n')}\n`;
}
