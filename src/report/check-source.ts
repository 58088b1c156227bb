// Where the report's check verdicts come from: the checkers declared for the repository (and any that
// left records for a job, as `genjob show` lists them) and, per job, each checker's state as
// check-state.ts decides it for status, show and apply --require-check: the record that speaks, its
// verdict, attempts and staleness. The report reads check records only through this adapter, so a page
// can never say other than what `genjob check` and the apply gate decide. The context (HEAD's tree, which
// runs git; the bindings) is made only when a job has a checker: a report of unchecked jobs needs none,
// and does not even load the modules that decide a state (they are imported on first use), nor, in a
// repository without a config file, the modules that read one.

import type { CheckContext } from '../check/check-state.js';
import { declaredCheckers } from '../check/declared-checkers.js';
import { checksDir, recordedCheckers } from '../check/record-paths.js';
import { canonicalJson } from '../core/canonical-json.js';
import { sha256Hex } from '../core/sha256.js';
import { Store } from '../store/store.js';
import type { ReportCheck } from './model.js';

export interface CheckSource {
  /** The declared checkers, in the order their columns appear. */
  checkers: readonly string[];
  /**
   * What every job's verdicts also stand on (the declared checkers, their bindings, HEAD's tree, the keys
   * pinned for checks): a report cache keeps a job's checks only under the same context. A job with no
   * checker, declared or recorded, has no checks whatever the context: it is not asked for then.
   */
  context(): Promise<string>;
  /** The files and directories a job's verdicts are read from, besides its receipt (stamped by the cache). */
  filesOf(key: string): string[];
  checksOf(key: string): Promise<ReportCheck[]>;
}

export const NO_CHECKS: CheckSource = {
  checkers: [],
  context: async () => '',
  filesOf: () => [],
  checksOf: async () => [],
};

/** The modules that decide a check's state, loaded once a job has a checker. */
const statePlane = () =>
  Promise.all([import('../check/check-state.js'), import('../check/record-store.js')]).then(
    ([state, records]) => ({ ...state, ...records }),
  );
type StatePlane = Awaited<ReturnType<typeof statePlane>>;

/** One checker's state for `key`, in the report's words. */
function reportCheck(
  { stateOf, listRecords }: StatePlane,
  ctx: CheckContext,
  key: string,
  checker: string,
): ReportCheck {
  const s = stateOf(ctx, key, checker);
  const facts = s.record?.facts;
  let spent: ReportCheck['spent'] = null;
  if (facts?.judge) {
    // what every record of this judge for this job spent, as status counts a judge's tokens
    spent = { model: facts.judge.model, prompt: 0, completion: 0, requests: 0 };
    for (const r of listRecords(ctx.store, key, checker, ctx.trusted).records) {
      const u = r.facts.judge?.spent;
      if (!u) continue;
      spent.prompt += u.prompt_tokens;
      spent.completion += u.completion_tokens;
      spent.requests += u.requests;
    }
  }
  return {
    checker,
    verdict: s.verdict,
    current: s.current,
    ...(s.stale ? { stale: s.stale } : {}),
    marks: s.marks ?? '',
    recordDigest: s.recordDigest ?? null,
    attempts: (facts?.attempts ?? []).map((a) => ({ exit: a.exit_code, ms: a.ms, log: a.log_sha256 })),
    judge: (facts?.attempts ?? []).flatMap((a) =>
      (a.samples ?? []).map((x) => ({
        pass: x.vote === 'pass' ? true : x.vote === 'fail' ? false : null,
        score: x.score,
        reason: x.reason,
      })),
    ),
    spent,
  };
}

export async function checkSource(root: string): Promise<CheckSource> {
  const store = new Store(root);
  const checkers = await declaredCheckers(store);
  let plane: Promise<StatePlane> | undefined;
  const planeOf = () => {
    plane ??= statePlane();
    return plane;
  };
  let made: Promise<CheckContext> | undefined;
  const ctx = () => {
    made ??= planeOf().then((p) => p.checkContext(root));
    return made;
  };
  let context: Promise<string> | undefined;
  const namesOf = (key: string) => [...new Set([...checkers, ...recordedCheckers(store, key)])];
  return {
    checkers,
    context: () => {
      context ??= ctx().then((c) =>
        sha256Hex(
          canonicalJson({
            checkers,
            bindings: [...c.bindings].sort(),
            base: c.baseTree,
            keys: c.trusted.map((k) => [
              k.name,
              k.publicKey.export({ type: 'spki', format: 'der' }).toString('hex'),
            ]),
          }),
        ),
      );
      return context;
    },
    // a record is added by creating a file in its checker's directory, a checker by creating that directory
    filesOf: (key) => [
      checksDir(store, key),
      ...recordedCheckers(store, key).map((c) => checksDir(store, key, c)),
    ],
    checksOf: async (key) => {
      const names = namesOf(key);
      if (names.length === 0) return [];
      const [p, c] = await Promise.all([planeOf(), ctx()]);
      return names.map((name) => reportCheck(p, c, key, name));
    },
  };
}
