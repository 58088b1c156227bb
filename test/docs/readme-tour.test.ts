// The README's quick tour is where a first hour starts: its first command is the one every repository
// needs before any other, `genjob init` (the tour itself runs in examples.test.ts).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

describe("the README's quick tour", () => {
  it('runs genjob init first', () => {
    const tour = readme.split('\n## A quick tour\n')[1]!.split('\n## ')[0]!;
    // the first shown block (hidden set-up blocks sit in HTML comments)
    const shown = tour.replace(/<!--[\s\S]*?-->/g, '');
    const block = /```sh runnable\n([\s\S]*?)```/.exec(shown)![1]!;
    const commands = block.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#'));
    expect(commands[0]).toBe('genjob init');
  });

  it('says in visible text what it assumes, or creates it in a shown block (set-up in comments is not seen)', () => {
    const tour = readme.split('\n## A quick tour\n')[1]!.split('\n## ')[0]!;
    const shown = tour.replace(/<!--[\s\S]*?-->/g, '');
    const prose = shown.replace(/```[\s\S]*?```/g, '');
    const blocks = [...shown.matchAll(/```sh runnable\n([\s\S]*?)```/g)].map((m) => m[1]!).join('\n');
    for (const assumed of [
      'my-coding-cli',
      'free-box',
      'origin',
      'my-branch',
      '~/.config/genjob/config.json',
    ])
      expect(prose, assumed).toContain(assumed);
    for (const made of ['> task.md', '> genjob.config.json']) expect(blocks, made).toContain(made);
  });
});
