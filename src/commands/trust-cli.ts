// CLI glue for `genjob trust add|list|remove`: find the repository root, then call trust.ts.

import type { CommandResult, CommonOptions } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { runTrustAdd, runTrustList, runTrustRemove } from './trust.js';

export const trustAdd = (
  o: CommonOptions & { for?: string[] },
  name: string,
  key: string,
): Promise<CommandResult> => runTrustAdd(findRoot(o.root), name, key, o.for);
export const trustList = (o: CommonOptions): Promise<CommandResult> => runTrustList(findRoot(o.root));
export const trustRemove = (o: CommonOptions, name: string): Promise<CommandResult> =>
  runTrustRemove(findRoot(o.root), name);
