// Attempts count only real tries: usage and configuration errors are found before anything is
// claimed (exit 2, the queue untouched), and a try that never reached a generator (a refusal, a
// shutdown cut) puts the job back without spending an attempt. Spawns the built CLI.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  genDir,
  genjob,
  HOSTILE_REMOTE,
  journal,
  mint,
  NODE,
  type Sandbox,
  useBoxes,
  waitFor,
  writeGenerator,
} from './ssh-helpers.js';

const newBox = useBoxes();

async function box(): Promise<{ sb: Sandbox; key: string }> {
  const sb = await newBox();
  return { sb, key: await mint(sb, 'shout alpha', ['src/a.txt']) };
}

/** Nothing was claimed: the job is still queued, no attempt exists, the journal has no claim. */
function expectUntouched(sb: Sandbox, key: string): void {
  expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
  expect(genDir(sb, 'running')).toEqual([]);
  expect(genDir(sb, 'attempts')).toEqual([]);
  expect(journal(sb, key).filter((e) => e.event !== 'minted')).toEqual([]);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('usage and configuration errors, found before anything is claimed', () => {
  it.each([
    {
      name: 'no --generator and no generator pinned by the host',
      args: () => [],
      code: 'EGJ_NO_GENERATOR',
      // where a generator is given, the config file's key too
      says: 'pass --generator CMD to work or set "generator" in genjob.config.json, or pin one with serve --generator',
    },
    {
      name: 'builtin:openai without GENJOB_OPENAI_BASE_URL',
      args: () => ['--generator', 'builtin:openai'],
      env: { GENJOB_OPENAI_MODEL: 'm' },
      code: 'EGJ_GENERATOR_CONFIG',
    },
    {
      name: 'builtin:openai with an htp:// typo',
      args: () => ['--generator', 'builtin:openai'],
      env: { GENJOB_OPENAI_MODEL: 'm', GENJOB_OPENAI_BASE_URL: 'htp://localhost:8080/v1' },
      code: 'EGJ_GENERATOR_CONFIG',
    },
    {
      name: 'a --port above 65535',
      args: () => ['--generator', 'true', '--host', '127.0.0.1', '--port', '70000'],
      code: 'EGJ_USAGE',
    },
    {
      name: 'a missing --ssh-config file',
      args: (sb: Sandbox) => [
        '--generator',
        'true',
        '--host',
        '127.0.0.1',
        '--ssh-config',
        path.join(sb.dir, 'nope'),
      ],
      code: 'EGJ_USAGE',
    },
    {
      name: 'a --launch command that does not start genjob',
      args: () => ['--generator', 'true', '--launch', 'echo hello; exit 127'],
      code: 'EGJ_HOST_NOT_SERVING',
    },
  ])('$name: exit 2 with $code, nothing claimed', async (c) => {
    const { sb, key } = await box();
    const env = { XDG_CACHE_HOME: sb.workerCache, XDG_CONFIG_HOME: path.join(sb.dir, 'cfg'), ...c.env };
    for (const once of [1, 2, 3, 4]) {
      const w = await genjob(sb, ['work', '--once', ...c.args(sb)], { env });
      expect(w.stderr, `run ${once}`).toMatch(new RegExp(`^genjob: ${c.code}: `, 'm'));
      expect(w.exitCode).toBe(2);
      if (c.says) expect(w.stderr).toContain(c.says);
    }
    expectUntouched(sb, key); // four runs later, still not a single attempt
  });

  it('a wrong --port (nothing listening): exit 2 with EGJ_SSH_CONNECT, nothing claimed', async () => {
    const { sb, key } = await box();
    const port = await freePort();
    const w = await genjob(sb, [
      'work',
      '--once',
      '--generator',
      'true',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
    ]);
    expect(w.stderr).toMatch(/^genjob: EGJ_SSH_CONNECT: .*127\.0\.0\.1/m);
    expect(w.exitCode).toBe(2);
    expectUntouched(sb, key);
  });
});

/** A generator that writes `started` once it runs, then waits for a release that never comes. */
async function neverEnding(sb: { dir: string }): Promise<{ started: string; gen: string }> {
  const started = path.join(sb.dir, 'started');
  const gen = await writeGenerator(sb.dir, {
    counter: path.join(sb.dir, 'runs'),
    target: 'src/a.txt',
    text: 'late\n',
    startedMarker: started,
    releaseFile: path.join(sb.dir, 'never'),
  });
  return { started, gen };
}
describe('attempts spent only on delivered bundles', () => {
  it('a host that refuses to run puts the job back unspent: never dead-lettered, the journal says so', async () => {
    const { sb, key } = await box();
    const launch = `${NODE} ${HOSTILE_REMOTE} refuse-run ${sb.dir}`;
    for (let i = 0; i < 4; i++) {
      const w = await genjob(sb, [
        'work',
        '--once',
        '--max-attempts',
        '2',
        '--generator',
        'true',
        '--launch',
        launch,
      ]);
      expect(w.stderr).toContain(
        `${key.slice(0, 12)} back in the queue: the host refused: EGJ_GENERATOR_CONFIG`,
      );
      expect(w.exitCode).toBe(3);
    }
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'dead')).toEqual([]);
    const requeued = journal(sb, key).filter((e) => e.event === 'requeued');
    expect(requeued.map((e) => [e.epoch, e.attempt_spent])).toEqual([
      [1, false],
      [2, false],
      [3, false],
      [4, false],
    ]);
    expect(
      readdirSync(path.join(sb.repo, '.gen/attempts', key))
        .filter((n) => n.endsWith('.unspent'))
        .sort(),
    ).toEqual(['1.unspent', '2.unspent', '3.unspent', '4.unspent']);
    const shown = JSON.parse(String((await genjob(sb, ['show', '--json', key])).stdout));
    expect(shown.attempts.map((a: { spent: boolean }) => a.spent)).toEqual([false, false, false, false]);
  });

  it('an answer that is unusable after delivery still spends an attempt', async () => {
    const { sb, key } = await box();
    const launch = `${NODE} ${HOSTILE_REMOTE} other-key ${sb.dir}`;
    const w = await genjob(sb, [
      'work',
      '--drain',
      '--max-attempts',
      '2',
      '--generator',
      'true',
      '--launch',
      launch,
    ]);
    expect(w.exitCode).toBe(0);
    expect(genDir(sb, 'dead').some((n) => n.startsWith(`${key}.job`))).toBe(true);
    expect(
      journal(sb, key)
        .filter((e) => e.event === 'requeued')
        .map((e) => e.attempt_spent),
    ).toEqual([true, true]);
  });

  it('a job cut at the end of the SIGINT grace period goes back without spending an attempt', async () => {
    const { sb, key } = await box();
    const { started, gen } = await neverEnding(sb);
    const work = genjob(sb, ['work', '--watch', '--grace', '0.2', '--generator', gen, '--timeout', '60']);
    await waitFor('the generator to start', () => existsSync(started));
    work.kill('SIGINT');
    const w = await work;
    expect(String(w.stdout)).toContain('still in flight when the grace period ended: requeued');
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    const requeued = journal(sb, key).filter((e) => e.event === 'requeued');
    expect(requeued).toMatchObject([{ epoch: 1, attempt_spent: false }]);
    expect(existsSync(path.join(sb.repo, '.gen/attempts', key, '1.unspent'))).toBe(true);
    // the job is in doubt on the host that had it: it will be asked there first
    expect(
      JSON.parse(readFileSync(path.join(sb.repo, '.gen/attempts', key, 'in-doubt.json'), 'utf8')),
    ).toMatchObject({ epoch: 1, destination: 'local' });
    await writeFile(path.join(sb.dir, 'never'), '');
  });

  it('work --once cut by a second Ctrl-C says so, not that a grace period ended (it has none)', async () => {
    const { sb, key } = await box();
    const { started, gen } = await neverEnding(sb);
    const work = genjob(sb, ['work', '--once', '--generator', gen, '--timeout', '60']);
    await waitFor('the generator to start', () => existsSync(started));
    work.kill('SIGINT');
    // two signals sent at once may be delivered as one
    await new Promise((r) => setTimeout(r, 500));
    work.kill('SIGINT');
    const w = await work;
    expect(w.exitCode).toBe(130);
    expect(String(w.stdout)).toContain(
      '1 job(s) still in flight when a second SIGINT stopped the run: requeued',
    );
    expect(String(w.stdout)).not.toContain('grace period');
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    await writeFile(path.join(sb.dir, 'never'), '');
  });
});
