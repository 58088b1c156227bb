// Shadow modules are never imported by live paths: the worker, the store, apply, verify and the host
// reach src/shadow/ by no chain of imports, so no live code path can pick up shadow material.
// Only the CLI's own shadow commands (work --shadow, compare, promote) import it, and the review page
// (src/report/, which shows shadow answers beside live ones and writes nothing but its pages), which in
// turn no live module imports.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(new URL('../../src', import.meta.url).pathname);
const SHADOW_COMMANDS = [
  'commands/shadow-work.ts',
  'commands/compare.ts',
  'commands/promote.ts',
  'commands/shadow-plane.ts', // the planes a shadow command may name: compare's and promote's one check
  'cli/program.ts',
];

/** The review page's modules: readers of shadow material, reached only through its command. */
const isReport = (r: string) => r.startsWith('report/') || r === 'commands/report.ts';
const sanctioned = (r: string) => SHADOW_COMMANDS.includes(r) || isReport(r);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Every relative import (static or dynamic) of a file, resolved to its .ts path. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(?\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]!);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

describe('import direction', () => {
  const graph = new Map(files(SRC).map((f) => [f, importsOf(f)]));
  const rel = (f: string) => relative(SRC, f);

  function reachesShadow(from: string, seen = new Set<string>()): string[] | null {
    if (seen.has(from)) return null;
    seen.add(from);
    for (const next of graph.get(from) ?? []) {
      if (sanctioned(rel(next))) continue; // the sanctioned entry points
      if (rel(next).startsWith('shadow/')) return [rel(from), rel(next)];
      const path = reachesShadow(next, seen);
      if (path) return [rel(from), ...path];
    }
    return null;
  }

  it('has shadow modules to guard', () => {
    expect([...graph.keys()].filter((f) => rel(f).startsWith('shadow/')).length).toBeGreaterThan(2);
  });

  it('leads from no live module to src/shadow/', () => {
    const offenders = [...graph.keys()]
      .filter((f) => !rel(f).startsWith('shadow/') && !sanctioned(rel(f)))
      .map((f) => reachesShadow(f))
      .filter((p): p is string[] => p !== null);
    expect(offenders).toEqual([]);
  });

  it('lets no live module import the review page (its exemption opens no route)', () => {
    const importers = [...graph.entries()]
      .filter(([f]) => !isReport(rel(f)) && rel(f) !== 'cli/program.ts')
      .filter(([, imports]) => imports.some((i) => isReport(rel(i))))
      .map(([f]) => rel(f));
    expect(importers).toEqual([]);
  });
});
