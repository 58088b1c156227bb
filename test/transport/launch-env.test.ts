import { describe, expect, it } from 'vitest';
import { launchEnv } from '../../src/transport/launch-env.js';
import { thrown } from '../helpers/thrown.js';

describe('launchEnv', () => {
  const worker = {
    PATH: '/usr/bin',
    HOME: '/home/w',
    LANG: 'C.UTF-8',
    OPENAI_API_KEY: 'sk-secret',
    AWS_SECRET_ACCESS_KEY: 'aws-secret',
    SLURM_CONF: '/etc/slurm/x.conf',
  };

  it('keeps only the allowlist of ssh: no API key or cloud credential of the worker', () => {
    expect(launchEnv([], worker)).toEqual({ PATH: '/usr/bin', HOME: '/home/w', LANG: 'C.UTF-8' });
  });

  it('adds each name passed explicitly, and skips a name that is not set', () => {
    expect(launchEnv(['SLURM_CONF', 'KUBECONFIG'], worker)).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/w',
      LANG: 'C.UTF-8',
      SLURM_CONF: '/etc/slurm/x.conf',
    });
  });

  it('refuses a name that is not an environment name (EGJ_USAGE)', () => {
    expect(thrown(() => launchEnv(['A=B'], worker))).toMatchObject({ code: 'EGJ_USAGE' });
  });
});
