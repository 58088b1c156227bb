// A run's files written as the run plane writes them (docs/runs.md), for the report's tests: the sealed
// manifest `.gen/runs/<id>.json` and gate records `.gen/runs/<id>.gates/<n>.json` whose evidence is taken
// from the store as it is now (each job's receipt digest and its tests record, via the checks plane).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkContext, stateOf } from '../../src/check/check-state.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { sha256Hex } from '../../src/core/sha256.js';
import type { Store } from '../../src/store/store.js';

const runs = (store: Store) => store.layout.dir('runs');

/** `.gen/runs/<id>.json` as `genjob mint --each … --run` seals it. */
export function sealRun(store: Store, id: string, keys: string[]): void {
  mkdirSync(runs(store), { recursive: true });
  const [name, revision] = id.split('@');
  writeFileSync(
    join(runs(store), `${id}.json`),
    canonicalBytes({
      schema: 'genjob/run@1',
      name,
      revision: Number(revision ?? 1),
      template: { instruction: 'Change {path}', also: [], reads: [], each: { glob: 'src/*.txt' } },
      template_digest: 'a'.repeat(64),
      expansion: keys.map((key, i) => ({ path: `src/m${i}.txt`, key })),
      keys,
      created_at: '2026-12-01T10:00:00.000Z',
    }),
  );
}

/** The gate record `genjob gate` would close now over `keys` (every job passing but `failing`). */
export async function gateRecord(
  root: string,
  store: Store,
  id: string,
  keys: string[],
  failing: string[] = [],
) {
  const ctx = await checkContext(root);
  const evidence = keys.map((key) => {
    const s = stateOf(ctx, key, 'tests');
    return {
      checks: [{ checker: 'tests', current: s.current, record: s.recordDigest ?? null, verdict: s.verdict }],
      current: key,
      dead: null,
      key,
      receipt: sha256Hex(readFileSync(store.layout.receipt(key))),
    };
  });
  const passed = keys.length - failing.length;
  return {
    schema: 'genjob/gate@1',
    run: id.split('@')[0],
    revision: Number(id.split('@')[1] ?? 1),
    manifest_sha256: sha256Hex(readFileSync(join(runs(store), `${id}.json`))),
    policy: {
      require_checks: ['tests'],
      min_pass: { num: 95, den: 100 },
      max_fail: null,
      allow_flaky: false,
    },
    verdict: passed * 100 >= keys.length * 95 ? 'met' : 'not-met',
    passed,
    total: keys.length,
    rate: `${passed}/${keys.length} = ${Math.floor((passed * 1000) / keys.length) / 10}%`,
    keys: evidence.map((e) => ({
      ...e,
      pass: !failing.includes(e.key),
      ...(failing.includes(e.key) ? { why: 'tests: fail' } : {}),
    })),
    evidence_sha256: sha256Hex(JSON.stringify(evidence)),
    closed_at: '2026-12-01T11:00:00.000Z',
  };
}

export function writeGate(store: Store, id: string, n: number, bytes: Buffer): void {
  const dir = join(runs(store), `${id}.gates`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${n}.json`), bytes);
}
