import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeAll, describe, expect, it } from 'vitest';
import { smallDisk } from '../helpers/small-disk.js';
import { tempDir } from '../helpers/temp-store.js';
import { leftovers } from './fault-sweep.js';
import { DEMO_GENERATOR, FIXTURE, runCli, snapshot, TIMEOUT_INSTRUCTION } from './helpers.js';

const PATHS = ['src/user.py', 'tests/test_user.py'];
// the disk and the generator hosts' files beside it are the file's, not one test's: a mount point is busy
// until the end, and the hosts' files are kept for every test
const disk = smallDisk('genjob-fulldisk-', 'full-disk test');
const { mnt, fill, unfill } = disk;
const mountProblem = disk.problem;
const outside = tempDir('genjob-fulldisk-host-', tmpdir(), 'file');

interface Box {
  repo: string;
  env: Record<string, string>;
  gen: string;
  count: string;
}

async function freshBox(name: string): Promise<Box> {
  unfill();
  const repo = join(mnt, name);
  rmSync(repo, { recursive: true, force: true });
  await execa('cp', ['-a', FIXTURE, repo]);
  await execa('git', ['init', '-q'], { cwd: repo });
  rmSync(join(repo, '.git', 'hooks'), { recursive: true, force: true }); // inodes are scarce here
  const host = join(outside, name);
  rmSync(host, { recursive: true, force: true });
  mkdirSync(host, { recursive: true });
  const count = join(host, 'generator-runs');
  const gen = join(host, 'gen.sh');
  writeFileSync(gen, `#!/bin/sh\necho run >> ${JSON.stringify(count)}\nexec ${DEMO_GENERATOR}\n`, {
    mode: 0o755,
  });
  return { repo, gen, count, env: { XDG_CACHE_HOME: join(host, 'cache') } };
}

const cli = (b: Box, args: readonly string[]) => runCli(args, { cwd: b.repo, env: b.env });
const ls = (b: Box, d: string) => {
  try {
    return readdirSync(join(b.repo, '.gen', d));
  } catch {
    return [];
  }
};
const runs = (b: Box) => {
  try {
    return readFileSync(b.count, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
};

async function ok(b: Box, args: readonly string[]): Promise<string> {
  const r = await cli(b, args);
  if (r.exitCode !== 0) throw new Error(`genjob ${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
  return r.stdout;
}

const mint = async (b: Box): Promise<string> =>
  JSON.parse(await ok(b, ['mint', '--json', '-m', TIMEOUT_INSTRUCTION, ...PATHS])).key;
const workArgs = (b: Box) => ['work', '--once', '--no-sandbox', '--lease-ttl', '3600', '--generator', b.gen];

const LEVELS = [
  ...[0, 4096, 12_288, 24_576, 49_152].map((bytes) => ({ bytes })),
  ...[0, 2, 5, 9, 14].map((inodes) => ({ inodes })),
];

const SCENARIOS = [
  {
    name: 'mint',
    prepare: async (_b: Box) => {},
    args: (_b: Box) => ['mint', '-m', TIMEOUT_INSTRUCTION, ...PATHS],
  },
  { name: 'work', prepare: async (b: Box) => void (await mint(b)), args: workArgs },
  {
    name: 'apply',
    prepare: async (b: Box) => {
      await mint(b);
      await ok(b, workArgs(b));
    },
    args: (_b: Box) => ['apply', '--all'],
  },
  {
    // a check builds its private index and copy of the tree with git: git's own failure on the full
    // disk is the environment's too (exit 5), never bad input (2) nor a pass (0)
    name: 'check',
    prepare: async (b: Box) => {
      writeFileSync(join(b.repo, 'genjob.config.json'), JSON.stringify({ checkers: { t: { run: 'true' } } }));
      await execa('git', ['add', '-A'], { cwd: b.repo });
      await execa('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'base'], {
        cwd: b.repo,
      });
      await mint(b);
      await ok(b, workArgs(b));
    },
    args: (_b: Box) => ['check', '--all', '--no-sandbox'],
  },
];

/** git's words when the disk failed under it (a check's index and copy are git's to write). */
const GIT_DISK_FULL =
  /^genjob: EGJ_GIT: git [\w-]+ .*failed \(exit \d+\): .*(Out of diskspace|unable to write|No space left on device)/;

describe.skipIf(mountProblem !== undefined)('a really full disk (tmpfs, bytes and inodes)', () => {
  let applied: ReturnType<typeof snapshot>;
  beforeAll(async () => {
    const b = await freshBox('reference');
    await mint(b);
    await ok(b, workArgs(b));
    await ok(b, ['apply', '--all']);
    applied = snapshot(b.repo);
    rmSync(b.repo, { recursive: true, force: true });
  });

  for (const s of SCENARIOS) {
    it(`${s.name}: fails as EGJ_IO (ENOSPC) or succeeds, and a re-run after freeing space finishes the job once`, async () => {
      const seen: string[] = [];
      for (const level of LEVELS) {
        const b = await freshBox(`box-${s.name}`);
        await s.prepare(b);
        const before = runs(b);
        fill(level);
        const r = await cli(b, s.args(b));
        unfill();
        const context = `${s.name} with ${JSON.stringify(level)} free: exit ${r.exitCode}\n${r.stderr}`;
        expect(r.stderr, context).not.toMatch(/internal error|\n\s+at /);
        const lines = r.stderr.split('\n').filter((l) => l.startsWith('genjob: EGJ_'));
        // a failure said is never a success: exit 0 prints no EGJ_ line
        if (r.exitCode === 0) expect(lines, context).toEqual([]);
        else {
          expect(r.exitCode, context).toBe(5);
          expect(lines, context).toHaveLength(1);
          if (!(s.name === 'check' && GIT_DISK_FULL.test(lines[0]!)))
            expect(lines[0], context).toMatch(
              /^genjob: EGJ_IO: \/.*: [\w ()]+ failed: no space left on device \(ENOSPC\)/,
            );
        }
        // a check that ended removed its private index and copy, whatever stopped it
        expect(
          ls(b, 'staging').filter((n) => n.startsWith('.check-')),
          context,
        ).toEqual([]);
        expect(ls(b, 'running'), context).toEqual([]);
        seen.push(`${JSON.stringify(level)}→${r.exitCode}`);
        // the clean re-run(s)
        if (s.name === 'mint') await mint(b);
        else if (s.name === 'check') {
          await ok(b, ['check', '--all', '--no-sandbox']);
          expect(ls(b, 'checks').length, context).toBeGreaterThan(0);
        } else {
          if (s.name === 'work' || ls(b, 'received').length === 0) await ok(b, workArgs(b));
          if (s.name === 'apply') await ok(b, ['apply', '--all']);
          expect(ls(b, 'receipts'), context).toHaveLength(1);
          expect(runs(b) - before, context).toBeLessThanOrEqual(s.name === 'work' ? 1 : 0);
        }
        if (s.name === 'apply') expect(snapshot(b.repo), context).toEqual(applied);
        expect(ls(b, 'queue').length + ls(b, 'received').length + ls(b, 'applied').length, context).toBe(1);
        expect(leftovers(b.repo), context).toEqual([]);
      }
      console.log(`${s.name}: ${seen.join(' ')}`);
    });
  }
});
