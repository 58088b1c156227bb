// drop, remint and cancel killed (-9) at every move into dead/, through the built CLI. Each moved the job
// file first, so a kill before the receipt and outputs followed left receipts/<key>.json and out/<key>/
// with no job: drop and remint again were refused, and once the same job was minted again (or a
// cancelled one retried) `work` "recovered" the given-up receipt without asking the host, and apply
// wrote the given-up bytes. Now the receipt and outputs move first, the replay finishes, and the next
// work generates again. A store an older genjob left that way is finished by the replay, and `work`
// refuses a receipt of an attempt given up even when it is still in place.
import {
  chmodSync,
  existsSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { peekEpoch } from '../../src/core/receipt-peek.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { findJob } from '../../src/store/job-states.js';
import { readJournal } from '../../src/store/journal.js';
import { jobFileBytes, mintJob } from '../../src/store/mint-job.js';
import { TOMBSTONE_SCHEMA, writeTombstone } from '../../src/store/tombstone.js';
import { spawnCli, workerRepo } from './worker-helpers.js';

const PRELOAD = join(import.meta.dirname, '../helpers/crash-preload.mjs');
const PATH = 'm/a.txt';
const ORIGINAL = 'a\n';
// every run writes bytes of its own, and counts itself in GEN_LOG
const GEN = `for p in $GENJOB_INSTRUCTION; do od -An -N8 -tx1 /dev/urandom | tr -d ' \\n' > "$p"; echo >> "$p"; done
echo run >> "$GEN_LOG"
`;

/** Kill the command right after its nth rename into dead/. */
const intoDead = (nth: number) => ({
  call: 'renameSync',
  match: '/\\.gen/dead/',
  arg: 1,
  when: 'after',
  nth,
});

async function box() {
  const { base, root, store, generator } = workerRepo('genjob-giveup-', GEN, { [PATH]: ORIGINAL });
  const job = buildJob(PATH, [{ path: PATH, sha256: sha256Hex(ORIGINAL) }]);
  const key = job.key;
  const genLog = join(base, 'gen.log');
  writeFileSync(genLog, '', { mode: 0o666 });
  chmodSync(genLog, 0o666); // served as root, the generator appends to it as the sandbox user
  const env = { ...process.env, XDG_CACHE_HOME: join(base, 'cache'), GEN_LOG: genLog };
  const genjob = async (args: string[], crash?: unknown) => {
    const r = await spawnCli(
      root,
      args,
      crash ? { ...env, GENJOB_CRASH: JSON.stringify(crash) } : env,
      crash ? PRELOAD : undefined,
    );
    if (r.signal === 'SIGKILL') {
      // a killed holder's locks are taken over once seen gone; age them all the same
      const past = new Date(Date.now() - 60_000);
      for (const name of readdirSync(store.layout.dir('locks')))
        utimesSync(join(store.layout.dir('locks'), name), past, past);
    }
    return r;
  };
  const ls = (d: string) => (existsSync(store.layout.dir(d)) ? readdirSync(store.layout.dir(d)).sort() : []);
  const runs = () => readFileSync(genLog, 'utf8').split('\n').filter(Boolean).length;
  const work = async () => {
    const r = await genjob(['work', '--drain', '--quiet', ...generator]);
    expect(r.exitCode, r.stderr).toBe(0);
  };
  const mint = () => mintJob(store, job);
  const result = () => ({
    receipt: existsSync(store.layout.receipt(key)),
    out: existsSync(store.layout.outDir(key)),
  });
  const outBytes = () => readFileSync(join(store.layout.outDir(key), PATH), 'utf8');
  const recovered = () => readJournal(store, key).filter((e) => e.event === 'recovered').length;
  return {
    base,
    root,
    store,
    job,
    key,
    genjob,
    ls,
    runs,
    work,
    mint,
    result,
    outBytes,
    recovered,
    generator,
  };
}

type Box = Awaited<ReturnType<typeof box>>;

/**
 * The job minted again (after the host forgot its result: the bytes must come from a new run) and worked:
 * the generator runs, nothing is "recovered", the new receipt is of a later epoch and apply writes its bytes.
 */
async function generatesAgain(b: Box, givenUp: string, before: { runs: number; epoch: number }) {
  rmSync(join(b.base, 'cache'), { recursive: true, force: true });
  await b.work();
  expect(b.recovered(), 'work took the given-up receipt for its own').toBe(0);
  expect(b.runs()).toBe(before.runs + 1);
  expect(peekEpoch(readFileSync(b.store.layout.receipt(b.key)))).toBeGreaterThan(before.epoch);
  const fresh = b.outBytes();
  expect(fresh).not.toBe(givenUp);
  const applied = await b.genjob(['apply', b.key]);
  expect(applied.exitCode, applied.stderr).toBe(0);
  expect(readFileSync(join(b.root, PATH), 'utf8')).toBe(fresh);
}

/** Kill `args` after each of its moves into dead/ in turn (a fresh box each), then check and replay. */
async function everyMove(
  setup: (b: Box) => Promise<void>,
  args: (b: Box) => string[],
  after: (b: Box, n: number) => Promise<void>,
): Promise<number> {
  for (let n = 1; ; n++) {
    const b = await box();
    await setup(b);
    const killed = await b.genjob(args(b), intoDead(n));
    if (killed.signal !== 'SIGKILL') {
      expect(killed.exitCode, killed.stderr).toBe(0);
      return n - 1;
    }
    // whatever the kill left: never a receipt or outputs without their job
    if (findJob(b.store, b.key) === undefined)
      expect(b.result(), `killed after move ${n}`).toEqual({ receipt: false, out: false });
    await after(b, n);
  }
}

describe('drop, killed at each move into dead/', () => {
  it('is finished by drop again; the job minted again is generated again', async () => {
    let dropped = '';
    const moves = await everyMove(
      async (b) => {
        b.mint();
        await b.work();
        dropped = b.outBytes();
      },
      (b) => ['drop', b.key, '--reason', 'wrong approach'],
      async (b, n) => {
        const again = await b.genjob(['drop', b.key]);
        // killed after the job file too, the last move, before the journal line: drop again writes it
        expect(again.exitCode, `replay after move ${n}: ${again.stderr}`).toBe(0);
        expect(findJob(b.store, b.key)).toBeUndefined();
        expect(b.result()).toEqual({ receipt: false, out: false });
        expect(readJournal(b.store, b.key).filter((e) => e.event === 'dropped')).toEqual([
          expect.objectContaining({ reason: expect.stringMatching(/^dropped by the user/) }),
        ]);
        // once journalled, a drop of the dead job is refused as before
        const twice = await b.genjob(['drop', b.key.slice(0, 8)]);
        expect(twice.exitCode).toBe(2);
        expect(twice.stderr).toContain(
          `${b.key.slice(0, 8)}: job ${b.key.slice(0, 12)} is dead, EGJ_DROPPED`,
        );
        expect(readJournal(b.store, b.key).filter((e) => e.event === 'dropped')).toHaveLength(1);
        expect(b.mint().minted).toBe(true);
        await generatesAgain(b, dropped, { runs: 1, epoch: 1 });
      },
    );
    expect(moves).toBe(3); // the receipt, the outputs, the job file
  });

  it("a second life's drop killed after its last move is finished, though the first life's line is there", async () => {
    const b = await box();
    b.mint();
    await b.work();
    expect((await b.genjob(['drop', b.key])).exitCode).toBe(0);
    expect(b.mint().minted).toBe(true);
    rmSync(join(b.base, 'cache'), { recursive: true, force: true });
    await b.work();
    const dropped = () => readJournal(b.store, b.key).filter((e) => e.event === 'dropped');
    expect(dropped()).toHaveLength(1);
    expect((await b.genjob(['drop', b.key], intoDead(3))).signal).toBe('SIGKILL');
    expect(findJob(b.store, b.key)).toBeUndefined();
    const again = await b.genjob(['drop', b.key]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toContain('an interrupted drop finished');
    expect(dropped()).toHaveLength(2);
  });

  it('of a reverted job leaves the job document as the dead job file, which show reads', async () => {
    const b = await box();
    b.mint();
    await b.work();
    expect((await b.genjob(['apply', b.key])).exitCode).toBe(0);
    expect((await b.genjob(['revert', b.key])).exitCode).toBe(0);
    const record = readFileSync(join(b.store.layout.dir('reverted'), `${b.key}.json`), 'utf8');
    const r = await b.genjob(['drop', b.key, '--reason', 'wrong approach', '--json']);
    expect(r.exitCode, r.stderr).toBe(0);
    const dead = (JSON.parse(r.stdout) as { dead: string[] }).dead.map((d) =>
      d.replace(/\.\d+-[0-9a-f]+$/, ''),
    );
    expect(dead).toEqual([`${b.key}.job`, `${b.key}.reverted`, `${b.key}.receipt`, `${b.key}.out`]);
    const jobFile = b.ls('dead').find((n) => /\.job\.\d+-[0-9a-f]+$/.test(n))!;
    // the job file mint wrote, byte for byte; the apply record beside it as it was
    expect(readFileSync(join(b.store.layout.dir('dead'), jobFile))).toEqual(jobFileBytes(b.job));
    const reverted = b.ls('dead').find((n) => /\.reverted\.\d+-[0-9a-f]+$/.test(n))!;
    expect(readFileSync(join(b.store.layout.dir('dead'), reverted), 'utf8')).toBe(record);
    const show = await b.genjob(['show', b.key]);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(show.stdout).toContain('state     dead\n');
    expect(show.stdout).toContain(`inputs    ${PATH}\n`);
    expect(show.stdout).not.toContain('unreadable');
    expect((await b.genjob(['status'])).exitCode).toBe(0);
  });

  it('show reads a dead job file an older genjob left as the apply record', async () => {
    const b = await box();
    b.mint();
    await b.work();
    expect((await b.genjob(['apply', b.key])).exitCode).toBe(0);
    expect((await b.genjob(['revert', b.key])).exitCode).toBe(0);
    const name = `${b.key}.job.${Date.now()}-abcdef`;
    writeFileSync(
      join(b.store.layout.dir('dead'), `${name}.why.json`),
      JSON.stringify({ key: b.key, code: 'EGJ_DROPPED', reason: 'dropped by the user' }),
    );
    renameSync(join(b.store.layout.dir('reverted'), `${b.key}.json`), join(b.store.layout.dir('dead'), name));
    const show = await b.genjob(['show', b.key]);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(show.stdout).toContain(`inputs    ${PATH}\n`);
    expect(show.stdout).not.toContain('unreadable');
  });
});

/** The state an older genjob's drop, remint or cancel killed after its first move left: the job file in dead/ only. */
function jobFileFirst(b: Box, state: 'received' | 'running', why: Record<string, unknown>) {
  const name = `${b.key}.job.${Date.now()}-abcdef`;
  writeFileSync(join(b.store.layout.dir('dead'), `${name}.why.json`), JSON.stringify({ key: b.key, ...why }));
  renameSync(b.store.layout.jobFile(state, b.key), join(b.store.layout.dir('dead'), name));
  expect(b.result()).toEqual({ receipt: true, out: true });
}

describe('what an older genjob left: the job file in dead/, its receipt and outputs in place', () => {
  it('drop again moves them to dead/ and journals the drop', async () => {
    const b = await box();
    b.mint();
    await b.work();
    jobFileFirst(b, 'received', { code: 'EGJ_DROPPED', reason: 'dropped by the user: wrong approach' });
    const r = await b.genjob(['drop', b.key]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain('an interrupted drop finished');
    expect(b.result()).toEqual({ receipt: false, out: false });
    expect(readJournal(b.store, b.key).find((e) => e.event === 'dropped')).toMatchObject({
      reason: 'dropped by the user: wrong approach',
    });
  });

  it('work on the job minted again refuses the receipt left in place and generates again', async () => {
    const b = await box();
    b.mint();
    await b.work();
    const dropped = b.outBytes();
    jobFileFirst(b, 'received', { code: 'EGJ_DROPPED', reason: 'dropped by the user' });
    expect(b.mint().minted).toBe(true);
    await generatesAgain(b, dropped, { runs: 1, epoch: 1 });
    const stale = b
      .ls('dead')
      .filter((n) => n.startsWith(`${b.key}.receipt.e1.`) && !n.endsWith('.why.json'));
    expect(stale).toHaveLength(1);
    const why = JSON.parse(readFileSync(join(b.store.layout.dir('dead'), `${stale[0]}.why.json`), 'utf8'));
    expect(why).toMatchObject({ code: 'EGJ_EPOCH_SUPERSEDED', epoch: 1 });
    expect(why.reason).toContain('the key was minted again or retried after epoch 1');
  });
});

/** A job whose worker was killed after its receipt landed, before running/ → received/. */
async function landedRunning(b: Box) {
  b.mint();
  const killed = await b.genjob(['work', '--once', '--quiet', ...b.generator], {
    call: 'renameSync',
    match: '/\\.gen/received/',
    arg: 1,
    when: 'before',
    nth: 1,
  });
  expect(killed.signal).toBe('SIGKILL');
  expect(b.ls('running')).toEqual([`${b.key}.json`]);
  expect(b.result()).toEqual({ receipt: true, out: true });
}

describe('cancel of a running job whose receipt had landed, killed at each move into dead/', () => {
  it('is finished by cancel again; retry then generates again', async () => {
    let cancelled = '';
    const moves = await everyMove(
      async (b) => {
        await landedRunning(b);
        cancelled = b.outBytes();
      },
      (b) => ['cancel', b.key],
      async (b, n) => {
        const again = await b.genjob(['cancel', b.key]);
        expect(again.exitCode, `replay after move ${n}: ${again.stderr}`).toBe(0);
        expect(findJob(b.store, b.key)).toBeUndefined();
        expect(b.result()).toEqual({ receipt: false, out: false });
        expect(existsSync(b.store.layout.lease(b.key))).toBe(false);
        const retried = await b.genjob(['retry', b.key]);
        expect(retried.exitCode, retried.stderr).toBe(0);
        await generatesAgain(b, cancelled, { runs: 1, epoch: 1 });
      },
    );
    expect(moves).toBe(3);
  });

  it('killed after the lease was removed, before its journal line: cancel again writes the line once', async () => {
    const b = await box();
    await landedRunning(b);
    const killed = await b.genjob(['cancel', b.key], {
      call: 'rmSync',
      match: '/\\.gen/leases/',
      arg: 0,
      when: 'after',
    });
    expect(killed.signal).toBe('SIGKILL');
    expect(existsSync(b.store.layout.lease(b.key))).toBe(false);
    const cancelled = () => readJournal(b.store, b.key).filter((e) => e.event === 'cancelled');
    expect(cancelled()).toHaveLength(0);
    const again = await b.genjob(['cancel', b.key]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toContain('an interrupted cancel finished');
    expect(cancelled()).toEqual([
      expect.objectContaining({ reason: 'cancelled by the user', finished: true }),
    ]);
    const twice = await b.genjob(['cancel', b.key]);
    expect(twice.exitCode, twice.stderr).toBe(0);
    expect(twice.stdout).not.toContain('interrupted');
    expect(cancelled()).toHaveLength(1);
  });

  it('cancel, then the job minted again: work generates again', async () => {
    const b = await box();
    await landedRunning(b);
    const cancelled = b.outBytes();
    const r = await b.genjob(['cancel', b.key]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(b.result()).toEqual({ receipt: false, out: false });
    expect(b.mint().minted).toBe(true);
    await generatesAgain(b, cancelled, { runs: 1, epoch: 1 });
  });

  it('an older genjob left the receipt in place: cancel again moves it, and retry generates again', async () => {
    const b = await box();
    await landedRunning(b);
    const cancelled = b.outBytes();
    jobFileFirst(b, 'running', { code: 'EGJ_CANCELLED', reason: 'cancelled by the user' });
    const again = await b.genjob(['cancel', b.key]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toContain('an interrupted cancel finished');
    expect(b.result()).toEqual({ receipt: false, out: false });
    expect((await b.genjob(['retry', b.key])).exitCode).toBe(0);
    await generatesAgain(b, cancelled, { runs: 1, epoch: 1 });
  });
});

describe('remint, killed at each move into dead/', () => {
  it('is finished by remint again; the old job minted again is generated again', async () => {
    let superseded = '';
    const moves = await everyMove(
      async (b) => {
        b.mint();
        await b.work();
        superseded = b.outBytes();
        writeFileSync(join(b.root, PATH), 'changed\n');
      },
      (b) => ['remint', b.key],
      async (b, n) => {
        const again = await b.genjob(['remint', b.key]);
        // killed after the job file too, the last move, before the links: remint again journals them
        expect(again.exitCode, `replay after move ${n}: ${again.stderr}`).toBe(0);
        expect(findJob(b.store, b.key)).toBeUndefined();
        expect(b.result()).toEqual({ receipt: false, out: false });
        const links = () => readJournal(b.store, b.key).filter((e) => e.event === 'superseded');
        expect(links()).toHaveLength(1);
        // once journalled, remint of the superseded job is refused, and writes no second link
        const twice = await b.genjob(['remint', b.key]);
        expect(twice.stderr).toContain('EGJ_NOT_REMINTABLE');
        expect(links()).toHaveLength(1);
        // the successor (minted first, queued) is not what is looked at here
        const successor = b.ls('queue')[0]!.replace(/\.json$/, '');
        expect((await b.genjob(['drop', successor])).exitCode).toBe(0);
        // the old job again, from the old tree
        writeFileSync(join(b.root, PATH), ORIGINAL);
        expect(b.mint().minted).toBe(true);
        await generatesAgain(b, superseded, { runs: 1, epoch: 1 });
      },
    );
    expect(moves).toBe(3);
  });

  it('after gc pruned the key (its tombstone), missing links are not finished: remint is refused', async () => {
    const b = await box();
    b.mint();
    await b.work();
    writeFileSync(join(b.root, PATH), 'changed\n');
    expect((await b.genjob(['remint', b.key], intoDead(3))).signal).toBe('SIGKILL');
    writeTombstone(b.store, {
      schema: TOMBSTONE_SCHEMA,
      key: b.key,
      state: 'dead',
      finished_at: null,
      job_digest: null,
      receipt_sha256: null,
      pruned: [],
      pruned_at: new Date().toISOString(),
    });
    const again = await b.genjob(['remint', b.key]);
    expect(again.stderr).toContain('EGJ_NOT_REMINTABLE');
    expect(readJournal(b.store, b.key).filter((e) => e.event === 'superseded')).toHaveLength(0);
  });
});

describe('retry, killed after its move to the queue and before its journal line', () => {
  /** Kill `retry` right after the job reaches queue/ (a rename from received/, a link of a dead job's copy). */
  const intoQueue = (call: 'renameSync' | 'linkSync') => ({
    call,
    match: '/\\.gen/queue/',
    arg: 1,
    when: 'after',
    nth: 1,
  });
  const retriedLines = (b: Box) => readJournal(b.store, b.key).filter((e) => e.event === 'retried');

  /**
   * Replay the killed retry: it writes the line and says so; a retry after that is refused as of any queued
   * job, the line written once; work then generates again.
   */
  async function replays(b: Box, status: string, givenUp: string) {
    expect(b.ls('queue')).toEqual([`${b.key}.json`]);
    expect(retriedLines(b)).toHaveLength(0);
    const again = await b.genjob(['retry', b.key, '--json']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      ok: true,
      key: b.key,
      previous_status: status,
      finished: true,
    });
    expect(retriedLines(b)).toEqual([expect.objectContaining({ key: b.key, status, epoch: 1 })]);
    const twice = await b.genjob(['retry', b.key]);
    expect(twice.exitCode).toBe(4);
    expect(twice.stderr).toMatch(/EGJ_NOT_RETRYABLE: .*\(this one is queue\)/);
    expect(retriedLines(b)).toHaveLength(1);
    await generatesAgain(b, givenUp, { runs: 1, epoch: 1 });
  }

  it('of a received job: retry again writes the line once and the job is generated again', async () => {
    const b = await box();
    b.mint();
    await b.work();
    const retried = b.outBytes();
    const killed = await b.genjob(['retry', b.key], intoQueue('renameSync'));
    expect(killed.signal).toBe('SIGKILL');
    await replays(b, 'ok', retried);
  });

  it('of a job cancelled in dead/ after its receipt landed: the same', async () => {
    const b = await box();
    await landedRunning(b);
    const cancelled = b.outBytes();
    expect((await b.genjob(['cancel', b.key])).exitCode).toBe(0);
    const killed = await b.genjob(['retry', b.key], intoQueue('linkSync'));
    expect(killed.signal).toBe('SIGKILL');
    await replays(b, 'cancelled', cancelled);
  });
});

describe('mint of a job given up before, killed right after its queue file', () => {
  it('restarts the count of attempts all the same: the earlier life is not counted against --max-attempts', async () => {
    const b = await box();
    b.mint();
    await b.work();
    const dropped = b.outBytes();
    expect((await b.genjob(['drop', b.key])).exitCode).toBe(0);
    const mintArgs = ['mint', '-m', PATH, PATH];
    const killed = await b.genjob(mintArgs, {
      call: 'linkSync',
      match: '/\\.gen/queue/',
      arg: 1,
      when: 'after',
    });
    expect(killed.signal).toBe('SIGKILL');
    expect(b.ls('queue')).toEqual([`${b.key}.json`]);
    const again = await b.genjob(mintArgs);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(b.key);
    expect(readFileSync(join(b.store.layout.attemptsDir(b.key), 'minted-after'), 'utf8')).toBe('1');
    rmSync(join(b.base, 'cache'), { recursive: true, force: true });
    const r = await b.genjob(['work', '--drain', '--quiet', '--max-attempts', '1', ...b.generator]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(b.runs()).toBe(2);
    expect(b.outBytes()).not.toBe(dropped);
  });
});
