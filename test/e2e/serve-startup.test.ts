// genjob serve answers its hello before it loads the code only a request needs (zod's schemas, execa,
// node-tar: most of its start-up), and loads that code right after, while the worker claims and spools;
// push, which only sends bytes, loads no schema library at all. A trace of the bundle's module inits
// (module-trace.ts) says which modules and packages run, in order with the command's own output.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packagesIn, traced } from '../helpers/module-trace.js';
import { tempDir } from '../helpers/temp-store.js';
import { CLI } from './helpers.js';

describe('genjob serve start-up', () => {
  it('sends its hello before loading zod, execa or node-tar, and loads them after it', () => {
    const dir = tempDir('gj-serve-startup-');
    // stdin at its end: serve says hello, finds no request, and exits once what it started loading is in
    const text = traced('"$0" "$1" serve --session --check-generator=true --cache-dir "$2" </dev/null', [
      process.execPath,
      CLI,
      join(dir, 'cache'),
    ]);
    const hello = text.indexOf('GJ1 {"type":"hello"');
    expect(hello).toBeGreaterThan(0);
    const before = packagesIn(text.slice(0, hello));
    const after = packagesIn(text.slice(hello));
    expect(text.slice(0, hello)).toContain('loaded src/commands/serve.ts');
    for (const heavy of ['zod', 'execa', 'tar']) expect(before.has(heavy)).toBe(false);
    for (const heavy of ['zod', 'execa', 'tar']) expect(after.has(heavy)).toBe(true);
  });

  it('push with nothing to send loads no schema library (zod): it sends records as bytes', () => {
    const dir = tempDir('gj-push-startup-');
    execFileSync('git', ['init', '-q', join(dir, 'r')]);
    execFileSync('git', ['init', '-q', '--bare', join(dir, 'remote.git')]);
    const text = traced(
      '"$0" "$1" push "$2"',
      [process.execPath, CLI, join(dir, 'remote.git')],
      join(dir, 'r'),
    );
    expect(text).toContain('loaded src/commands/push.ts');
    expect(text).toContain('nothing to push');
    expect(packagesIn(text).has('zod')).toBe(false);
  });

  it('still reads the "serve" section of the user\'s own config file when there is one', () => {
    const dir = tempDir('gj-serve-config-');
    mkdirSync(join(dir, 'config', 'genjob'), { recursive: true });
    writeFileSync(
      join(dir, 'config', 'genjob', 'config.json'),
      JSON.stringify({ serve: { generator: '/nonexistent/gen-from-config' } }),
    );
    const hello = (env: NodeJS.ProcessEnv) =>
      execFileSync(
        process.execPath,
        [CLI, 'serve', '--session', '--check-generator', '--cache-dir', join(dir, 'c')],
        {
          input: '',
          env: { ...process.env, ...env },
        },
      ).toString('utf8');
    expect(hello({ XDG_CONFIG_HOME: join(dir, 'config') })).toContain('gen-from-config');
    expect(hello({ XDG_CONFIG_HOME: join(dir, 'none') })).toContain('EGJ_NO_GENERATOR');
  });

  it('takes GENJOB_CACHE_DIR set but empty as unset: no cache (nor its secret) in the current directory', () => {
    const dir = tempDir('gj-serve-cache-');
    mkdirSync(join(dir, 'cwd'));
    const r = spawnSync(process.execPath, [CLI, 'serve', '--session'], {
      cwd: join(dir, 'cwd'),
      input: '',
      env: { ...process.env, GENJOB_CACHE_DIR: '', XDG_CACHE_HOME: join(dir, 'xdg') },
    });
    expect(r.stdout.toString('utf8')).toMatch(/^GJ1 \{"type":"hello"/);
    expect(readdirSync(join(dir, 'cwd'))).toEqual([]);
    expect(readdirSync(join(dir, 'xdg', 'genjob'))).toContain('results');
  });

  it('pins no empty generator: GENJOB_GENERATOR set empty reads as unset, a blank --generator is refused', () => {
    const dir = tempDir('gj-serve-pin-');
    const serve = (args: string[], env: NodeJS.ProcessEnv) =>
      spawnSync(process.execPath, [CLI, 'serve', '--session', '--cache-dir', join(dir, 'c'), ...args], {
        input: '',
        env: { ...process.env, XDG_CONFIG_HOME: join(dir, 'none'), ...env },
      });
    // before, "" was pinned: the hello said ok, and every job ran an empty command and came back ok, unchanged
    const unset = serve(['--check-generator'], { GENJOB_GENERATOR: '' });
    expect(unset.stdout.toString('utf8')).toContain('EGJ_NO_GENERATOR');
    const blank = serve(['--generator', ' '], {});
    expect(blank.status).toBe(2);
    expect(blank.stderr.toString('utf8')).toBe(
      'genjob: EGJ_USAGE: --generator: the generator command is empty\n',
    );
  });
});
