// Checkers as genjob.config.json declares them under "checkers": a command (tests, a linter) or a
// model judge, one entry per name. Each entry is read strictly (an unknown key or a wrong type is
// EGJ_CONFIG naming the file and the key) and normalised with its defaults filled in, because the
// normalised form is what the binding digest covers: two spellings of one checker bind alike.
import { join } from 'node:path';
import * as z from 'zod/mini';
import { CONFIG_FILE, configText, loadConfig } from '../cli/config-file.js';
import { MAX_WAIT_SECONDS } from '../core/duration.js';
import { UsageError } from '../core/errors.js';
import { pathProblem } from '../core/paths.js';
import { checkSchema } from '../core/schema-check.js';
import { checkEnvName } from '../sandbox/policy.js';

/** A checker's name: also a directory under .gen/checks/<key>/ and part of a git trailer. */
export const CHECKER_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const JUDGE_BUILTIN = 'builtin:openai';
export const DEFAULT_TIMEOUT_S = 600;
export const DEFAULT_JUDGE_TIMEOUT_S = 120;
export const MAX_ATTEMPTS = 20;
export const MAX_SAMPLES = 15;
/** The lockfiles pinned when a command checker names no `pin` (those present at HEAD's root). */
export const DEFAULT_PINS = [
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lockb',
  'poetry.lock',
  'Pipfile.lock',
  'uv.lock',
  'Cargo.lock',
  'go.sum',
  'Gemfile.lock',
  'composer.lock',
] as const;

export interface CommandChecker {
  kind: 'command';
  name: string;
  run: string;
  setup: string | null;
  timeout_s: number;
  attempts: number;
  network: boolean;
  env: string[];
  /** Files whose digests join the binding; null: the default lockfiles present at HEAD. */
  pin: string[] | null;
}

export interface JudgeChecker {
  kind: 'judge';
  name: string;
  judge: typeof JUDGE_BUILTIN;
  model: string;
  rubric: string;
  samples: number;
  quorum: number;
  params: Record<string, unknown>;
  timeout_s: number;
}

export type Checker = CommandChecker | JudgeChecker;

/** A check's time limit: at least 1 s, at most a week (MAX_WAIT_SECONDS) as a generator's, however it is spelt. */
const MIN_TIMEOUT_S = 1;
// one rule for a number and a unit: a number of 0.0001 timed every run out as "0s" did, and past ~24
// days Node's timer overflowed to 1 ms and did the same, each run recorded as a failure of the change
const seconds = z.union([z.number(), z.string().check(z.regex(/^\d{1,6}[smh]$/))]).check(
  z.refine(
    (v) => {
      const n = toSeconds(v, 0);
      return n >= MIN_TIMEOUT_S && n <= MAX_WAIT_SECONDS;
    },
    {
      message: `must be at least ${MIN_TIMEOUT_S}s and at most ${MAX_WAIT_SECONDS}s (${MAX_WAIT_SECONDS / 3600}h)`,
    },
  ),
);
const repoPath = z
  .string()
  .check(z.refine((p) => pathProblem(p) === null, 'not a relative path inside the repository'));

const CommandSchema = z.strictObject({
  run: configText,
  setup: z.optional(configText),
  timeout: z.optional(seconds),
  attempts: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_ATTEMPTS))),
  network: z.optional(z.boolean()),
  env: z.optional(z.array(z.string())),
  pin: z.optional(z.array(repoPath).check(z.maxLength(100))),
});

const JudgeSchema = z.strictObject({
  judge: z.literal(JUDGE_BUILTIN),
  model: z.string().check(z.minLength(1), z.maxLength(200)),
  rubric: repoPath,
  samples: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_SAMPLES))),
  quorum: z.optional(z.number().check(z.int(), z.minimum(1), z.maximum(MAX_SAMPLES))),
  params: z.optional(z.record(z.string(), z.unknown())),
  timeout: z.optional(seconds),
});

function toSeconds(v: number | string | undefined, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v === 'number') return v;
  const n = Number(v.slice(0, -1));
  return n * { s: 1, m: 60, h: 3600 }[v.slice(-1) as 's' | 'm' | 'h'];
}

/** The params a judge may not set: genjob decides what is asked and how the answer is shaped. */
const RESERVED_PARAMS = ['model', 'messages', 'response_format', 'stream', 'n', 'tools', 'functions'];

/** One "checkers" entry, normalised; `where` names the file for errors. */
export function parseChecker(name: string, raw: unknown, where: string): Checker {
  const at = `"checkers.${name}"`;
  if (!CHECKER_NAME.test(name))
    throw new UsageError(
      'EGJ_CONFIG',
      `${where}: ${at}: a checker name is 1-64 of [a-z0-9._-], starting with a letter or digit`,
    );
  const isJudge = typeof raw === 'object' && raw !== null && Object.hasOwn(raw, 'judge');
  const parsed = isJudge ? checkSchema(JudgeSchema, raw) : checkSchema(CommandSchema, raw);
  if (!parsed.ok) {
    const issue = parsed.issue;
    const path = issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
    if (issue.code === 'unrecognized_keys')
      throw new UsageError(
        'EGJ_CONFIG',
        `${where}: ${at}: unknown key ${issue.keys.map((k) => `"${k}"`).join(', ')}`,
      );
    throw new UsageError('EGJ_CONFIG', `${where}: "checkers.${name}${path}": ${issue.message}`);
  }
  if (isJudge) {
    const j = parsed.data as z.infer<typeof JudgeSchema>;
    const samples = j.samples ?? 3;
    const quorum = j.quorum ?? Math.min(2, samples);
    // a quorum of half or less would let both answers reach it
    if (quorum > samples || quorum * 2 <= samples)
      throw new UsageError(
        'EGJ_CONFIG',
        `${where}: ${at}: quorum ${quorum} of ${samples} sample(s): it must be more than half of the samples and at most all of them`,
      );
    const params = j.params ?? {};
    const reserved = RESERVED_PARAMS.find((p) => Object.hasOwn(params, p));
    if (reserved)
      throw new UsageError(
        'EGJ_CONFIG',
        `${where}: "checkers.${name}.params.${reserved}": set by genjob, not by params`,
      );
    return {
      kind: 'judge',
      name,
      judge: JUDGE_BUILTIN,
      model: j.model,
      rubric: j.rubric,
      samples,
      quorum,
      params,
      timeout_s: toSeconds(j.timeout, DEFAULT_JUDGE_TIMEOUT_S),
    };
  }
  const c = parsed.data as z.infer<typeof CommandSchema>;
  const env = (c.env ?? []).map((n) => {
    try {
      return checkEnvName(n);
    } catch (err) {
      throw new UsageError(
        'EGJ_CONFIG',
        `${where}: "checkers.${name}.env": ${(err as Error).message.replace(/^--generator-env /, '')}`,
      );
    }
  });
  return {
    kind: 'command',
    name,
    run: c.run,
    setup: c.setup ?? null,
    timeout_s: toSeconds(c.timeout, DEFAULT_TIMEOUT_S),
    attempts: c.attempts ?? 1,
    network: c.network ?? false,
    env: [...new Set(env)].sort(),
    pin: c.pin === undefined ? null : [...new Set(c.pin)].sort(),
  };
}

/** Every checker of a config's "checkers" object, sorted by name. */
export function parseCheckers(raw: Record<string, unknown> | undefined, where: string): Checker[] {
  if (raw === undefined) return [];
  return Object.keys(raw)
    .sort()
    .map((name) => parseChecker(name, raw[name], where));
}

/** The checkers the working tree's genjob.config.json declares (none when there is no file). */
export function loadCheckers(root: string): Checker[] {
  return parseCheckers(loadConfig(root)?.checkers, join(root, CONFIG_FILE));
}
