import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bindingsAt } from '../../src/check/binding.js';
import type { CheckState } from '../../src/check/check-state.js';
import { loadCheckers } from '../../src/check/checker.js';
import { buildStatement, CHECK_SCHEMA, type CheckFacts, encodeRecord } from '../../src/check/record.js';
import { writeRecord } from '../../src/check/record-store.js';
import { CheckGateError, refusalOf, requireChecks } from '../../src/check/require-check.js';
import { type Verdict, verdictOf } from '../../src/check/verdict.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { Store } from '../../src/store/store.js';
import { commitAll } from '../helpers/commit-all.js';
import { tempDir } from '../helpers/temp-store.js';

const D = 'd'.repeat(64);
const state = (over: Partial<CheckState>): CheckState => ({
  checker: 'tests',
  verdict: 'pass',
  current: true,
  recordDigest: D,
  marks: '✓',
  ...over,
});

describe('refusalOf', () => {
  const cases: Array<{
    name: string;
    s: CheckState;
    allowFlaky?: boolean;
    code: string | null;
    message?: RegExp;
  }> = [
    { name: 'a current pass lets the job through', s: state({}), code: null },
    {
      name: 'no record',
      s: { checker: 'tests', verdict: 'missing', current: false },
      code: 'EGJ_CHECK_MISSING',
      message: /^no check record for tests; run genjob check KEY --checker tests$/,
    },
    {
      name: 'no record, files ignored',
      s: { checker: 'tests', verdict: 'missing', current: false, ignored: [{ file: 'f', why: 'forged' }] },
      code: 'EGJ_CHECK_MISSING',
      message: /^no check record for tests \(1 record file\(s\) ignored: forged\); run genjob check/,
    },
    {
      name: 'a stale pass (receipt)',
      s: state({ current: false, stale: 'receipt' }),
      code: 'EGJ_CHECK_STALE',
      message:
        /^tests: record d{12} is stale \(the job has another receipt now\); run genjob check KEY --checker tests$/,
    },
    {
      name: 'a stale pass (binding)',
      s: state({ current: false, stale: 'binding' }),
      code: 'EGJ_CHECK_STALE',
      message: /the checker changed \(its definition, a pinned file, the rubric or the model\)/,
    },
    {
      name: 'a stale pass (base)',
      s: state({ current: false, stale: 'base' }),
      code: 'EGJ_CHECK_STALE',
      message: /\(HEAD moved\)/,
    },
    {
      name: 'a record not current for no stated reason',
      s: state({ current: false }),
      code: 'EGJ_CHECK_STALE',
      message: /is stale \(not current\); run/,
    },
    {
      name: 'a stale fail is stale first',
      s: state({ verdict: 'fail', current: false, stale: 'base' }),
      code: 'EGJ_CHECK_STALE',
    },
    {
      name: 'a current fail',
      s: state({ verdict: 'fail', marks: '✗' }),
      code: 'EGJ_CHECK_FAILED',
      message: /^tests: record d{12} is fail \(✗\)$/,
    },
    {
      name: 'a current uncertain judge',
      s: state({ verdict: 'uncertain', marks: '?' }),
      code: 'EGJ_CHECK_FAILED',
      message: /is uncertain/,
    },
    {
      name: 'flaky is refused',
      s: state({ verdict: 'flaky', marks: '✗✓' }),
      code: 'EGJ_CHECK_FLAKY',
      message: /^tests: record d{12} is flaky \(✗✓: its attempts disagree\); --allow-flaky accepts it$/,
    },
    { name: 'flaky with --allow-flaky passes', s: state({ verdict: 'flaky' }), allowFlaky: true, code: null },
    {
      name: '--allow-flaky does not pass a fail',
      s: state({ verdict: 'fail' }),
      allowFlaky: true,
      code: 'EGJ_CHECK_FAILED',
    },
    {
      name: 'an error is no verdict',
      s: state({ verdict: 'error', marks: '!' }),
      code: 'EGJ_CHECK_MISSING',
      message: /^tests: record d{12} is an error \(the checker could not run: no verdict\); run genjob check/,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const r = refusalOf(c.s, c.allowFlaky === true);
      expect(r?.code ?? null).toBe(c.code);
      if (c.message) expect(r?.message).toMatch(c.message);
    });
});

describe('requireChecks (a real repository)', () => {
  async function repo() {
    const root = tempDir('genjob-reqcheck-');
    writeFileSync(
      join(root, 'genjob.config.json'),
      JSON.stringify({ checkers: { tests: { run: 'true' }, lint: { run: 'true' } } }),
    );
    const tree = await commitAll(root);
    const store = new Store(root).ensure();
    const key = 'k'.repeat(64).replace(/k/g, 'a');
    const receipt = Buffer.from('{"receipt":1}');
    mkdirSync(join(root, '.gen', 'receipts'), { recursive: true });
    writeFileSync(store.layout.receipt(key), receipt);
    const bindings = await bindingsAt(root, tree, loadCheckers(root));
    const record = (checker: string, verdicts: Verdict[], over: Partial<CheckFacts> = {}) => {
      const outcomes = verdicts.map((v) =>
        v === 'flaky' ? 'pass' : v,
      ) as CheckFacts['attempts'][number]['outcome'][];
      const facts: CheckFacts = {
        schema: CHECK_SCHEMA,
        key,
        checker,
        kind: 'command',
        receipt_sha256: sha256Hex(receipt),
        binding_sha256: bindings.get(checker)!,
        base_tree: tree,
        result_tree: tree,
        verdict: verdictOf(outcomes),
        marks: '',
        sequence: 1,
        previous: null,
        attempts: outcomes.map((outcome, i) => ({
          n: i + 1,
          outcome,
          exit_code: 0,
          signal: null,
          timed_out: false,
          ms: 1,
          log_sha256: null,
          log_bytes: 0,
          why: null,
          started_at: 't',
        })),
        setup: null,
        judge: null,
        sandbox: { kind: 'bwrap', network: false },
        started_at: 't',
        finished_at: 't',
        machine: 'm',
        ...over,
      };
      return writeRecord(store, key, checker, encodeRecord(buildStatement(facts, [])));
    };
    return { root, key, record };
  }

  it('returns each named checker’s passing record, in the order named', async () => {
    const { root, key, record } = await repo();
    const t = record('tests', ['pass']);
    const l = record('lint', ['fail', 'pass']);
    await expect(requireChecks(root, key, ['lint', 'tests'], true)).resolves.toEqual([
      { name: 'lint', digest: l },
      { name: 'tests', digest: t },
    ]);
  });

  it('throws the refusal as exit 3, naming the job', async () => {
    const { root, key, record } = await repo();
    record('tests', ['pass']);
    const err = await requireChecks(root, key, ['tests', 'lint'], false).catch((e) => e);
    expect(err).toBeInstanceOf(CheckGateError);
    expect(err).toMatchObject({ code: 'EGJ_CHECK_MISSING', exitCode: 3 });
    expect(err.message).toMatch(/^job aaaaaaaaaaaa: no check record for lint;/);
  });

  it('a record made for another base tree is stale', async () => {
    const { root, key, record } = await repo();
    record('tests', ['pass'], { base_tree: 'f'.repeat(40) });
    await expect(requireChecks(root, key, ['tests'], false)).rejects.toMatchObject({
      code: 'EGJ_CHECK_STALE',
    });
  });
});
