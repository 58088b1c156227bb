import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { smallDisk } from '../helpers/small-disk.js';
import { tempDir } from '../helpers/temp-store.js';
import { leftovers } from './fault-sweep.js';
import { runCli, snapshot } from './helpers.js';

const disk = smallDisk('genjob-apply-enospc-', 'apply-enospc test');
const { mnt, unfill } = disk;
const mountProblem = disk.problem;
const host = tempDir('genjob-apply-enospc-host-', tmpdir(), 'file');
/** Fill the disk so that only `pages` pages or `inodes` inodes stay free. */
const fill = (level: { pages?: number; inodes?: number }) =>
  disk.fill({
    bytes: (level.pages ?? 0) * 4096,
    ...(level.inodes === undefined ? {} : { inodes: level.inodes }),
  });

const env = { XDG_CACHE_HOME: join(host, 'cache') };

/** How many journal lines say the key was applied (every segment of .gen/journal.d/). */
function appliedLines(repo: string): number {
  const dir = join(repo, '.gen', 'journal.d');
  return readdirSync(dir)
    .flatMap((n) => readFileSync(join(dir, n), 'utf8').split('\n'))
    .filter((l) => l.includes('"event":"applied"')).length;
}
const base = join(mnt, 'base');
const ls = (repo: string, d: string) => {
  try {
    return readdirSync(join(repo, '.gen', d));
  } catch {
    return [];
  }
};

describe.skipIf(mountProblem !== undefined)('apply on a full disk (tmpfs)', () => {
  let key: string;
  let before: ReturnType<typeof snapshot>;
  let after: ReturnType<typeof snapshot>;

  beforeAll(async () => {
    mkdirSync(join(base, 'src'), { recursive: true });
    writeFileSync(join(base, 'src/user.py'), 'v1\n');
    await execa('git', ['init', '-q'], { cwd: base });
    rmSync(join(base, '.git', 'hooks'), { recursive: true, force: true }); // inodes are scarce here
    const gen = join(host, 'gen.sh');
    writeFileSync(gen, '#!/bin/sh\necho v2 > src/user.py\nmkdir -p a\necho new > a/x.md\n', { mode: 0o755 });
    const ok = async (args: readonly string[]) => {
      const r = await runCli(args, { cwd: base, env });
      if (r.exitCode !== 0) throw new Error(`genjob ${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
      return r.stdout;
    };
    await ok(['init']);
    key = JSON.parse(await ok(['mint', '--json', '-m', 'x', 'src/user.py', '--create', 'a/x.md'])).key;
    await ok(['work', '--once', '--no-sandbox', '--lease-ttl', '3600', '--generator', gen]);
    before = snapshot(base);
    const probe = join(mnt, 'probe');
    await execa('cp', ['-a', base, probe]);
    await ok(['apply', key, '--root', probe]);
    after = snapshot(probe);
    rmSync(probe, { recursive: true, force: true });
    expect([...after.keys()]).toEqual(expect.arrayContaining(['a/', 'a/x.md', 'src/user.py']));
    expect([...before.keys()]).not.toContain('a/');
  });

  const LEVELS = [
    ...Array.from({ length: 13 }, (_, pages) => ({ pages })),
    ...Array.from({ length: 13 }, (_, inodes) => ({ inodes })),
  ];

  it('leaves the tree as it was and says nothing was written, or says the apply is pending; one apply later finishes it', async () => {
    const seen: string[] = [];
    for (const level of LEVELS) {
      const repo = join(mnt, 'try');
      rmSync(repo, { recursive: true, force: true });
      unfill();
      await execa('cp', ['-a', base, repo]);
      fill(level);
      const r = await runCli(['apply', key], { cwd: repo, env });
      unfill();
      const now = snapshot(repo);
      const context = `${JSON.stringify(level)}: exit ${r.exitCode}\n${r.stderr}`;
      expect(r.stderr, context).not.toMatch(/internal error|\n\s+at /);
      expect(
        leftovers(repo).filter((f) => !f.startsWith('.gen/')),
        context,
      ).toEqual([]);
      if (r.exitCode === 0) {
        expect(now, context).toEqual(after);
        seen.push(`${JSON.stringify(level)}→0`);
      } else {
        expect(r.exitCode, context).toBe(5);
        expect(r.stderr, context).toMatch(
          /^genjob: EGJ_IO: \/.*: [\w ()]+ failed: no space left on device \(ENOSPC\)/,
        );
        if (ls(repo, 'applying').length === 0) {
          // nothing of it happened: the tree byte for byte as it was and the job received; a failure in
          // the tree (a temp, a directory) or in the apply's own records says so
          expect(now, context).toEqual(before);
          expect(ls(repo, 'received'), context).toEqual([`${key}.json`]);
          const inTree = !r.stderr.startsWith(`genjob: EGJ_IO: ${repo}/.gen/`);
          if (inTree || r.stderr.includes('/.gen/objects/'))
            expect(r.stderr, context).toMatch(/; nothing was written\n$/);
          seen.push(`${JSON.stringify(level)}→${inTree ? 'nothing (tree)' : 'nothing'}`);
        } else {
          // never half of it: every file written, and the error says what is pending and what ends it
          expect(now, context).toEqual(after);
          const pending = [
            `.gen/applying/${key}.json is kept, so \`genjob apply\` finishes it\n`,
            'the job is applied, its journal line not written: the next `genjob apply` writes it\n',
          ];
          expect(
            pending.some((p) => r.stderr.endsWith(p)),
            context,
          ).toBe(true);
          seen.push(`${JSON.stringify(level)}→pending`);
        }
      }
      const again = await runCli(['apply', key], { cwd: repo, env });
      expect(again.exitCode, `${context}\nthen: ${again.stderr}`).toBe(0);
      expect(snapshot(repo), context).toEqual(after);
      expect(ls(repo, 'applying'), context).toEqual([]);
      expect(ls(repo, 'applied'), context).toEqual([`${key}.json`]);
      expect(ls(repo, 'received'), context).toEqual([]);
      expect(leftovers(repo), context).toEqual([]);
      expect(appliedLines(repo), context).toBe(1);
    }
    console.log(`apply on a full disk: ${seen.join(' ')}`);
    // the levels reach the tree writes: some fail there, with nothing written
    expect(seen.filter((s) => s.endsWith('→nothing (tree)')).length).toBeGreaterThan(0);
  });
});
