// Helpers for the tests of material in git: a bare repository as the remote (file:// or over the test
// sshd), clones with their own git config (identity, no system or user config), and received jobs
// written straight to disk (bench/fixtures.mjs) when a test needs many keys without running work.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { makeJob, receivedJob, sha256, textBytes } from '../../bench/fixtures.mjs';
import type { SshdHandle } from '../helpers/sshd.js';
import { runCli } from './helpers.js';

export interface Transport {
  name: string;
  /** The URL a clone uses for the bare repository at `path`. */
  url(path: string): string;
  env(): Record<string, string>;
}

export const FILE_TRANSPORT: Transport = { name: 'file://', url: (p) => `file://${p}`, env: () => ({}) };

export function sshTransport(sshd: () => SshdHandle): Transport {
  return {
    name: 'ssh',
    url: (p) => `ssh://${sshd().alias}${p}`,
    env: () => ({ GIT_SSH_COMMAND: `ssh -F '${sshd().sshConfigFile}'` }),
  };
}

/** A git config file for the test's processes: identity, default branch; no system config. */
export function gitEnv(base: string, extra: Record<string, string> = {}): Record<string, string> {
  const config = join(base, 'gitconfig');
  writeFileSync(
    config,
    '[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n',
  );
  return { GIT_CONFIG_GLOBAL: config, GIT_CONFIG_NOSYSTEM: '1', ...extra };
}

export async function git(cwd: string, args: readonly string[], env: Record<string, string>, input?: string) {
  const r = await execa('git', args, { cwd, env, reject: false, input, stripFinalNewline: true });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
  return String(r.stdout);
}

/** A clone of `url`'s feature branch at `base`/`name`; with `material`, its refs/genjob/* fetched too. */
export async function cloneBranch(
  base: string,
  url: string,
  name: string,
  env: Record<string, string>,
  opts: { material?: boolean } = {},
): Promise<string> {
  const dir = join(base, name);
  await git(base, ['clone', '-q', '-b', 'feature', url, dir], env);
  if (opts.material) await git(dir, ['fetch', '-q', 'origin', '+refs/genjob/*:refs/genjob/*'], env);
  return dir;
}

/** `count` received jobs with one small output each, written to `root`/.gen as `genjob work` leaves them. */
export function fakeReceived(root: string, count: number, label: string, outputBytes = 2048): string[] {
  for (const d of ['received', 'receipts', 'out', 'attempts', 'queue', 'running', 'applied', 'dead'])
    mkdirSync(join(root, '.gen', d), { recursive: true });
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const path = `gen/${label}/f${i}.txt`;
    const made = makeJob(`${label} job ${i}`, [{ path, sha256: null }]);
    const data = textBytes(outputBytes);
    receivedJob(root, made, [{ path, sha256: sha256(data), bytes: data.length }], (file) =>
      writeFileSync(file, data),
    );
    keys.push(made.key);
  }
  return keys.sort();
}

/** Run the built CLI in `cwd` of a world (its base holds the shared result cache), with its environment. */
export function worldCli(
  w: { base: string; env: Record<string, string> },
  cwd: string,
  args: readonly string[],
  env: Record<string, string> = {},
) {
  return runCli(args, { cwd, env: { ...w.env, XDG_CACHE_HOME: join(w.base, 'cache'), ...env } });
}
