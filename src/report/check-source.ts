// Where the report's check verdicts come from: the checkers declared for the repository and, per job,
// each checker's standing (verdict, attempts, staleness, logs, a judge's reasons). The report reads
// check records only through this adapter, so it shows exactly what `genjob check` decides.
// This build has no checks plane yet: no checkers, no verdicts.
import type { ReportCheck } from './model.js';

export interface CheckSource {
  /** The declared checkers, in the order their columns appear. */
  checkers: readonly string[];
  /**
   * What every job's verdicts also stand on (checker bindings, HEAD's tree, the keys pinned for checks):
   * a report cache keeps a job's checks only under the same context.
   */
  context: string;
  /** The files and directories a job's verdicts are read from, besides its receipt (stamped by the cache). */
  filesOf(key: string): string[];
  checksOf(key: string): Promise<ReportCheck[]>;
}

export const NO_CHECKS: CheckSource = {
  checkers: [],
  context: '',
  filesOf: () => [],
  checksOf: async () => [],
};

export async function checkSource(_root: string): Promise<CheckSource> {
  return NO_CHECKS;
}
