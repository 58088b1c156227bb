// genjob serve answers its hello before it loads the code only a request needs (zod's schemas, execa,
// node-tar: most of its start-up), and loads that code right after, while the worker claims and spools.
// A module hook writes the packages in each chunk of dist/ as Node loads it, to the same file serve
// writes its hello to, synchronously: the file's order is the order things happened.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-store.js';
import { CLI } from './helpers.js';

const HOOK = `
import { writeSync } from 'node:fs';
export async function load(url, ctx, next) {
  const r = await next(url, ctx);
  if (url.includes('/dist/')) {
    const text = typeof r.source === 'string' ? r.source : new TextDecoder().decode(r.source);
    const pkgs = new Set([...text.matchAll(/^\\/\\/ .*?node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//gm)].map((m) => m[1]));
    writeSync(2, 'loaded ' + url.split('/').pop() + ' [' + [...pkgs].join(' ') + ']\\n');
  }
  return r;
}`;

describe('genjob serve start-up', () => {
  it('sends its hello before loading zod, execa or node-tar, and loads them after it', () => {
    const dir = tempDir('gj-serve-startup-');
    const hooks = join(dir, 'hooks.mjs');
    writeFileSync(hooks, HOOK);
    const register = join(dir, 'register.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nimport { pathToFileURL } from 'node:url';\nregister(pathToFileURL(${JSON.stringify(hooks)}));\n`,
    );
    const out = join(dir, 'out');
    // stdin at its end: serve says hello, finds no request, and exits once what it started loading is in
    execFileSync(
      'sh',
      [
        '-c',
        `"$0" "$1" serve --session --check-generator=true --cache-dir "$2" </dev/null >"$3" 2>&1`,
        process.execPath,
        CLI,
        join(dir, 'cache'),
        out,
      ],
      { env: { ...process.env, NODE_OPTIONS: `--import=${register}` } },
    );
    const text = readFileSync(out, 'utf8');
    const hello = text.indexOf('GJ1 {"type":"hello"');
    expect(hello).toBeGreaterThan(0);
    const packages = (part: string) => new Set(part.match(/(?<=\[| )[@a-z][^ \]]*/g));
    const before = packages(text.slice(0, hello));
    const after = packages(text.slice(hello));
    expect(text.slice(0, hello)).toContain('loaded serve-');
    for (const heavy of ['zod', 'execa', 'tar']) expect(before.has(heavy)).toBe(false);
    for (const heavy of ['zod', 'execa', 'tar']) expect(after.has(heavy)).toBe(true);
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
});
