// What an exposed path may not touch, on real paths: a bind inside anything hidden (the cache, the
// workspaces root, the key, an /etc secret) or holding the signing key is refused (EGJ_BIND_HIDDEN,
// exit 2) before serve answers; a bind that only holds the cache is allowed (masked inside it).
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { checkExposure, ETC_SECRETS, exposureProblem } from '../../src/sandbox/exposure.js';
import type { SandboxPolicy } from '../../src/sandbox/policy.js';
import { sandboxPolicy } from '../../src/sandbox/serve-policy.js';
import { tempDir } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

let dir: string;
let hidden: Pick<SandboxPolicy, 'hidden' | 'secrets'>;
beforeEach(() => {
  dir = realpathSync(tempDir('gj-expose-'));
  for (const d of ['home/.cache/genjob', 'home/.cache/genjob-work', 'keys', 'tools'])
    mkdirSync(join(dir, d), { recursive: true });
  writeFileSync(join(dir, 'keys/2026.key'), 'KEY');
  symlinkSync('2026.key', join(dir, 'keys/current.key'));
  symlinkSync(join(dir, 'home/.cache'), join(dir, 'cache-link'));
  symlinkSync(join(dir, 'keys'), join(dir, 'keys-link'));
  hidden = {
    hidden: [
      join(dir, 'home/.cache/genjob'),
      join(dir, 'home/.cache/genjob-work'),
      join(dir, 'keys/current.key'),
    ],
    secrets: [join(dir, 'keys/current.key')],
  };
});

describe('exposureProblem', () => {
  const inside = (bind: string, hiddenPath: string) =>
    `${bind} is or lies inside ${hiddenPath}, which serve keeps hidden from generators`;
  it.each([
    { name: 'a plain tool directory', bind: 'tools', problem: () => null },
    { name: 'a directory holding the cache (masked inside it)', bind: 'home', problem: () => null },
    {
      name: 'the cache itself',
      bind: 'home/.cache/genjob',
      problem: (d: string) => inside(`${d}/home/.cache/genjob`, `${d}/home/.cache/genjob`),
    },
    {
      name: 'a directory inside the cache, given through a symlink',
      bind: 'cache-link/genjob/results',
      problem: (d: string) =>
        inside(
          `${d}/cache-link/genjob/results (it is ${d}/home/.cache/genjob/results)`,
          `${d}/home/.cache/genjob`,
        ),
    },
    {
      name: 'a run directory under the workspaces root',
      bind: 'home/.cache/genjob-work/a-1',
      problem: (d: string) => inside(`${d}/home/.cache/genjob-work/a-1`, `${d}/home/.cache/genjob-work`),
    },
    {
      name: 'the directory of a key given through a rotation link',
      bind: 'keys',
      problem: (d: string) =>
        `${d}/keys holds the signing key ${d}/keys/2026.key, and whatever lies beside it`,
    },
    {
      name: 'that directory through a symlink',
      bind: 'keys-link',
      problem: (d: string) =>
        `${d}/keys-link (it is ${d}/keys) holds the signing key ${d}/keys/2026.key, and whatever lies beside it`,
    },
    {
      name: 'the real key file',
      bind: 'keys/2026.key',
      problem: (d: string) => inside(`${d}/keys/2026.key`, `${d}/keys/2026.key`),
    },
  ])('$name', (c) => {
    expect(exposureProblem(join(dir, c.bind), hidden)).toBe(c.problem(dir));
  });

  it('refuses the whole filesystem: it holds the signing key', () => {
    expect(exposureProblem('/', hidden)).toBe(
      `/ holds the signing key ${dir}/keys/2026.key, and whatever lies beside it`,
    );
  });

  it('refuses a bind that is or lies inside an /etc secret, however it is named', () => {
    expect(ETC_SECRETS).toContain('/etc/ssh');
    expect(exposureProblem('/etc/ssh', { hidden: [] })).toBe(
      '/etc/ssh is or lies inside /etc/ssh, which serve keeps hidden from generators',
    );
    symlinkSync('/etc/ssh', join(dir, 'ssh-link'));
    expect(exposureProblem(join(dir, 'ssh-link'), { hidden: [] })).toBe(
      `${dir}/ssh-link (it is /etc/ssh) is or lies inside /etc/ssh, which serve keeps hidden from generators`,
    );
  });

  it('refuses a bind that holds an /etc secret, however it is named', () => {
    expect(exposureProblem('/etc', { hidden: [] })).toBe(
      '/etc holds /etc/ssh, a host secret serve keeps hidden from generators',
    );
    symlinkSync('/etc', join(dir, 'etc-link'));
    expect(exposureProblem(join(dir, 'etc-link'), { hidden: [] })).toBe(
      `${dir}/etc-link (it is /etc) holds /etc/ssh, a host secret serve keeps hidden from generators`,
    );
    expect(exposureProblem('/etc/apt', { hidden: [] })).toBeNull();
  });
});

describe('checkExposure and the serve policy', () => {
  const policy = (over: Partial<SandboxPolicy>): SandboxPolicy => ({
    kind: 'bwrap',
    network: false,
    envNames: [],
    binds: [],
    bindsRw: [],
    ...hidden,
    ...over,
  });

  it('names the flag and the rule, exit 2', () => {
    const err = thrown(() => checkExposure(policy({ bindsRw: [join(dir, 'keys-link')] })));
    expect(err).toMatchObject({ code: 'EGJ_BIND_HIDDEN', exitCode: 2 });
    expect((err as Error).message).toBe(
      `--generator-bind-rw ${dir}/keys-link (it is ${dir}/keys) holds the signing key ${dir}/keys/2026.key, and whatever lies beside it; expose a path that neither holds nor lies inside what serve hides`,
    );
    expect(() => checkExposure(policy({ binds: [join(dir, 'tools'), join(dir, 'home')] }))).not.toThrow();
  });

  it('is what serve decides from its flags and environment; --no-sandbox exposes nothing, so checks nothing', () => {
    const env = { GENJOB_GENERATOR_BIND: join(dir, 'cache-link') };
    const hiddenDirs = [join(dir, 'home/.cache/genjob'), join(dir, 'home/.cache/genjob-work')];
    expect(() => sandboxPolicy({}, env, hiddenDirs)).not.toThrow(); // the link's target holds the cache
    expect(
      thrown(() =>
        sandboxPolicy({ generatorBind: [join(dir, 'keys')] }, {}, hiddenDirs, [
          join(dir, 'keys/current.key'),
        ]),
      ),
    ).toMatchObject({ code: 'EGJ_BIND_HIDDEN' });
    const none = sandboxPolicy({ sandbox: false, generatorBind: [join(dir, 'keys')] }, {}, hiddenDirs, [
      join(dir, 'keys/current.key'),
    ]);
    expect(none).toMatchObject({ kind: 'none', secrets: [join(dir, 'keys/current.key')] });
    expect(none.hidden).toEqual([...hiddenDirs, join(dir, 'keys/current.key')]);
  });
});
