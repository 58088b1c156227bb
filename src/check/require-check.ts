// `apply --require-check NAME`: a job may be written only when each named checker has a current
// `pass` record for it (`flaky` too with --allow-flaky). The decision is a pure function of the
// checker's state (refusalOf); every refusal is exit 3 with its own code: no record (or only an
// `error`, which is no verdict) EGJ_CHECK_MISSING, a record that is no longer current
// EGJ_CHECK_STALE, attempts that disagree EGJ_CHECK_FLAKY, a fail or an uncertain judge EGJ_CHECK_FAILED.
import { RejectedError } from '../core/errors.js';
import { type CheckState, checkContext, stateOf } from './check-state.js';

export type CheckGateCode = 'EGJ_CHECK_MISSING' | 'EGJ_CHECK_FAILED' | 'EGJ_CHECK_STALE' | 'EGJ_CHECK_FLAKY';

export interface Refusal {
  code: CheckGateCode;
  message: string;
}

const STALE_WHY = {
  receipt: 'the job has another receipt now',
  binding: 'the checker changed (its definition, a pinned file, the rubric or the model)',
  base: 'HEAD moved',
} as const;

/** Why `state` does not let the job through, or null when it does. Pure. */
export function refusalOf(state: CheckState, allowFlaky: boolean): Refusal | null {
  const name = state.checker;
  const rerun = `run genjob check KEY --checker ${name}`;
  if (state.verdict === 'missing') {
    const left = state.ignored?.length
      ? ` (${state.ignored.length} record file(s) ignored: ${state.ignored[0]!.why})`
      : '';
    return { code: 'EGJ_CHECK_MISSING', message: `no check record for ${name}${left}; ${rerun}` };
  }
  const record = `record ${state.recordDigest?.slice(0, 12)}`;
  if (!state.current)
    return {
      code: 'EGJ_CHECK_STALE',
      message: `${name}: ${record} is stale (${state.stale ? STALE_WHY[state.stale] : 'not current'}); ${rerun}`,
    };
  switch (state.verdict) {
    case 'pass':
      return null;
    case 'flaky':
      return allowFlaky
        ? null
        : {
            code: 'EGJ_CHECK_FLAKY',
            message: `${name}: ${record} is flaky (${state.marks}: its attempts disagree); --allow-flaky accepts it`,
          };
    case 'error':
      return {
        code: 'EGJ_CHECK_MISSING',
        message: `${name}: ${record} is an error (the checker could not run: no verdict); ${rerun}`,
      };
    default:
      return { code: 'EGJ_CHECK_FAILED', message: `${name}: ${record} is ${state.verdict} (${state.marks})` };
  }
}

/** A job the check gate refused (exit 3). */
export class CheckGateError extends RejectedError {
  constructor(code: CheckGateCode, key: string, message: string) {
    super(code, `job ${key.slice(0, 12)}: ${message}`);
  }
}

/**
 * Hold `key` to the gate for `names` as things are now (HEAD, the working tree's checkers, the
 * receipt on disk). Returns each checker's passing record digest, for the commit's Genjob-Check trailers.
 */
export async function requireChecks(
  root: string,
  key: string,
  names: readonly string[],
  allowFlaky: boolean,
): Promise<Array<{ name: string; digest: string }>> {
  const ctx = await checkContext(root, names);
  return names.map((name) => {
    const state = stateOf(ctx, key, name);
    const refusal = refusalOf(state, allowFlaky);
    if (refusal) throw new CheckGateError(refusal.code, key, refusal.message);
    return { name, digest: state.recordDigest! };
  });
}
