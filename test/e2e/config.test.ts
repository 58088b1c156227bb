// genjob.config.json: work's defaults from the repository root; flags override; unknown keys and
// wrong types are refused naming the file and the key, before anything is claimed; "hosts" is a pool.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import { genDir, makeSandbox, mintKey } from './helpers.js';
import { mintMany, sshHostBlock } from './pool-helpers.js';
import { genjob, journal, remoteServe, sandbox, genDir as sshGenDir } from './ssh-helpers.js';

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

describe('genjob.config.json "hosts"', () => {
  // two servers (two aliases of one server share one ssh account and control socket: refused below)
  const servers = [useSshd(), useSshd()];

  /** An ssh client config naming the two servers hA and hB, and hA again as hA2. */
  function twoHosts(dir: string): string {
    const block = sshHostBlock;
    const file = join(dir, 'pool_ssh_config');
    writeFileSync(
      file,
      block('hA', servers[0]!()) + block('hB', servers[1]!()) + block('hA2', servers[0]!()),
    );
    return file;
  }

  const cases = [
    {
      name: '"hosts" feeds work a pool like repeated --host: jobs go to every host of the list',
      hosts: { hosts: ['hA', '2/hB'] },
      expected: ['hA', 'hB'],
    },
    { name: '"host" gives work its one host', hosts: { host: 'hB' }, expected: ['hB'] },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const sb = await sandbox({ 'src/a.txt': 'a\n' });
      try {
        const keys = mintMany(sb, 6);
        const gen = join(sb.dir, 'gen.sh');
        writeFileSync(gen, 'sleep 0.3; echo x >> src/a.txt\n');
        writeFileSync(
          join(sb.repo, 'genjob.config.json'),
          JSON.stringify({
            generator: `sh ${gen}`,
            ...c.hosts,
            // a cache per host, as on separate machines
            ssh: {
              config: twoHosts(sb.dir),
              remote_cmd: remoteServe(`${sb.hostCache}/$(echo $SSH_CONNECTION | cut -d' ' -f4)`),
            },
          }),
        );
        const r = await genjob(sb, ['work', '--drain', '--json', '--no-sandbox']);
        expect(r.exitCode, `${r.stderr}\n${r.stdout}`).toBe(0);
        expect(sshGenDir(sb, 'received')).toEqual(keys.map((k) => `${k}.json`).sort());
        const where = new Set(
          journal(sb)
            .filter((e) => e.event === 'received')
            .map((e) => String(e.destination).replace(/:\d+$/, '')),
        );
        expect([...where].sort()).toEqual(c.expected);
      } finally {
        await sb.cleanup();
      }
    });
  }

  it('refuses two aliases of one account in the pool (exit 2), claiming nothing', async () => {
    const sb = await sandbox({ 'src/a.txt': 'a\n' });
    try {
      const keys = mintMany(sb, 2);
      writeFileSync(
        join(sb.repo, 'genjob.config.json'),
        JSON.stringify({
          hosts: ['hA', 'hB', 'hA2'],
          ssh: { config: twoHosts(sb.dir), remote_cmd: remoteServe(sb.hostCache) },
        }),
      );
      const r = await genjob(sb, ['work', '--drain', '--generator', 'true', '--no-sandbox']);
      expect(r.exitCode, r.stderr).toBe(2);
      expect(r.stderr).toMatch(
        /^genjob: EGJ_USAGE: hA and hA2 reach the same account \(.+@127\.0\.0\.1:\d+\); give it once with a slot count \(N\/hA\)/,
      );
      expect(sshGenDir(sb, 'queue')).toEqual(keys.map((k) => `${k}.json`).sort());
    } finally {
      await sb.cleanup();
    }
  });

  it('refuses "host" and "hosts" together (exit 2), claiming nothing', async () => {
    const sb = await makeSandbox();
    const file = join(sb.repo, 'genjob.config.json');
    writeFileSync(file, JSON.stringify({ host: 'a', hosts: ['b'] }));
    const key = await mintKey(sb, 'One', ['README.md']);
    const r = await sb.genjob(['work', '--once', '--generator', 'true']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr.startsWith(`genjob: EGJ_CONFIG: ${file}: "host" and "hosts" both given`)).toBe(true);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
  });
});
