// genjob work --shadow NAME --generator CMD [KEY… | --all | --run RUN]: run existing jobs again in shadow plane
// NAME (read only for the live plane: nothing is claimed, leased, moved or requeued) and keep the
// answers under .gen/shadow/NAME/. Exit 0 when every job was run or skipped with a reason; 3 when a
// host answer was refused or in doubt (the live plane is untouched either way).
import type { CommandResult } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { lineRelay, notice } from '../cli/stderr-lines.js';
import { UsageError } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import { decodeReceiptWithPolicy } from '../core/receipt-decode.js';
import { userSecret } from '../remote/cache-mac.js';
import { requireBwrap } from '../sandbox/bwrap-probe.js';
import { sandboxUser } from '../sandbox/sandbox-user.js';
import { serveArgsOf } from '../sandbox/serve-policy.js';
import { runShadow, type ShadowOutcome } from '../shadow/shadow-run.js';
import { checkShadowName } from '../shadow/shadow-store.js';
import { FLOW, findJob, keysIn, resolveKey } from '../store/job-states.js';
import { loadTrustPolicy } from '../trust/trust-file.js';
import { newWorker } from '../worker/work-loop.js';
import { destinationsOf, servesLocally, type WorkCliOptions } from './work.js';

export interface ShadowWorkOptions extends WorkCliOptions {
  shadow: string;
  keys?: string[];
  all?: boolean;
}

function describe(o: ShadowOutcome): string {
  const k = o.key.slice(0, 12);
  return o.outcome === 'stored'
    ? `${k} shadow ${o.status}${o.cached ? ' (from the host cache)' : ''} (shadow epoch ${o.epoch})`
    : `${k} ${o.outcome}: ${o.reason}`;
}

export async function shadowWork(o: ShadowWorkOptions): Promise<CommandResult> {
  const name = checkShadowName(o.shadow);
  if (o.once || o.drain || o.watch)
    throw new UsageError(
      'EGJ_USAGE',
      '--shadow runs the jobs it is given (KEY… or --all); --once, --drain and --watch are for live work',
    );
  if (o.batch || o.batchPoll)
    throw new UsageError(
      'EGJ_USAGE',
      '--shadow runs its jobs through a serve session; --batch and --batch-poll are for live work',
    );
  const keys = o.keys ?? [];
  // exactly one way of choosing: --run beside --all was dropped, and every job of the store was sent
  if ([keys.length > 0, o.all === true, o.run !== undefined].filter(Boolean).length !== 1)
    throw new UsageError(
      'EGJ_USAGE',
      'with --shadow, name the jobs to run again (KEY…), or pass --all or --run NAME: exactly one of them',
    );
  const store = openStore(o);
  // as with --all: the run's jobs in the flow, not those a worker holds now
  const notRunning = (key: string) => {
    const state = findJob(store, key)?.state;
    return state !== undefined && state !== 'running';
  };
  const selected = o.all
    ? [...new Set(FLOW.filter((s) => s !== 'running').flatMap((s) => keysIn(store, s)))].sort()
    : o.run !== undefined
      ? (await import('../run/run-keys.js')).runKeys(store, o.run).current.filter(notRunning)
      : [...new Set(keys.map((k) => resolveKey(store, k)))];
  // every transport option of live work holds here too (the same code builds the destinations);
  // the jobs run one at a time, so a shadow run takes one destination
  const destinations = await destinationsOf(o, store.layout.gen);
  if (destinations.length > 1)
    throw new UsageError(
      'EGJ_USAGE',
      '--shadow runs its jobs on one destination: give one --host or one --launch (nothing was run)',
    );
  const { launcher } = destinations[0]!;
  if (servesLocally(o) && o.sandbox !== false && o.generator && !o.generator.startsWith('builtin:'))
    await requireBwrap('genjob work --shadow', sandboxUser(o.sandboxUser));
  const policy = loadTrustPolicy(store.root);
  try {
    const outcomes = await runShadow(
      {
        store,
        name,
        launcher,
        serveArgs: serveArgsOf(o),
        generator: o.generator ?? null,
        timeoutMs: Math.round(o.timeout * 1000),
        workerId: `${newWorker().id}:shadow`,
        decodeReceipt: (bytes, file) => decodeReceiptWithPolicy(bytes, file, policy).receipt,
        userSecret: await userSecret(),
        ...(o.quiet ? {} : { relayStderr: lineRelay }),
        onOutcome: (x) => {
          if (!o.quiet) notice(`[shadow:${name}] ${describe(x)}`);
        },
      },
      selected,
    );
    const bad = outcomes.filter((x) => x.outcome === 'refused' || x.outcome === 'in-doubt');
    const stored = outcomes.filter((x) => x.outcome === 'stored').length;
    const lines = [
      `shadow:${name}: ${stored} of ${outcomes.length} job(s) stored under .gen/shadow/${name}/`,
    ];
    if (bad.length) lines.push(`${bad.length} job(s) without a usable answer (run them again)`);
    const exitCode = bad.length ? EXIT.REJECTED : EXIT.OK;
    return {
      exitCode,
      human: lines.join('\n'),
      json: { ok: exitCode === EXIT.OK, plane: `shadow:${name}`, outcomes },
    };
  } finally {
    await launcher.close();
  }
}
