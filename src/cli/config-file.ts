// Settings from config files, read in this one place: genjob.config.json at the repository root (the
// team's, committed) and the user's own ~/.config/genjob/config.json ($XDG_CONFIG_HOME). A flag given on
// the command line wins, then the repository's file, then the user's. Checked with zod/mini; an unknown key
// or a wrong type is EGJ_CONFIG naming the file and the key. A repository's setting that runs or locates
// a command here, or weakens the sandbox (CONSENT_SETTINGS), is honoured only once allowed (config-consent.ts).
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { Command } from 'commander';
import * as z from 'zod/mini';
import { MAX_WAIT_SECONDS } from '../core/duration.js';
import { errnoOf, UsageError } from '../core/errors.js';
import { checkSchema } from '../core/schema-check.js';
import { nodeFs } from '../store/fs-port.js';
import { consentDigest, requireConsent } from './config-consent.js';
import { CONFIG_FILE } from './config-name.js';
import { findRoot } from './root.js';
import { userConfigFile } from './user-config-path.js';

export { CONFIG_FILE, userConfigFile };

/** A config string: not empty, and no NUL (a command, a host, a path: none can be given to a process with one). */
export const configText = z.string().check(
  z.minLength(1),
  z.refine((s) => !s.includes('\0'), 'holds a NUL character'),
);
const names = z.array(configText);
// every wait: above 0, at most a week (as the flags; a longer one no host or timer takes)
const seconds = z.number().check(z.positive(), z.maximum(MAX_WAIT_SECONDS));
const count = z.number().check(z.int(), z.positive());

/** How generators are confined: the same keys for `work` (top level) and `serve` (its section). */
const sandboxKeys = {
  generator_env: z.optional(names),
  generator_network: z.optional(z.boolean()),
  generator_bind: z.optional(names),
  generator_bind_rw: z.optional(names),
  no_sandbox: z.optional(z.boolean()),
  sandbox_user: z.optional(configText),
};

const ConfigSchema = z.strictObject({
  $schema: z.optional(z.string()),
  generator: z.optional(configText),
  host: z.optional(configText),
  /** A pool, as repeated --host: each `[N/][user@]host`. */
  hosts: z.optional(z.array(configText).check(z.minLength(1))),
  concurrency: z.optional(count),
  timeout: z.optional(seconds),
  ssh: z.optional(
    z.strictObject({
      port: z.optional(z.number().check(z.int(), z.positive(), z.maximum(65535))),
      identity: z.optional(configText),
      options: z.optional(names),
      config: z.optional(configText),
      remote_cmd: z.optional(configText),
    }),
  ),
  /** Checkers by name, read in detail by src/check/checker.ts. */
  checkers: z.optional(z.record(z.string(), z.unknown())),
  /** As repeated --launch: each `[N/]command`. */
  launch: z.optional(names.check(z.minLength(1))),
  lease_ttl: z.optional(seconds),
  max_attempts: z.optional(count),
  in_doubt_after: z.optional(seconds),
  host_backoff: z.optional(z.number().check(z.positive(), z.maximum(60))),
  grace: z.optional(seconds),
  batch_size: z.optional(count),
  batch_poll_interval: z.optional(seconds),
  ...sandboxKeys,
  /** `genjob serve` on this machine: read from the user's own file only. */
  serve: z.optional(
    z.strictObject({
      generator: z.optional(configText),
      cache_dir: z.optional(configText),
      sign_key: z.optional(configText),
      gc_older_than: z.optional(configText),
      ...sandboxKeys,
    }),
  ),
});
export type GenjobConfig = z.infer<typeof ConfigSchema>;

/**
 * Settings of a repository's config that need the user's consent: each runs or locates a command that runs
 * unconfined on this machine (ssh's config with its Match exec and ProxyCommand, ssh -o options, the
 * launcher, the command started on the host), or widens what the generator can reach.
 */
export const CONSENT_SETTINGS: readonly string[] = [
  'ssh.config',
  'ssh.options',
  'ssh.remote_cmd',
  'launch',
  'generator_env',
  'generator_network',
  'generator_bind',
  'generator_bind_rw',
  'no_sandbox',
  'sandbox_user',
];

export interface LoadedConfig {
  file: string;
  bytes: Buffer;
  config: GenjobConfig;
}

/** A config file, parsed and checked, or undefined when there is none. */
export function loadConfigFile(file: string): LoadedConfig | undefined {
  let bytes: Buffer;
  try {
    // through the named fs: a disk fault is EGJ_IO naming the file (and a failed close no crash)
    bytes = nodeFs.readFileSync(file);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw new UsageError('EGJ_CONFIG', `${file}: not JSON (${(err as Error).message})`);
  }
  const parsed = checkSchema(ConfigSchema, raw);
  if (!parsed.ok) {
    const issue = parsed.issue;
    const at = issue.path.join('.');
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => (at ? `${at}.${k}` : k));
      throw new UsageError('EGJ_CONFIG', `${file}: unknown key ${keys.map((k) => `"${k}"`).join(', ')}`);
    }
    throw new UsageError('EGJ_CONFIG', `${file}: "${at}": ${issue.message}`);
  }
  if (parsed.data.host !== undefined && parsed.data.hosts !== undefined)
    throw new UsageError('EGJ_CONFIG', `${file}: "host" and "hosts" both given; put every host in "hosts"`);
  return { file, bytes, config: parsed.data };
}

/** Roots whose config a looking command (status, show, report) reads as absent, having warned it is unreadable. */
const ignoredRoots = new Set<string>();

/** Read the config of the repository at `root` as absent from now on, in this process (look-config.ts). */
export function ignoreRepoConfig(root: string): void {
  ignoredRoots.add(root);
}

/** The config file of the repository at `root`, or undefined when there is none. */
export function loadConfig(root: string): GenjobConfig | undefined {
  if (ignoredRoots.has(root)) return undefined;
  return loadConfigFile(join(root, CONFIG_FILE))?.config;
}

/** A path a config file names, relative to that file's directory. */
function fromFile(file: string, p: string): string {
  return isAbsolute(p) ? p : resolve(dirname(file), p);
}

/** The files a repository's consent covers besides the config itself (their contents run commands). */
function namedFiles(l: LoadedConfig): string[] {
  return l.config.ssh?.config === undefined ? [] : [fromFile(l.file, l.config.ssh.config)];
}

/** The digest `genjob config allow` records for a repository's config (config-consent.ts). */
export function repoConsentDigest(l: LoadedConfig): string {
  return consentDigest(l.bytes, namedFiles(l));
}

/**
 * The settings of one checker (as declared, or normalised) that need consent from a repository: those
 * that widen its sandbox, the network and the user's environment. Its `run` and `setup` need none: they
 * run confined, like the generated code they check.
 */
export function checkerConsentSettings(name: string, checker: unknown): string[] {
  const c = (typeof checker === 'object' && checker !== null ? checker : {}) as Record<string, unknown>;
  return [
    ...(c['network'] === true ? [`checkers.${name}.network`] : []),
    ...(Array.isArray(c['env']) && c['env'].length > 0 ? [`checkers.${name}.env`] : []),
  ];
}

/** The settings of a loaded config that need consent from a repository. */
export function consentSettingsIn(c: GenjobConfig): string[] {
  const checkers = c.checkers ?? {};
  return [
    ...CONSENT_SETTINGS.filter((s) => valueAt(c, s) !== undefined && valueAt(c, s) !== false),
    ...Object.keys(checkers)
      .sort()
      .flatMap((n) => checkerConsentSettings(n, checkers[n])),
  ];
}

/** Refuse the first of `settings` unless the user allowed the repository's config as `loaded` read it. */
export function requireRepoConsent(loaded: LoadedConfig, settings: readonly string[]): void {
  if (settings.length > 0) requireConsent(loaded.file, repoConsentDigest(loaded), settings[0]!);
}

function valueAt(c: Record<string, unknown> | undefined, setting: string): unknown {
  let v: unknown = c;
  for (const part of setting.split('.')) v = (v as Record<string, unknown> | undefined)?.[part];
  return v;
}

/** One command option and the config key (dotted) it takes its default from, with how to turn the value into the option's. */
interface Setting {
  option: string;
  key: string;
  /** The raw value (default: the value at `key`). */
  get?: (c: GenjobConfig) => unknown;
  /** Options that, given on the command line, make this setting moot (--launch for the hosts). */
  unless?: string;
  /**
   * An option (resolved before this setting) without which a file's value is left out: the ssh settings
   * apply when a host is used, from the command line or a file, and are silently unused by a local serve.
   */
  onlyWith?: string;
  value?: (v: unknown, file: string) => unknown;
}

const paths = (v: unknown, file: string) => (v as string[]).map((p) => fromFile(file, p));
const sandboxSettings = (prefix: string): Setting[] => [
  { option: 'generatorEnv', key: `${prefix}generator_env` },
  { option: 'generatorNetwork', key: `${prefix}generator_network` },
  { option: 'generatorBind', key: `${prefix}generator_bind`, value: paths },
  { option: 'generatorBindRw', key: `${prefix}generator_bind_rw`, value: paths },
  // --no-sandbox is commander's option "sandbox", false when given
  { option: 'sandbox', key: `${prefix}no_sandbox`, value: () => false },
  { option: 'sandboxUser', key: `${prefix}sandbox_user` },
];

const WORK_SETTINGS: Setting[] = [
  { option: 'generator', key: 'generator' },
  // --host collects into a list: one host is a list of one
  {
    option: 'host',
    key: 'hosts',
    get: (c) => c.hosts ?? (c.host === undefined ? undefined : [c.host]),
    unless: 'launch',
  },
  { option: 'launch', key: 'launch', unless: 'host' },
  { option: 'concurrency', key: 'concurrency' },
  { option: 'timeout', key: 'timeout' },
  { option: 'leaseTtl', key: 'lease_ttl' },
  { option: 'maxAttempts', key: 'max_attempts' },
  { option: 'inDoubtAfter', key: 'in_doubt_after' },
  { option: 'hostBackoff', key: 'host_backoff' },
  { option: 'grace', key: 'grace' },
  { option: 'batchSize', key: 'batch_size' },
  { option: 'batchPollInterval', key: 'batch_poll_interval' },
  // after 'host', whose value (given or from a file) decides whether they apply
  { option: 'port', key: 'ssh.port', onlyWith: 'host' },
  {
    option: 'identity',
    key: 'ssh.identity',
    value: (v, file) => fromFile(file, v as string),
    onlyWith: 'host',
  },
  { option: 'sshOption', key: 'ssh.options', onlyWith: 'host' },
  {
    option: 'sshConfig',
    key: 'ssh.config',
    value: (v, file) => fromFile(file, v as string),
    onlyWith: 'host',
  },
  { option: 'remoteCmd', key: 'ssh.remote_cmd', onlyWith: 'host' },
  ...sandboxSettings(''),
];

const SERVE_SETTINGS: Setting[] = [
  { option: 'generator', key: 'serve.generator' },
  { option: 'cacheDir', key: 'serve.cache_dir', value: (v, file) => fromFile(file, v as string) },
  { option: 'signKey', key: 'serve.sign_key', value: (v, file) => fromFile(file, v as string) },
  { option: 'gcOlderThan', key: 'serve.gc_older_than' },
  ...sandboxSettings('serve.'),
];

interface Layer {
  loaded: LoadedConfig;
  /** A repository's file: its consent settings need the user's allow record. */
  repository: boolean;
}

function isSet(v: unknown): boolean {
  return Array.isArray(v) ? v.length > 0 : v !== undefined && v !== false;
}

/** `o` with each setting's value from the first layer that has it, wherever the command line gave none. */
function applySettings<T>(
  cmd: Command,
  o: T & Record<string, unknown>,
  settings: Setting[],
  layers: Layer[],
): T {
  const merged: Record<string, unknown> = { ...o };
  for (const s of settings) {
    const given = (option: string) => cmd.getOptionValueSource(option) === 'cli';
    if (given(s.option) || (s.unless !== undefined && given(s.unless))) continue;
    if (s.onlyWith !== undefined && !isSet(merged[s.onlyWith])) continue;
    for (const { loaded, repository } of layers) {
      const raw = s.get ? s.get(loaded.config) : valueAt(loaded.config, s.key);
      // false is "not set": the flags it stands for are off unless given
      if (raw === undefined || raw === false) continue;
      if (repository && CONSENT_SETTINGS.includes(s.key))
        requireConsent(loaded.file, repoConsentDigest(loaded), s.key);
      merged[s.option] = s.value ? s.value(raw, loaded.file) : raw;
      break;
    }
  }
  return merged as T;
}

/** `work`'s options: flags, then genjob.config.json (consent enforced), then the user's config file. */
export function withWorkConfig<T extends { root?: string }>(cmd: Command, o: T & Record<string, unknown>): T {
  const repo = loadConfigFile(join(findRoot(o.root), CONFIG_FILE));
  if (repo?.config.serve !== undefined)
    throw new UsageError(
      'EGJ_CONFIG',
      `${repo.file}: "serve" configures genjob serve on a machine; it belongs in the user's own ${userConfigFile()}`,
    );
  const user = loadConfigFile(userConfigFile());
  const layers: Layer[] = [
    ...(repo ? [{ loaded: repo, repository: true }] : []),
    ...(user ? [{ loaded: user, repository: false }] : []),
  ];
  return applySettings(cmd, o, WORK_SETTINGS, layers);
}

/** `serve`'s options: flags, then the "serve" section of the user's own config file (serve runs in no repository). */
export function withServeConfig<T>(cmd: Command, o: T & Record<string, unknown>): T {
  const user = loadConfigFile(userConfigFile());
  return user ? applySettings(cmd, o, SERVE_SETTINGS, [{ loaded: user, repository: false }]) : o;
}
