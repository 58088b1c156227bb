// Exit and error codes are public API (docs/exit-codes.md): the README and --help list the same exit
// codes as its table, and every EGJ_* code the source can raise must be
// documented there, and the doc must not list codes that no longer exist.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES_HELP } from '../../src/cli/program.js';
import { EXIT } from '../../src/core/exit-codes.js';

const root = new URL('../..', import.meta.url).pathname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const CODE = /EGJ_[A-Z][A-Z_]*[A-Z]/g;
const inSource = new Set(
  sourceFiles(join(root, 'src')).flatMap((f) => readFileSync(f, 'utf8').match(CODE) ?? []),
);
const doc = readFileSync(join(root, 'docs/exit-codes.md'), 'utf8');
const inDoc = new Set([...doc.matchAll(/`(EGJ_[A-Z_]+)`/g)].map((m) => m[1]!));

describe('docs/exit-codes.md', () => {
  it('documents every error code the source can raise', () => {
    expect([...inSource].filter((c) => !inDoc.has(c)).sort()).toEqual([]);
  });

  it('lists no code the source no longer has', () => {
    expect([...inDoc].filter((c) => !inSource.has(c)).sort()).toEqual([]);
  });
});

describe('the exit codes', () => {
  /** The codes of the table at the top of docs/exit-codes.md. */
  const table = doc
    .split('\n## ')[0]!
    .split('\n')
    .flatMap((l) => /^\| (\d+) \|/.exec(l)?.[1] ?? []);
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const inReadme = [
    ...(/Exit codes are the same for every\s+command:([\s\S]*?)\(see/.exec(readme)?.[1] ?? '').matchAll(
      /\*\*(\d+)\*\*/g,
    ),
  ].map((m) => m[1]!);
  const inHelp = [...EXIT_CODES_HELP.matchAll(/(?:: |, |\n)(\d+) /g)].map((m) => m[1]!);

  it('are listed alike by docs/exit-codes.md, the README and genjob --help, every code of EXIT among them', () => {
    expect(inReadme).toEqual(table);
    expect(inHelp).toEqual(table);
    for (const code of Object.values(EXIT)) expect(table).toContain(String(code));
  });
});
