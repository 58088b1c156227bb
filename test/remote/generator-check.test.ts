// Whether this host would run a generator command, decided before a bundle is read: a first word that
// names no file, or a file that is not executable, is a configuration problem; so is a file the
// sandbox would have to show although serve hides it (the signing key named as the generator).
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  checkGenerator,
  generatorCommandProblem,
  generatorConfigProblem,
  MAX_GENERATOR_CHARS,
} from '../../src/remote/generator-check.js';
import { checkRequest } from '../../src/remote/serve-requests.js';
import type { SandboxPolicy } from '../../src/sandbox/policy.js';
import { tempDir } from '../helpers/temp-store.js';

let dir: string;
let policy: SandboxPolicy;
beforeEach(() => {
  dir = realpathSync(tempDir('gj-gencheck-'));
  mkdirSync(join(dir, 'keys'));
  writeFileSync(join(dir, 'keys/host.key'), 'KEY', { mode: 0o700 });
  writeFileSync(join(dir, 'gen.sh'), '#!/bin/sh\n', { mode: 0o755 });
  policy = {
    kind: 'bwrap',
    network: false,
    envNames: [],
    binds: [],
    bindsRw: [],
    hidden: [join(dir, 'keys/host.key')],
    secrets: [join(dir, 'keys/host.key')],
  };
});

describe('generatorConfigProblem for a command', () => {
  it('has none for an executable file or a command that names no file', async () => {
    expect(await generatorConfigProblem(`${dir}/gen.sh --x`, {}, policy)).toBeNull();
    expect(await generatorConfigProblem('my-coder --apply', {}, policy)).toBeNull();
  });

  it('names a file the host does not have, resolved from where serve runs', async () => {
    expect(await generatorConfigProblem('./surely-not-here.sh', {}, policy)).toBe(
      `generator "./surely-not-here.sh": no such file ${join(process.cwd(), 'surely-not-here.sh')} (a path is resolved from where serve was started: ${process.cwd()})`,
    );
  });

  it('escape: refuses to show the generator a file serve hides, even one that is executable', async () => {
    // a first word glued to `;` is no plain path: nothing is shown, the shell finds nothing there
    expect(
      await generatorConfigProblem(`${dir}/keys/host.key; cat ${dir}/keys/host.key`, {}, policy),
    ).toBeNull();
    expect(await generatorConfigProblem(`${dir}/keys/host.key --x`, {}, policy)).toBe(
      `generator "${dir}/keys/host.key": ${dir}/keys/host.key is or lies inside ${dir}/keys/host.key, which serve keeps hidden from generators`,
    );
    // unconfined, nothing is shown or hidden: the file is the generator's to run
    expect(
      await generatorConfigProblem(`${dir}/keys/host.key --x`, {}, { ...policy, kind: 'none' }),
    ).toBeNull();
  });

  it('is what the hello answers to --check-generator', async () => {
    expect(await checkGenerator(null, `${dir}/keys/host.key`, {}, policy)).toMatchObject({
      ok: false,
      code: 'EGJ_GENERATOR_CONFIG',
    });
    expect(await checkGenerator(null, `${dir}/gen.sh`, {}, policy)).toEqual({
      ok: true,
      generator: `${dir}/gen.sh`,
      pinned: false,
    });
  });

  it('refuses a requested command no request can carry (past 4,096 characters, or a NUL), as the request schema does', async () => {
    const longest = `true ${'#'.repeat(MAX_GENERATOR_CHARS - 5)}`;
    expect(await checkGenerator(null, longest, {}, policy)).toMatchObject({ ok: true });
    expect(checkRequest({ ...REQUEST, generator: longest }).ok).toBe(true);
    for (const command of [`${longest}#`, 'true\0x']) {
      expect(await checkGenerator(null, command, {}, policy)).toEqual({
        ok: false,
        code: 'EGJ_GENERATOR_CONFIG',
        message: generatorCommandProblem(command),
      });
      expect(checkRequest({ ...REQUEST, generator: command }).ok).toBe(false);
    }
    expect(generatorCommandProblem(`${longest}#`)).toMatch(/^the generator command is 4,097 characters/);
  });
});

const REQUEST = {
  type: 'run',
  key: 'a'.repeat(64),
  job_digest: 'b'.repeat(64),
  epoch: 1,
  worker_id: 'w',
  generator: 'true',
  timeout_ms: 1000,
};
