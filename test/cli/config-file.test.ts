// Settings from config files, read in one place: a flag wins, then the repository's genjob.config.json,
// then the user's own file; a repository's setting that runs a command here or widens the sandbox needs
// an allow record, the user's own never does; relative paths are relative to their file; "serve" is the
// user's own only.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { recordConsent } from '../../src/cli/config-consent.js';
import {
  CONSENT_SETTINGS,
  consentSettingsIn,
  loadConfigFile,
  repoConsentDigest,
  requireRepoConsent,
  userConfigFile,
  withServeConfig,
  withWorkConfig,
} from '../../src/cli/config-file.js';
import { tempDir } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

const collect = (v: string, prev: string[] = []) => [...prev, v];

/** The options of `work` these tests exercise, parsed from `args` as commander would. */
function work(args: string[]): { cmd: Command; o: Record<string, unknown> } {
  const cmd = new Command('work')
    .exitOverride()
    .option('--root <dir>')
    .option('--generator <command>')
    .option('--host <h>', '', collect)
    .option('--launch <c>', '', collect)
    .option('--concurrency <n>', '', Number, 1)
    .option('--timeout <s>', '', Number, 600)
    .option('--lease-ttl <s>', '', Number, 60)
    .option('--max-attempts <n>', '', Number, 3)
    .option('--in-doubt-after <s>', '', Number, 300)
    .option('--host-backoff <s>', '', Number, 1)
    .option('--grace <s>', '', Number, 30)
    .option('--batch-size <n>', '', Number, 1000)
    .option('--batch-poll-interval <s>', '', Number, 60)
    .option('--port <p>', '', Number)
    .option('--identity <f>')
    .option('--ssh-option <o>', '', collect)
    .option('--ssh-config <f>')
    .option('--remote-cmd <c>', '', 'genjob serve --session')
    .option('--generator-env <n>', '', collect)
    .option('--generator-network')
    .option('--generator-bind <p>', '', collect)
    .option('--generator-bind-rw <p>', '', collect)
    .option('--no-sandbox');
  cmd.parse(args, { from: 'user' });
  return { cmd, o: cmd.opts() };
}

function serve(args: string[]): { cmd: Command; o: Record<string, unknown> } {
  const cmd = new Command('serve')
    .exitOverride()
    .option('--generator <c>')
    .option('--cache-dir <d>')
    .option('--sign-key <f>')
    .option('--gc-older-than <d>')
    .option('--generator-env <n>', '', collect)
    .option('--no-sandbox');
  cmd.parse(args, { from: 'user' });
  return { cmd, o: cmd.opts() };
}

let base: string;
let repo: string;
const saved = { ...process.env };
beforeEach(() => {
  base = tempDir('gj-config-');
  repo = join(base, 'repo');
  mkdirSync(join(repo, '.git'), { recursive: true });
  process.env.XDG_CONFIG_HOME = join(base, 'config');
  process.env.XDG_STATE_HOME = join(base, 'state');
});
afterEach(() => {
  process.env = { ...saved };
});

const repoFile = () => join(repo, 'genjob.config.json');
function repoConfig(body: unknown): void {
  writeFileSync(repoFile(), JSON.stringify(body));
}
function userConfig(body: unknown): void {
  mkdirSync(join(base, 'config', 'genjob'), { recursive: true });
  writeFileSync(join(base, 'config', 'genjob', 'config.json'), JSON.stringify(body));
}
function allow(): void {
  recordConsent(repoFile(), repoConsentDigest(loadConfigFile(repoFile())!));
}
const merged = (args: string[]) => {
  const { cmd, o } = work(['--root', repo, ...args]);
  return withWorkConfig(cmd, o) as Record<string, unknown>;
};

describe('userConfigFile', () => {
  it('is $XDG_CONFIG_HOME/genjob/config.json, else ~/.config/genjob/config.json', () => {
    expect(userConfigFile({ XDG_CONFIG_HOME: '/c', HOME: '/h' })).toBe('/c/genjob/config.json');
    expect(userConfigFile({ XDG_CONFIG_HOME: 'c', HOME: '/h' })).toBe('/h/.config/genjob/config.json');
    expect(userConfigFile({ HOME: '/h' })).toBe('/h/.config/genjob/config.json');
  });
});

describe('withWorkConfig', () => {
  it('leaves the options as they are with no config file anywhere', () => {
    expect(merged(['--generator', 'g'])).toMatchObject({ generator: 'g', leaseTtl: 60, sandbox: true });
  });

  it('takes every work setting from the repository’s file (once allowed) where no flag was given', () => {
    repoConfig({
      generator: 'g',
      hosts: ['2/a', 'b'],
      concurrency: 4,
      timeout: 90,
      lease_ttl: 7,
      max_attempts: 5,
      in_doubt_after: 11,
      host_backoff: 0.5,
      grace: 3,
      batch_size: 10,
      batch_poll_interval: 9,
      generator_env: ['A'],
      generator_network: true,
      generator_bind: ['/x', 'rel'],
      generator_bind_rw: ['/y'],
      no_sandbox: true,
      ssh: { port: 2222, identity: 'id', options: ['ProxyJump=j'], config: 'ssh_config', remote_cmd: 'r' },
    });
    allow();
    expect(merged([])).toMatchObject({
      generator: 'g',
      host: ['2/a', 'b'],
      concurrency: 4,
      timeout: 90,
      leaseTtl: 7,
      maxAttempts: 5,
      inDoubtAfter: 11,
      hostBackoff: 0.5,
      grace: 3,
      batchSize: 10,
      batchPollInterval: 9,
      generatorEnv: ['A'],
      generatorNetwork: true,
      generatorBind: ['/x', join(repo, 'rel')],
      generatorBindRw: ['/y'],
      sandbox: false,
      port: 2222,
      identity: join(repo, 'id'),
      sshOption: ['ProxyJump=j'],
      sshConfig: join(repo, 'ssh_config'),
      remoteCmd: 'r',
    });
  });

  it('a flag wins over both files, the repository’s file over the user’s', () => {
    repoConfig({ generator: 'team', timeout: 90 });
    userConfig({ generator: 'mine', timeout: 30, concurrency: 2 });
    expect(merged(['--timeout', '5'])).toMatchObject({ generator: 'team', timeout: 5, concurrency: 2 });
  });

  it('a single "host" is a list of one; hosts and launch from a file yield to the other given as a flag', () => {
    repoConfig({ host: 'a', launch: ['srun genjob serve'] });
    allow();
    expect(merged([]).host).toEqual(['a']);
    expect(merged(['--launch', 'x']).host).toBeUndefined();
    expect(merged(['--host', 'b']).launch).toBeUndefined();
  });

  it('false is "not set": generator_network and no_sandbox false change nothing', () => {
    repoConfig({ generator_network: false, no_sandbox: false });
    expect(merged([])).toMatchObject({ sandbox: true });
    expect(merged([]).generatorNetwork).toBeUndefined();
  });

  it.each(CONSENT_SETTINGS.map((s) => [s]))('refuses the repository’s %s until allowed', (setting) => {
    const body: Record<string, unknown> = {};
    const [head, tail] = setting.split('.') as [string, string | undefined];
    const value =
      setting === 'generator_network' || setting === 'no_sandbox'
        ? true
        : setting === 'sandbox_user'
          ? 'root'
          : ['x'];
    if (tail) body[head] = { [tail]: tail === 'options' ? ['A=b'] : 'x' };
    else body[head] = value;
    // the ssh settings apply only when a host is used
    if (head === 'ssh') body.host = 'h';
    repoConfig(body);
    expect(thrown(() => merged([]))).toMatchObject({
      code: 'EGJ_CONFIG_NOT_ALLOWED',
      message: expect.stringContaining(`: "${setting}" runs a command on this machine`),
    });
    allow();
    expect(() => merged([])).not.toThrow();
  });

  it('needs no consent for the same settings from the user’s own file, nor for what a flag makes moot', () => {
    userConfig({ no_sandbox: true, host: 'h', ssh: { config: 'ssh_config' } });
    expect(merged([])).toMatchObject({
      sandbox: false,
      sshConfig: join(base, 'config', 'genjob', 'ssh_config'),
    });
    repoConfig({ ssh: { config: 'evil' } });
    expect(merged(['--ssh-config', '/mine']).sshConfig).toBe('/mine');
    expect(thrown(() => merged([]))).toMatchObject({ code: 'EGJ_CONFIG_NOT_ALLOWED' });
  });

  it('leaves a file’s ssh settings out, and asks no consent for them, when no host is used', () => {
    repoConfig({ ssh: { config: 'evil', port: 2222, options: ['A=b'] } });
    const o = merged([]);
    expect([o.sshConfig, o.port, o.sshOption]).toEqual([undefined, undefined, undefined]);
  });

  it('does not ask consent for settings that run nothing here (generator, host, identity, port)', () => {
    repoConfig({ generator: 'g', host: 'h', ssh: { identity: '/id', port: 22 } });
    expect(merged([])).toMatchObject({ generator: 'g', host: ['h'], identity: '/id', port: 22 });
  });

  it('refuses a "serve" section in a repository’s file', () => {
    repoConfig({ serve: { generator: 'g' } });
    expect(thrown(() => merged([]))).toMatchObject({
      code: 'EGJ_CONFIG',
      message: `${repoFile()}: "serve" configures genjob serve on a machine; it belongs in the user's own ${join(base, 'config', 'genjob', 'config.json')}`,
    });
  });
});

describe('withServeConfig', () => {
  it('takes serve’s settings from the user’s own "serve" section, under its flags', () => {
    userConfig({
      generator: 'not-for-serve',
      serve: {
        generator: 'g',
        cache_dir: 'cache',
        sign_key: '/k',
        gc_older_than: '7d',
        generator_env: ['A'],
        no_sandbox: true,
      },
    });
    const { cmd, o } = serve(['--generator', 'flag']);
    expect(withServeConfig(cmd, o)).toMatchObject({
      generator: 'flag',
      cacheDir: join(base, 'config', 'genjob', 'cache'),
      signKey: '/k',
      gcOlderThan: '7d',
      generatorEnv: ['A'],
      sandbox: false,
    });
  });

  it('changes nothing without a user config file', () => {
    const { cmd, o } = serve([]);
    expect(withServeConfig(cmd, o)).toEqual(o);
  });
});

describe('consentSettingsIn', () => {
  it('lists the settings of a config that need consent, set to something but false', () => {
    expect(
      consentSettingsIn({ generator: 'g', no_sandbox: false, launch: ['x'], ssh: { config: 'c', port: 1 } }),
    ).toEqual(['ssh.config', 'launch']);
  });

  it('lists a checker’s network and env, never its run or setup (they run confined)', () => {
    const checkers = {
      up: { run: 'x', network: true, env: ['A'] },
      tests: { run: 'x', setup: 'y' },
      off: { run: 'x', network: false, env: [] },
    };
    expect(consentSettingsIn({ checkers })).toEqual(['checkers.up.network', 'checkers.up.env']);
  });
});

describe('requireRepoConsent', () => {
  it('refuses the first setting named until the repository’s config is allowed; none named needs nothing', () => {
    repoConfig({ checkers: { up: { run: 'x', network: true } } });
    const loaded = loadConfigFile(repoFile())!;
    expect(() => requireRepoConsent(loaded, [])).not.toThrow();
    expect(thrown(() => requireRepoConsent(loaded, ['checkers.up.network']))).toMatchObject({
      code: 'EGJ_CONFIG_NOT_ALLOWED',
      message: `${repoFile()}: "checkers.up.network" widens the checker's sandbox; a repository's config may set it only once you have read the file and allowed it: genjob config allow`,
    });
    allow();
    expect(() => requireRepoConsent(loaded, ['checkers.up.network'])).not.toThrow();
  });
});
