// What the built bundle holds (read from its source map, dist/genjob.cjs.map; `npm test` builds first):
// every command's start reads, checks and runs the whole bundle, so a package pulled in whole for one
// class costs every worker and serve. node-tar is imported by module (its header and pax), never by its
// index, which would load its pack, unpack, list and replace too.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const MAP = new URL('../../dist/genjob.cjs.map', import.meta.url);

function bundledSources(): string[] {
  return (JSON.parse(readFileSync(MAP, 'utf8')) as { sources: string[] }).sources;
}

describe('the built bundle', () => {
  it("holds node-tar's header and pax modules and none of the rest of node-tar", () => {
    const tar = bundledSources()
      .filter((s) => s.includes('node_modules/tar/'))
      .map((s) => s.replace(/^.*node_modules\/tar\//, ''))
      .sort();
    expect(tar).toEqual(['src/header.ts', 'src/large-numbers.ts', 'src/pax.ts', 'src/types.ts']);
  });
});
