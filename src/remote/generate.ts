// One generation: run the generator in the workspace, diff the workspace against the bundle,
// and build the cache entry (result.json + files/<path>) in `built`. The outcome is ok,
// rejected (a change outside the contract) or aborted (the generator failed or timed out). A command
// the shell could not start (exit 126 or 127) is no outcome at all: GeneratorNotStartedError, never
// cached. The workspace is held open from before the generator starts (workspace-handle.ts): its diff
// and the move of its outputs never follow a name the generator could have changed.

import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { GenjobError, ioErrorAt } from '../core/errors.js';
import { EXIT } from '../core/exit-codes.js';
import type { Job } from '../core/job.js';
import { tellingLine } from '../core/telling-line.js';
import { SYSTEM_DIRS } from '../sandbox/bwrap-argv.js';
import { recordOf, type SandboxPolicy } from '../sandbox/policy.js';
import { realPath, within } from '../sandbox/real-path.js';
import { nodeFs } from '../store/fs-port.js';
import { BUILTIN_PREFIX } from './generator-check.js';
import { generatorFile } from './generator-file.js';
import type { CachedResult } from './result-cache.js';
import { runGenerator } from './run-generator.js';
import { diffWorkspace, type KnownFiles } from './workspace-diff.js';
import { HeldWorkspace, WorkspaceSwapError } from './workspace-handle.js';

/** The reason of a generation the worker cancelled; such a result is answered, never cached. */
export const CANCELLED_REASON = 'cancelled: the worker asked serve to stop the generator, which was killed';

export interface GenerateInput {
  job: Job;
  jobDigest: string;
  generator: string;
  ws: string;
  scratch: string;
  built: string;
  timeoutMs: number;
  /** How the host confines generator commands. */
  policy: SandboxPolicy;
  /** The extracted files with their stat, so the diff skips hashing those left untouched. */
  known?: KnownFiles;
  /** Stands in for the built-in generator's run, e.g. an answer already returned by a batch. */
  builtin?: () => Promise<BuiltinOutcome>;
  /** Aborted when the worker cancels the job: the generator command is killed (see serve-session.ts). */
  signal?: AbortSignal;
}

/** The shell could not start the generator command (exit 126 or 127): a configuration error, not a result. */
export class GeneratorNotStartedError extends GenjobError {
  readonly code = 'EGJ_GENERATOR_CONFIG';
  readonly exitCode = EXIT.USAGE;
}

/** What a built-in generator reports: the same fields for a live request and for a batch line. */
export interface BuiltinOutcome {
  status: CachedResult['status'];
  reason: string | null;
  usage: CachedResult['usage'];
  version: string | null;
}

export async function generate(g: GenerateInput): Promise<CachedResult> {
  // held from before the generator starts: what it does to the workspace's name changes nothing here
  const ws = HeldWorkspace.open(g.ws);
  try {
    return await generateIn(ws, g);
  } finally {
    ws.close();
  }
}

async function generateIn(ws: HeldWorkspace, g: GenerateInput): Promise<CachedResult> {
  const startedAt = new Date();
  const base = {
    job_digest: g.jobDigest,
    generator: { command: g.generator, version: null as string | null },
  };
  let status: CachedResult['status'];
  let reason: string | null = null;
  let usage: CachedResult['usage'];
  let ms: number;
  let sandbox: CachedResult['sandbox'];

  if (g.generator.startsWith(BUILTIN_PREFIX)) {
    const builtin = g.builtin ? await g.builtin() : await runBuiltin(g);
    ({ status, reason, usage } = builtin);
    base.generator.version = builtin.version;
    ms = Date.now() - startedAt.getTime();
    sandbox = { kind: 'builtin', network: true }; // no generator code runs; serve makes the call
  } else {
    sandbox = recordOf(g.policy);
    const file = generatorFile(g.generator, process.cwd());
    // the generator's own file, when the command names one the sandbox does not show anyway (outside
    // the system directories, or in the worker's repository masked in them)
    const shown = (real: string) =>
      SYSTEM_DIRS.some((d) => within(real, d)) &&
      !(g.policy.masked ?? []).some((m) => within(real, realPath(m)));
    const own = file.kind === 'file' && file.executable && !shown(file.real) ? [file.path] : [];
    const run = await runGenerator({
      command: file.kind === 'file' ? file.command : g.generator,
      workspace: g.ws,
      timeoutMs: g.timeoutMs,
      usageFile: join(g.scratch, 'usage.json'),
      scratch: g.scratch,
      readOnly: [join(g.scratch, 'job.json'), join(g.scratch, 'extracted.fence'), ...own],
      policy: g.policy,
      ...(g.signal ? { signal: g.signal } : {}),
      env: {
        GENJOB_INSTRUCTION: g.job.instruction,
        GENJOB_KEY: g.job.key,
        GENJOB_JOB: join(g.scratch, 'job.json'),
      },
    });
    ms = run.ms;
    usage = run.usage;
    if (run.cancelled) {
      status = 'aborted';
      reason = CANCELLED_REASON;
    } else if (run.timedOut) {
      status = 'aborted';
      reason = `generator timed out after ${Math.round(g.timeoutMs / 1000)} s and was killed`;
    } else if (run.exitCode === 126 || run.exitCode === 127) {
      // the usual cause: a program the user's shell finds, installed where the sandbox shows nothing
      const confined =
        g.policy.kind === 'bwrap'
          ? "; the generator runs confined, where only the system directories (/usr, /bin, /opt, …) and the job's files are visible: a program installed elsewhere needs its directory exposed with --generator-bind DIR"
          : '';
      throw new GeneratorNotStartedError(
        `generator could not be started (exit ${run.exitCode}: ${tellingLine(run.stderrTail) || 'no message'}); nothing was cached: fix the command and run again${confined}`,
      );
    } else if (run.exitCode !== 0) {
      status = 'aborted';
      const how =
        run.startError !== null
          ? `could not be started (${run.startError})`
          : run.exitCode === null
            ? `was killed by ${run.signal}`
            : `exited with status ${run.exitCode}`;
      reason = `generator ${how}${failureText(run.stderrTail)}`;
    } else {
      status = 'ok';
    }
  }

  nodeFs.mkdirSync(join(g.built, 'files'), { recursive: true });
  let outputs: CachedResult['outputs'] = [];
  if (status === 'ok') {
    const diff = await diffWorkspace(ws, g.job, g.known);
    if (diff.ok) {
      try {
        for (const o of diff.outputs) {
          const to = join(g.built, 'files', o.path);
          nodeFs.mkdirSync(dirname(to), { recursive: true });
          await ws.moveOut(o.path, to);
        }
        outputs = diff.outputs;
      } catch (err) {
        if (!(err instanceof WorkspaceSwapError)) throw err;
        status = 'rejected';
        reason = err.message;
      }
    } else {
      status = 'rejected';
      reason = diff.reason;
    }
  }
  const result: CachedResult = {
    ...base,
    status,
    reason: reason === null ? null : reason.slice(0, 8000),
    outputs,
    sandbox,
    timings: { started_at: startedAt.toISOString(), finished_at: new Date().toISOString(), generate_ms: ms },
    ...(usage ? { usage } : {}),
  };
  const resultFile = join(g.built, 'result.json');
  await writeFile(resultFile, `${JSON.stringify(result)}\n`, { flush: true }).catch((err: unknown) => {
    throw ioErrorAt(resultFile, err); // its fsync's error names no file
  });
  return result;
}

async function runBuiltin(g: GenerateInput): Promise<BuiltinOutcome> {
  const { OPENAI_GENERATOR_NAME, runOpenAiGenerator } = await import('./generators/openai.js');
  if (g.generator !== OPENAI_GENERATOR_NAME) {
    return {
      status: 'aborted' as const,
      reason: `unknown built-in generator ${JSON.stringify(g.generator)} (known: ${OPENAI_GENERATOR_NAME})`,
      usage: undefined,
      version: null,
    };
  }
  // kept in the cache entry so a rejected answer can be inspected on the host
  const rawAnswerDir = join(g.built, 'raw');
  nodeFs.mkdirSync(rawAnswerDir, { recursive: true });
  return runOpenAiGenerator({
    workspace: g.ws,
    job: g.job,
    env: process.env,
    timeoutMs: g.timeoutMs,
    rawAnswerDir,
  });
}

/** `: <the telling line>` and, when there is more, the last lines of stderr under it; nothing for no stderr. */
function failureText(tail: string): string {
  if (!tail) return '';
  const telling = tellingLine(tail);
  return tail === telling ? `: ${telling}` : `: ${telling}\nstderr (last lines):\n${tail}`;
}
