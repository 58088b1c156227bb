// The generator's environment is an allowlist: what a generator can read is exactly PATH, the locale,
// TERM, TZ, a sandbox HOME, the names the host passes with --generator-env and the GENJOB_* job
// variables. Serve's own secrets (API keys, the agent socket, the signing key) never reach it.
import { describe, expect, it } from 'vitest';
import { generatorEnv } from '../../src/sandbox/env-allowlist.js';

const HOST: NodeJS.ProcessEnv = {
  PATH: '/opt/host/bin:/usr/bin',
  LANG: 'de_DE.UTF-8',
  LANGUAGE: 'de',
  TERM: 'xterm',
  TZ: 'Europe/Berlin',
  LC_ALL: 'C.UTF-8',
  LC_TIME: 'en_GB.UTF-8',
  XLC_ALL: 'not a locale',
  HOME: '/home/serve',
  OPENAI_API_KEY: 'sk-secret',
  SSH_AUTH_SOCK: '/tmp/agent.sock',
  GENJOB_SIGN_KEY: '/home/serve/key',
  MODEL_URL: 'http://model',
};

describe('generatorEnv', () => {
  it('passes PATH, the locale, TERM and TZ, sets the sandbox HOME and drops every other host variable', () => {
    const { XLC_ALL, HOME, OPENAI_API_KEY, SSH_AUTH_SOCK, GENJOB_SIGN_KEY, MODEL_URL, ...passed } = HOST;
    expect(Object.keys(passed).sort()).toEqual([
      'LANG',
      'LANGUAGE',
      'LC_ALL',
      'LC_TIME',
      'PATH',
      'TERM',
      'TZ',
    ]);
    expect(generatorEnv(HOST, [], {}, '/tmp/home')).toStrictEqual({ ...passed, HOME: '/tmp/home' });
  });

  it('passes a name given with --generator-env, and only that one', () => {
    const env = generatorEnv(HOST, ['MODEL_URL', 'NOT_SET'], {}, '/tmp/home');
    expect(env.MODEL_URL).toBe('http://model');
    expect(Object.keys(env).sort()).toEqual(
      ['HOME', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_TIME', 'MODEL_URL', 'PATH', 'TERM', 'TZ'].sort(),
    );
  });

  it('never carries a variable whose value is unset', () => {
    const env = generatorEnv(
      { PATH: '/bin', TERM: undefined, MODEL_URL: undefined },
      ['MODEL_URL'],
      {},
      '/h',
    );
    expect(Object.keys(env).sort()).toEqual(['HOME', 'PATH']);
  });

  it('gives a default PATH when the host has none', () => {
    expect(generatorEnv({}, [], {}, '/h')).toStrictEqual({
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/h',
    });
  });

  it('sets HOME to the sandbox home even when the host passes its own HOME by name', () => {
    expect(generatorEnv(HOST, ['HOME'], {}, '/tmp/home').HOME).toBe('/tmp/home');
  });

  it('adds the job variables last, so a host variable of the same name cannot change them', () => {
    const env = generatorEnv(
      { ...HOST, GENJOB_KEY: 'forged' },
      ['GENJOB_KEY'],
      { GENJOB_KEY: 'k'.repeat(64), GENJOB_WORKSPACE: '/w' },
      '/tmp/home',
    );
    expect(env.GENJOB_KEY).toBe('k'.repeat(64));
    expect(env.GENJOB_WORKSPACE).toBe('/w');
  });
});
