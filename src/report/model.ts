// What a report shows, as plain data: gathered from .gen/ (gather.ts), rendered by pure functions
// (render-index.ts, render-job.ts). Every string in here may have been written by a generator, a host
// or a judge; only escape.ts turns it into markup. The model holds digests, never bytes, so its
// canonical JSON is a page's fingerprint: the same model always renders the same page.

import { STATE_DIRS } from '../store/layout.js';

export type CheckVerdict = 'pass' | 'fail' | 'flaky' | 'uncertain' | 'error' | 'missing';
export const CHECK_VERDICTS: readonly CheckVerdict[] = [
  'pass',
  'fail',
  'flaky',
  'uncertain',
  'error',
  'missing',
];

/** One checker's standing on one job, as the checks plane reports it. */
export interface ReportCheck {
  checker: string;
  verdict: CheckVerdict;
  /** False when the record no longer matches today's receipt, checker binding or base tree. */
  current: boolean;
  stale?: 'receipt' | 'binding' | 'base';
  /** One mark per attempt, oldest first: ✓ pass, ✗ fail (✗✓ is flaky). */
  marks: string;
  recordDigest: string | null;
  attempts: Array<{ exit: number | null; ms: number | null; log: string | null }>;
  /** A judge's samples; empty for a command checker. */
  judge: Array<{ pass: boolean | null; score: number | null; reason: string }>;
  /** A judge's model and the tokens all its records of this job spent (the spend ledger's mode `judge`). */
  spent: { model: string; prompt: number; completion: number; requests: number } | null;
}

export interface ReportReceipt {
  /** sha256 of the receipt file's bytes. */
  digest: string;
  status: string;
  epoch: number;
  reason: string | null;
  generator: string;
  generatorVersion: string | null;
  workerId: string;
  host: string;
  /** bwrap, bwrap+network, none, builtin, or unrecorded (a receipt from before sandboxes were recorded). */
  sandbox: string;
  cached: boolean;
  batch: string | null;
  plane: string;
  startedAt: string | null;
  finishedAt: string | null;
  generateMs: number | null;
  usage: { prompt: number; completion: number; requests: number } | null;
  /** The trusted key that verified the signature, `unsigned`, or why the signature is not trusted. */
  signer: string;
  signerTrusted: boolean;
  jobDigest: string | null;
}

/** One output of a receipt and what its diff is drawn from; bytes are used only when they hash as named. */
export interface ReportFile {
  path: string;
  sha256: string;
  /** `ok` (bytes found, hashing to sha256), `missing`, `drift` (they hash otherwise), `large`, `bad-path`. */
  bytes: 'ok' | 'missing' | 'drift' | 'large' | 'bad-path';
  /** The job's digest of this path before generation; null when the job creates the file. */
  input: string | null;
  /** Whether bytes hashing to `input` are still at hand (objects/ or the working tree). */
  inputFound: boolean;
  /**
   * How many hidden characters (bidi controls, invisible code points, controls: core/marked-chars.ts) the lines
   * the output adds to its input hold, counted as its page counts them; 0 when its bytes are not at hand.
   */
  hiddenAdded: number;
}

export type ShadowVerdict = 'identical' | 'differs' | 'aborted' | 'rejected' | 'missing';

export interface ReportShadow {
  plane: string;
  verdict: ShadowVerdict;
  /** sha256 of the shadow receipt's bytes; null when the plane has no answer for the key. */
  digest: string | null;
  status: string | null;
  generator: string | null;
  reason: string | null;
  tokens: number;
  files: Array<{ path: string; live: string | null; shadow: string | null }>;
}

/** A job's state directory, in the order of the flow, and `unknown` for a run's key without a job file. */
export const STATE_ORDER = [...STATE_DIRS, 'unknown'] as const;
export type ReportState = (typeof STATE_ORDER)[number];

export interface ReportJob {
  key: string;
  state: ReportState;
  instruction: string;
  inputs: Array<{ path: string; sha256: string | null }>;
  /** Why the job is in dead/, from its why.json. */
  dead: { code: string; reason: string } | null;
  epoch: number;
  /** Where the newest attempt went (`local`, `user@host:port`, `launch:…`), else the receipt's host. */
  host: string | null;
  receipt: ReportReceipt | null;
  /** The receipt file exists but cannot be read, or does not decode under the trust policy. */
  receiptProblem: string | null;
  files: ReportFile[];
  checks: ReportCheck[];
  shadows: ReportShadow[];
}

/** A run's newest gate record as it was closed (a gate that never closed has none). */
export interface ReportGate {
  met: boolean;
  passed: number;
  total: number;
  /** The rate as the run plane words it (`57/60 = 95.0%`). */
  rate: string;
  /** The policy as `genjob gate` words it (`min 95.0%, checks tests`). */
  policy: string;
  /** The record's file, and the sha256 of its bytes: what to cite. */
  file: string;
  recordDigest: string;
  /** A DSSE envelope over the record. */
  signed: boolean;
  /** The evidence it closed on is no longer what is there (`apply --gated` would refuse it). */
  stale: boolean;
  /** The user's own `genjob gate` decided it (its seal holds); `apply --gated` refuses any other. */
  sealed: boolean;
}

export interface ReportRun {
  name: string;
  keys: string[];
  /** The user's own mint sealed the run's manifest; gate and apply refuse any other run. */
  sealed: boolean;
  gate: ReportGate | null;
}

export interface SpendRow {
  generator: string;
  mode: string;
  prompt: number;
  completion: number;
  requests: number;
  /** In the currency of GENJOB_PRICE_IN / GENJOB_PRICE_OUT; null when prices are not set. */
  cost: number | null;
}

export interface ReportModel {
  /** `run NAME`, `N jobs` or `all jobs`. */
  title: string;
  run: ReportRun | null;
  checkers: string[];
  planes: string[];
  jobs: ReportJob[];
  spend: SpendRow[];
  /** Job files left out because their names are not keys (`queue/EVIL.json`): no job genjob minted. */
  skipped: string[];
}
