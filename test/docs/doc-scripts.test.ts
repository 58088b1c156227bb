// What a script in README.md and docs/*.md does with genjob's output holds for any size of queue: a
// loop over `status --json`'s jobs names every job (--all), not the 50 newest status lists by default.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const PKG = resolve(import.meta.dirname, '../..');
const FILES = ['README.md', ...readdirSync(join(PKG, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
  f.endsWith('.md'),
);

describe('scripts in the docs', () => {
  it('list every job when they loop over status --json (--all, not the 50 newest)', () => {
    const loops: string[] = [];
    for (const file of FILES)
      readFileSync(join(PKG, file), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/genjob status\b[^|]*--json/.test(line) && /\.jobs\[\]/.test(line) && !/--all\b/.test(line))
            loops.push(`${file}:${i + 1}: ${line.trim()}`);
        });
    expect(loops).toEqual([]);
  });
});
