// The packed tarball is all a machine needs: `npm pack`, then `npm install -g --offline` of it into a
// fresh prefix with an empty npm cache (so nothing can come from the registry or a warm cache), then the
// installed `genjob` runs a whole job locally, confined: mint, work, verify, apply.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-store.js';

const PKG = new URL('../..', import.meta.url).pathname;

describe('the packed tarball', () => {
  it('installs offline with an empty npm cache, and the installed genjob mints, works, verifies and applies', async () => {
    const base = tempDir('genjob-pack-');
    const prefix = join(base, 'prefix');
    const cache = join(base, 'npm-cache');
    mkdirSync(cache);
    // npm's own settings only: no user or global npmrc, no registry, nothing cached
    const npmEnv = {
      ...process.env,
      npm_config_userconfig: join(base, 'npmrc'),
      npm_config_globalconfig: join(base, 'global-npmrc'),
      npm_config_cache: cache,
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
    };
    // --ignore-scripts: pack the dist/ that `npm test` just built, without rebuilding it under the other tests
    const pack = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', base], {
      cwd: PKG,
      env: npmEnv,
      reject: false,
    });
    expect(pack.exitCode, pack.stderr).toBe(0);
    const tarball = join(base, (JSON.parse(pack.stdout) as Array<{ filename: string }>)[0]!.filename);

    const install = await execa('npm', ['install', '-g', '--offline', '--prefix', prefix, tarball], {
      cwd: base,
      env: npmEnv,
      reject: false,
    });
    expect(install.exitCode, install.stderr).toBe(0);
    const installed = join(prefix, 'lib/node_modules/genjob');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    expect(manifest.dependencies ?? {}).toEqual({});
    // nothing that runs at install time (npm would warn, or ask for approval)
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(manifest.scripts?.[hook], hook).toBeUndefined();
    expect(existsSync(join(installed, 'node_modules'))).toBe(false);

    const bin = join(prefix, 'bin', 'genjob');
    const env = {
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
      HOME: join(base, 'home'),
      XDG_CACHE_HOME: join(base, 'xdg-cache'),
    };
    const genjob = (args: string[]) =>
      execa(bin, args, { cwd: join(base, 'repo'), env, extendEnv: false, reject: false });
    const version = await execa(bin, ['--version'], { env, extendEnv: false, reject: false });
    expect(version).toMatchObject({ exitCode: 0, stdout: manifest.version });

    mkdirSync(join(base, 'repo', 'src'), { recursive: true });
    writeFileSync(join(base, 'repo', 'src/a.txt'), 'one\n');
    execFileSync('git', ['init', '-q'], { cwd: join(base, 'repo') });
    const mint = await genjob(['mint', '--json', '-m', 'Add a line', 'src/a.txt']);
    expect(mint.exitCode, mint.stderr).toBe(0);
    const key = (JSON.parse(mint.stdout) as { key: string }).key;
    const work = await genjob(['work', '--once', '--generator', 'echo two >> src/a.txt']);
    expect(work.exitCode, work.stderr).toBe(0);
    const receipt = JSON.parse(readFileSync(join(base, 'repo/.gen/receipts', `${key}.json`), 'utf8'));
    expect(receipt).toMatchObject({ status: 'ok', sandbox: { kind: 'bwrap' } });
    expect((await genjob(['verify', key])).exitCode).toBe(0);
    const apply = await genjob(['apply', key]);
    expect(apply.exitCode, apply.stderr).toBe(0);
    expect(readFileSync(join(base, 'repo', 'src/a.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(readdirSync(join(base, 'repo/.gen/applied'))).toEqual([`${key}.json`]);
  });
});
