// Where a report's run comes from: a sealed run's intended keys and its gate (open or closed, the
// fraction, the policy, the gate record's digest), read through this adapter only.
// This build has no runs yet: `--run NAME` names a run that cannot exist.
import { UsageError } from '../core/errors.js';
import type { ReportRun } from './model.js';

export async function readRun(root: string, name: string): Promise<ReportRun> {
  throw new UsageError('EGJ_USAGE', `--run ${name}: no run of that name under ${root}/.gen/runs/`);
}
