// genjob.config.json: work's defaults from the repository root; flags override; unknown keys and
// wrong types are refused naming the file and the key, before anything is claimed.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { genDir, makeSandbox, mintKey } from './helpers.js';

describe('genjob.config.json', () => {
  it('gives work its generator; a flag overrides it', async () => {
    const sb = await makeSandbox();
    const fromConfig = sb.script('config-gen.sh', 'echo "# from config" >> README.md');
    const fromFlag = sb.script('flag-gen.sh', 'echo "# from flag" >> README.md');
    writeFileSync(
      join(sb.repo, 'genjob.config.json'),
      JSON.stringify({ generator: fromConfig, timeout: 30 }),
    );
    const a = await mintKey(sb, 'One', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--quiet'])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, '.gen', 'out', a, 'README.md'), 'utf8')).toMatch(/# from config\n$/);
    const b = await mintKey(sb, 'Two', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--quiet', '--generator', fromFlag])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, '.gen', 'out', b, 'README.md'), 'utf8')).toMatch(/# from flag\n$/);
  });

  const bad = [
    { name: 'an unknown key', body: { generatr: 'x' }, rule: 'unknown key "generatr"' },
    { name: 'an unknown ssh key', body: { ssh: { prot: 22 } }, rule: 'unknown key "ssh.prot"' },
    { name: 'a wrong type', body: { concurrency: 'four' }, rule: '"concurrency": ' },
  ];
  for (const c of bad) {
    it(`refuses ${c.name} (exit 2), claiming nothing`, async () => {
      const sb = await makeSandbox();
      const file = join(sb.repo, 'genjob.config.json');
      writeFileSync(file, JSON.stringify(c.body));
      const key = await mintKey(sb, 'One', ['README.md']);
      const r = await sb.genjob(['work', '--once', '--generator', 'true']);
      expect(r.exitCode).toBe(2);
      expect(r.stderr.startsWith(`genjob: EGJ_CONFIG: ${file}: ${c.rule}`)).toBe(true);
      expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    });
  }
});
