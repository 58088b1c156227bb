// The checkers a repository declares: none without a config file (a dangling link is none either), the
// names a config declares, and a malformed config refused as loadCheckers refuses it.
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { declaredCheckers } from '../../src/check/declared-checkers.js';
import { CONFIG_FILE } from '../../src/cli/config-name.js';
import { tempStore } from '../helpers/temp-store.js';

describe('declaredCheckers', () => {
  it('is none without a config file, or with a link to nothing', async () => {
    const store = tempStore('genjob-declared-');
    expect(await declaredCheckers(store)).toEqual([]);
    symlinkSync(join(store.root, 'nowhere.json'), join(store.root, CONFIG_FILE));
    expect(await declaredCheckers(store)).toEqual([]);
  });

  it("names the config's checkers, and refuses a malformed config (EGJ_CONFIG)", async () => {
    const store = tempStore('genjob-declared-');
    const config = join(store.root, CONFIG_FILE);
    writeFileSync(config, JSON.stringify({ checkers: { tests: { run: 'true' }, lint: { run: 'true' } } }));
    expect((await declaredCheckers(store)).sort()).toEqual(['lint', 'tests']);
    writeFileSync(config, '{"checkers": ');
    await expect(declaredCheckers(store)).rejects.toMatchObject({ code: 'EGJ_CONFIG' });
  });
});
