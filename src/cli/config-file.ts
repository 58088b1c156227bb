// genjob.config.json at the repository root: defaults for what people otherwise retype on every
// `work` (generator, host or a pool of hosts, concurrency, timeout, ssh settings). Checked with zod; an unknown key or a
// wrong type is EGJ_CONFIG naming the file and the key. A flag given on the command line always wins.
import { join } from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import { errnoOf, UsageError } from '../core/errors.js';
import { nodeFs } from '../store/fs-port.js';
import { findRoot } from './root.js';

export const CONFIG_FILE = 'genjob.config.json';

const ConfigSchema = z.strictObject({
  $schema: z.string().optional(),
  generator: z.string().min(1).optional(),
  host: z.string().min(1).optional(),
  /** A pool, as repeated --host: each `[N/][user@]host`. */
  hosts: z.array(z.string().min(1)).min(1).optional(),
  concurrency: z.number().int().positive().optional(),
  timeout: z.number().positive().optional(),
  ssh: z
    .strictObject({
      port: z.number().int().positive().max(65535).optional(),
      identity: z.string().min(1).optional(),
      options: z.array(z.string().min(1)).optional(),
      config: z.string().min(1).optional(),
      remote_cmd: z.string().min(1).optional(),
    })
    .optional(),
  /** Checkers by name, read in detail by src/check/checker.ts. */
  checkers: z.record(z.string(), z.unknown()).optional(),
});
export type GenjobConfig = z.infer<typeof ConfigSchema>;

/** The config file of the repository at `root`, or undefined when there is none. */
export function loadConfig(root: string): GenjobConfig | undefined {
  const file = join(root, CONFIG_FILE);
  let text: string;
  try {
    // through the named fs: a disk fault is EGJ_IO naming the file (and a failed close no crash)
    text = nodeFs.readFileSync(file, 'utf8');
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new UsageError('EGJ_CONFIG', `${file}: not JSON (${(err as Error).message})`);
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.join('.');
    if (issue.code === 'unrecognized_keys') {
      const keys = issue.keys.map((k) => (at ? `${at}.${k}` : k));
      throw new UsageError('EGJ_CONFIG', `${file}: unknown key ${keys.map((k) => `"${k}"`).join(', ')}`);
    }
    throw new UsageError('EGJ_CONFIG', `${file}: "${at}": ${issue.message}`);
  }
  if (parsed.data.host !== undefined && parsed.data.hosts !== undefined)
    throw new UsageError('EGJ_CONFIG', `${file}: "host" and "hosts" both given; put every host in "hosts"`);
  return parsed.data;
}

/** work's option name for each config value. */
function workDefaults(c: GenjobConfig): Record<string, unknown> {
  return {
    generator: c.generator,
    // --host collects into a list: one host is a list of one
    host: c.hosts ?? (c.host === undefined ? undefined : [c.host]),
    concurrency: c.concurrency,
    timeout: c.timeout,
    port: c.ssh?.port,
    identity: c.ssh?.identity,
    sshOption: c.ssh?.options,
    sshConfig: c.ssh?.config,
    remoteCmd: c.ssh?.remote_cmd,
  };
}

/** `work`'s options with the config file's values wherever the command line gave none. */
export function withWorkConfig<T extends { root?: string }>(cmd: Command, o: T & Record<string, unknown>): T {
  const config = loadConfig(findRoot(o.root));
  if (!config) return o;
  const merged: Record<string, unknown> = { ...o };
  for (const [name, value] of Object.entries(workDefaults(config)))
    if (value !== undefined && cmd.getOptionValueSource(name) !== 'cli') merged[name] = value;
  return merged as T;
}
