// docs/cli.md is kept equal to the CLI: every command of buildProgram()'s commander tree has a
// `### genjob <command>` section whose table lists exactly its own flags, every command but serve
// and help takes --json and --root, and the environment table names exactly the variables src/ reads.
// A failure lists each missing or extra item and where to fix it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';

const root = new URL('../..', import.meta.url).pathname;
const doc = readFileSync(join(root, 'docs/cli.md'), 'utf8');
const COMMON = ['--root', '--json', '--debug'];
/** Commands that have no repository and no JSON result (see their sections). */
// host-side commands (serve, cache) never read a repository, so they take no --root
const WITHOUT_COMMON = new Set(['serve', 'cache', 'cache prune', 'help']);
// the cache commands take the others, as the page says
const WITHOUT_ROOT = new Set(['cache', 'cache prune']);

function commands(c: Command, prefix = ''): Array<{ name: string; cmd: Command }> {
  return c.commands.flatMap((s) => {
    const name = `${prefix} ${s.name()}`.trim();
    return [{ name, cmd: s }, ...commands(s, name)];
  });
}

/** Each `### genjob <name>` section's long flags, from the first column of its table rows. */
function docSections(): Map<string, Set<string>> {
  const sections = new Map<string, Set<string>>();
  let current: Set<string> | undefined;
  for (const line of doc.split('\n')) {
    const head = /^### genjob (.+)$/.exec(line);
    if (head) {
      current = new Set();
      sections.set(head[1]!.trim(), current);
    } else if (/^## /.test(line)) current = undefined;
    else if (current && line.startsWith('| `')) {
      const first = /^\| `([^`]+)`/.exec(line)![1]!;
      for (const flag of first.match(/--[a-z][a-z-]*/g) ?? []) current.add(flag);
    }
  }
  return sections;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Variables src/ reads: env.NAME, env['NAME'] and helpers called as f(env, 'NAME'). */
function envRead(): Set<string> {
  const read = /\benv(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])|\(env, ['"]([A-Z][A-Z0-9_]*)['"]/g;
  const names = new Set<string>();
  for (const f of sourceFiles(join(root, 'src')))
    for (const m of readFileSync(f, 'utf8').matchAll(read)) names.add((m[1] ?? m[2] ?? m[3])!);
  return names;
}

function envDocumented(): Set<string> {
  const part = doc.split(/^## Environment variables$/m)[1]?.split(/^## /m)[0] ?? '';
  return new Set([...part.matchAll(/^\| `([A-Z][A-Z0-9_]*)`/gm)].map((m) => m[1]!));
}

describe('docs/cli.md', () => {
  const tree = commands(buildProgram());
  const sections = docSections();

  it('has a section for every command and none for a command that does not exist', () => {
    const problems = [
      ...tree.filter((c) => !sections.has(c.name)).map((c) => `missing: a "### genjob ${c.name}" section`),
      ...[...sections.keys()]
        .filter((n) => !tree.some((c) => c.name === n))
        .map((n) => `extra: "### genjob ${n}" names no command`),
    ];
    expect(problems).toEqual([]);
  });

  it("lists exactly each command's own flags in its section's table", () => {
    const problems: string[] = [];
    for (const { name, cmd } of tree) {
      const documented = sections.get(name);
      if (!documented) continue;
      const own = cmd.options.map((o) => o.long!).filter((f) => !COMMON.includes(f));
      for (const f of own)
        if (!documented.has(f)) problems.push(`missing: \`${f}\` in the table of "### genjob ${name}"`);
      for (const f of documented)
        if (!own.includes(f)) problems.push(`extra: \`${f}\` in "### genjob ${name}" is not a flag of it`);
    }
    expect(problems).toEqual([]);
  });

  it('every command but the host-side serve and cache, and help, takes --json, --root and --debug', () => {
    const problems = tree
      .filter((c) => !WITHOUT_COMMON.has(c.name))
      .flatMap((c) =>
        COMMON.filter((f) => !c.cmd.options.some((o) => o.long === f)).map(
          (f) => `genjob ${c.name} lacks ${f}`,
        ),
      );
    expect(problems).toEqual([]);
  });

  it('cache and cache prune take --json and --debug but no --root, as the page says', () => {
    const problems = tree
      .filter((c) => WITHOUT_ROOT.has(c.name))
      .flatMap((c) => {
        const has = (f: string) => c.cmd.options.some((o) => o.long === f);
        return [
          ...['--json', '--debug'].filter((f) => !has(f)).map((f) => `genjob ${c.name} lacks ${f}`),
          ...(has('--root') ? [`genjob ${c.name} takes --root`] : []),
        ];
      });
    expect(problems).toEqual([]);
    expect(doc).toContain(
      'Every command except `serve` and `help` takes these, but `cache` and `cache prune`, which run on a\ngenerator host and read no repository, take no `--root` (only `--json` and `--debug`):',
    );
  });

  it('documents every environment variable src/ reads, and no other', () => {
    const read = envRead();
    const documented = envDocumented();
    const problems = [
      ...[...read]
        .filter((v) => !documented.has(v))
        .map((v) => `missing: a row for \`${v}\` under "## Environment variables"`),
      ...[...documented]
        .filter((v) => !read.has(v))
        .map((v) => `extra: \`${v}\` is documented but src/ does not read it`),
    ];
    expect(problems.sort()).toEqual([]);
  });
});
