// Every file of .gen/ forged in turn (a branch may commit .gen/; a crash may tear a file): torn JSON,
// JSON of another shape (an empty object, null), a link to /dev/zero in its place. The commands that only look
// (status --json, show of each job, report) must answer or refuse with an error of their own (a GenjobError:
// exit 2, 3, 4 or 5 naming the file), never stop on an internal error. One store, shared by both tests, is made
// through the built CLI with a job in each state (received, checked, applied, dropped, reverted, pruned by gc);
// the commands then run in this process (no start-up per run), so the whole sweep takes well under a minute.
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { push } from '../../src/commands/push.js';
import { report } from '../../src/commands/report.js';
import { show } from '../../src/commands/show.js';
import { status } from '../../src/commands/status.js';
import { asIoError, GenjobError } from '../../src/core/errors.js';
import { makeSandbox, mintKey } from './helpers.js';

const FORGERIES: Array<{ name: string; forge: (file: string) => void }> = [
  { name: 'torn JSON', forge: (f) => writeFileSync(f, '{"key":') },
  { name: 'an empty object', forge: (f) => writeFileSync(f, '{}') },
  { name: 'null', forge: (f) => writeFileSync(f, 'null') },
  { name: 'a link to /dev/zero', forge: (f) => symlinkSync('/dev/zero', f) },
];

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isDirectory()) out.push(...filesUnder(path));
    else if (st.isFile()) out.push(path);
  }
  return out;
}

/** The error a command stopped on when it is not one of genjob's own (what the CLI calls an internal error). */
async function internalError(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
    return undefined;
  } catch (err) {
    return asIoError(err) instanceof GenjobError ? undefined : err;
  }
}

/** A store made through the built CLI with a job in each state: received, checked, applied, dropped, reverted, pruned by gc. */
async function storeOfEveryState() {
  const sb = await makeSandbox({ life: 'file' });
  const git = (args: string[]) => execFileSync('git', args, { cwd: sb.repo, stdio: 'pipe' });
  writeFileSync(join(sb.repo, 'genjob.config.json'), JSON.stringify({ checkers: { ok: { run: 'true' } } }));
  git(['add', '-A']);
  git(['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'fixture']);
  const gen = sb.script('gen.sh', 'echo "# more" >> README.md');
  // first a job dropped and pruned by gc (which prunes every finished job: so before the others)
  const pruned = await mintKey(sb, 'Make it pruned', ['src/user.py']);
  const g2 = sb.script('g2.sh', 'echo "# x" >> src/user.py');
  expect((await sb.genjob(['work', pruned, '--quiet', '--generator', g2])).exitCode).toBe(0);
  expect((await sb.genjob(['drop', pruned])).exitCode).toBe(0);
  expect((await sb.genjob(['gc', '--older-than', '0s'])).exitCode).toBe(0);
  const [applied, received, dropped, reverted] = [
    await mintKey(sb, 'Make it applied', ['README.md']),
    await mintKey(sb, 'Make it received', ['README.md']),
    await mintKey(sb, 'Make it dropped', ['README.md']),
    await mintKey(sb, 'Make it reverted', ['README.md']),
  ];
  expect((await sb.genjob(['work', '--drain', '--quiet', '--generator', gen])).exitCode).toBe(0);
  expect((await sb.genjob(['check', '--all'])).exitCode).toBe(0);
  expect((await sb.genjob(['apply', applied])).exitCode).toBe(0);
  expect((await sb.genjob(['drop', dropped])).exitCode).toBe(0);
  // the fourth is stale behind the first: apply and revert it on the tree put back
  const after = readFileSync(join(sb.repo, 'README.md'));
  git(['checkout', '-q', '--', 'README.md']);
  expect((await sb.genjob(['apply', reverted])).exitCode).toBe(0);
  expect((await sb.genjob(['revert', reverted])).exitCode).toBe(0);
  writeFileSync(join(sb.repo, 'README.md'), after);
  const keys = [pruned, applied, received, dropped, reverted];
  return { sb, keys };
}

/** The one store both tests forge (each puts back every file it forges), made by the first that needs it. */
let everyState: ReturnType<typeof storeOfEveryState> | undefined;
const sharedStore = () => {
  everyState ??= storeOfEveryState();
  return everyState;
};

/** Every regular file of .gen/ but the report's, after checking the store holds each kind of record. */
function recordFiles(repo: string): string[] {
  const files = filesUnder(join(repo, '.gen')).filter((f) => !f.includes('/report/'));
  expect(files.length).toBeGreaterThan(15);
  const kinds = new Set(files.map((f) => relative(join(repo, '.gen'), f).split('/')[0]));
  for (const kind of [
    'attempts',
    'checks',
    'receipts',
    'received',
    'applied',
    'reverted',
    'dead',
    'tombstones',
  ])
    expect(kinds, kind).toContain(kind);
  return files;
}

/** Forge each file in each way in turn, run `commandsFor(file)` on it, put the file back; the internal errors seen. */
async function sweep(
  repo: string,
  files: readonly string[],
  commandsFor: (file: string) => Array<[string, () => Promise<unknown>]>,
): Promise<string[]> {
  const failures: string[] = [];
  for (const file of files) {
    const bytes = readFileSync(file);
    for (const { name, forge } of FORGERIES) {
      rmSync(file);
      forge(file);
      for (const [command, run] of commandsFor(file)) {
        const err = await internalError(run);
        if (err !== undefined)
          failures.push(`${relative(repo, file)} as ${name}: ${command}: ${(err as Error).message}`);
      }
      rmSync(file, { recursive: true });
      writeFileSync(file, bytes);
    }
  }
  return failures;
}

describe('forged records in .gen/', () => {
  it('leave status, show and report answering or refusing by name, never with an internal error', async () => {
    const { sb, keys } = await sharedStore();

    process.env.XDG_CACHE_HOME = sb.cache;
    const root = sb.repo;
    const out = join(sb.base, 'report');
    type Command = [string, () => Promise<unknown>];
    const showOf = (key: string): Command => [`show ${key.slice(0, 8)}`, () => show({ root, key })];
    /** status and report, and show of the job the file belongs to (of every job for a file of no one job). */
    const commandsFor = (file: string): Command[] => {
      const owners = keys.filter((k) => file.includes(k));
      return [
        ['status --json', () => status({ root, json: true })],
        ...(owners.length > 0 ? owners : keys).map(showOf),
        ['report', () => report({ root, out })],
      ];
    };
    const commands = commandsFor('');
    for (const [name, run] of commands) expect(await internalError(run), name).toBeUndefined();

    expect(await sweep(sb.repo, recordFiles(sb.repo), commandsFor)).toEqual([]);
  });

  it('leave push sending, refusing by name or skipping, never with an internal error', async () => {
    const { sb } = await sharedStore();
    const remote = join(sb.base, 'remote.git');
    execFileSync('git', ['init', '-q', '--bare', remote]);
    const url = `file://${remote}`;
    const run = () => push({ root: sb.repo, remote: url });
    // pushed once, so push's record of what it built (git-built.json) is among the files forged, and a
    // push with a file intact meets the path where nothing is new
    expect(await run()).toMatchObject({ json: { ok: true } });
    const files = recordFiles(sb.repo);
    const built = join(sb.repo, '.gen', 'git-built.json');
    expect(files).toContain(built);
    // with nothing new push reads no record: dropped, its record and local refs make it read them all
    const rebuilt = (file: string) => () => {
      rmSync(join(sb.repo, '.git', 'refs', 'genjob'), { recursive: true, force: true });
      if (file !== built) rmSync(built, { force: true });
      return run();
    };
    expect(
      await sweep(sb.repo, files, (file) => [
        ['push', run],
        ['push, what it built dropped', rebuilt(file)],
      ]),
    ).toEqual([]);
  });
});
