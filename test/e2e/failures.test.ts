// Things that go wrong during work: a malformed job file in the queue is dead-lettered with its
// reason while the other jobs are worked; a generator that fails or runs out of time yields an
// `aborted` receipt (never applied), and a timed-out generator's processes are killed.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEMO_GENERATOR, genDir, makeSandbox, mintKey, readJson, snapshot } from './helpers.js';

describe('a malformed job file in the queue', () => {
  const cases = [
    { name: 'not JSON', bytes: '{"schema": "genjob/job@1", ', rule: /not a valid job: malformed JSON/ },
    {
      name: 'JSON of another shape',
      bytes: '{"schema":"genjob/job@1","key":"nope"}\n',
      rule: /not a valid job: key: /,
    },
    {
      name: 'a key that is not its work order',
      bytes: null, // built below from a real job with the instruction changed
      rule: /not a valid job: key is not the sha256 of its work order/,
    },
  ];
  for (const c of cases) {
    it(`is moved to dead/ with a .why.json reason while the other jobs are worked (${c.name})`, async () => {
      const sb = await makeSandbox();
      const good1 = await mintKey(sb, 'First note', ['README.md']);
      const good2 = await mintKey(sb, 'Second note', ['README.md']);
      const bad = 'a'.repeat(64);
      let bytes = c.bytes;
      if (bytes === null) {
        const doc = readJson(join(sb.repo, '.gen/queue', `${good1}.json`));
        bytes = JSON.stringify({ ...doc, instruction: 'Something else entirely' });
      }
      writeFileSync(join(sb.repo, '.gen/queue', `${bad}.json`), bytes);

      const r = await sb.genjob(['work', '--drain', '--generator', DEMO_GENERATOR]);
      expect(r).toMatchObject({ exitCode: 0, stdout: '3 job(s) taken\n' });
      expect(r.stderr).toMatch(
        new RegExp(
          `genjob: \\[\\d\\/3\\] elapsed \\d+s(, eta \\d+s)? ${bad.slice(0, 12)} dead-lettered: running/${bad}\\.json: not a valid job`,
        ),
      );
      expect(genDir(sb, 'queue')).toEqual([]);
      expect(genDir(sb, 'running')).toEqual([]);
      expect(genDir(sb, 'received')).toEqual([`${good1}.json`, `${good2}.json`].sort());
      const dead = genDir(sb, 'dead');
      expect(dead).toHaveLength(2);
      const raw = dead.find((n) => !n.endsWith('.why.json'))!;
      expect(raw).toMatch(new RegExp(`^${bad}\\.job\\.\\d+-[0-9a-f]{6}$`));
      expect(readFileSync(join(sb.repo, '.gen/dead', raw), 'utf8')).toBe(bytes); // kept raw, byte for byte
      const why = readJson<{ key: string; code: string; reason: string; at: string }>(
        join(sb.repo, '.gen/dead', `${raw}.why.json`),
      );
      expect(why).toMatchObject({ key: bad, code: 'EGJ_JOB_INVALID' });
      expect(why.reason).toMatch(c.rule);
      const status = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
      expect(status.counts).toMatchObject({ queue: 0, running: 0, received: 2, dead: 1 });
    });
  }
});

describe('a poison entry in the queue', () => {
  it('a directory named <key>.json, a FIFO and a symlink to /dev/zero go to dead/ with a reason; the drain goes on and exits 0', async () => {
    const sb = await makeSandbox();
    const good1 = await mintKey(sb, 'First note', ['README.md']);
    const good2 = await mintKey(sb, 'Second note', ['README.md']);
    const queue = join(sb.repo, '.gen/queue');
    const poison = {
      directory: { key: 'a'.repeat(64), rule: 'is a directory' },
      fifo: { key: 'b'.repeat(64), rule: 'is a FIFO' },
      symlink: { key: 'c'.repeat(64), rule: 'is a symbolic link' },
    };
    mkdirSync(join(queue, `${poison.directory.key}.json`));
    execFileSync('mkfifo', [join(queue, `${poison.fifo.key}.json`)]);
    symlinkSync('/dev/zero', join(queue, `${poison.symlink.key}.json`));

    const r = await sb.genjob(['work', '--drain', '--generator', DEMO_GENERATOR]);
    expect(r).toMatchObject({ exitCode: 0, stdout: '5 job(s) taken\n' });
    for (const { key, rule } of Object.values(poison)) {
      expect(r.stderr).toMatch(
        new RegExp(
          `${key.slice(0, 12)} dead-lettered: \\S*running/${key}\\.json: ${rule}; a record must be a regular file`,
        ),
      );
    }
    expect(genDir(sb, 'queue')).toEqual([]);
    expect(genDir(sb, 'running')).toEqual([]);
    expect(genDir(sb, 'received')).toEqual([`${good1}.json`, `${good2}.json`].sort());
    const dead = genDir(sb, 'dead');
    for (const { key, rule } of Object.values(poison)) {
      const raw = dead.find((n) => n.startsWith(`${key}.job.`) && !n.endsWith('.why.json'))!;
      const why = readJson<{ code: string; reason: string }>(join(sb.repo, '.gen/dead', `${raw}.why.json`));
      expect(why.code).toBe('EGJ_RECORD_UNREADABLE');
      expect(why.reason).toContain(rule);
    }
    expect(
      lstatSync(
        join(
          sb.repo,
          '.gen/dead',
          dead.find((n) => n.startsWith(poison.symlink.key) && !n.endsWith('.json'))!,
        ),
      ).isSymbolicLink(),
    ).toBe(true);
    const status = await sb.genjob(['status', '--json']);
    expect(status.exitCode).toBe(0);
    expect(JSON.parse(status.stdout).counts).toMatchObject({ queue: 0, running: 0, received: 2, dead: 3 });
  });
});

describe('a generator that fails', () => {
  it('yields an aborted receipt with the exit status and stderr tail; verify and apply exit 3, nothing applied', async () => {
    const sb = await makeSandbox();
    const gen = sb.script(
      'fail.sh',
      'echo "# half an edit" >> src/user.py\necho "starting" >&2\necho "model quota exceeded" >&2\nexit 7',
    );
    const key = await mintKey(sb, 'Try and fail', ['src/user.py']);
    const before = snapshot(sb.repo);
    const work = await sb.genjob(['work', '--once', '--generator', gen]);
    // the line that says what failed leads; the last lines of stderr follow
    const reason =
      'generator exited with status 7: model quota exceeded\nstderr (last lines):\nstarting\nmodel quota exceeded';
    expect(work.exitCode).toBe(0);
    expect(work.stderr).toContain(
      `${key.slice(0, 12)} received aborted: generator exited with status 7: model quota exceeded (`,
    );
    const receiptFile = join(sb.repo, '.gen/receipts', `${key}.json`);
    expect(readJson(receiptFile)).toMatchObject({ status: 'aborted', reason, outputs: [] });
    expect(genDir(sb, 'out')).toEqual([key]);
    expect(genDir(sb, `out/${key}`)).toEqual([]);

    const verify = await sb.genjob(['verify', key]);
    expect(verify).toMatchObject({
      exitCode: 3,
      // one line: the reason's newline is escaped like every control character a host sends
      stderr: `genjob: EGJ_STATUS_NOT_OK: ${receiptFile}: status is aborted: ${reason.replaceAll('\n', '\\x0a')}\n`,
    });
    const apply = await sb.genjob(['apply', key]);
    expect(apply).toMatchObject({ exitCode: 3, stderr: verify.stderr });
    expect(snapshot(sb.repo)).toEqual(before);
    expect(genDir(sb, 'applied')).toEqual([]);
  });

  it('never lets escape sequences in its stderr tail reach the terminal raw (work, show, verify, apply); --json keeps them exact', async () => {
    const sb = await makeSandbox();
    // OSC title, erase line + CR (overwrite the line with a fake success), a C1 CSI, a bidi override
    const gen = sb.script(
      'hostile.sh',
      `printf '\\033]0;pwned\\007\\033[2K\\rall tests passed \\302\\2332K\\342\\200\\256txt.exe\\n' >&2\nexit 3`,
    );
    const key = await mintKey(sb, 'Print hostile text', ['src/user.py']);
    const work = await sb.genjob(['work', '--once', '--generator', gen]);
    expect(work.exitCode).toBe(0);
    const receipt = readJson<{ reason: string }>(join(sb.repo, '.gen/receipts', `${key}.json`));
    const raw = '\x1b]0;pwned\x07\x1b[2K\rall tests passed \u009b2K\u202etxt.exe';
    expect(receipt.reason).toBe(`generator exited with status 3: ${raw}`);
    const inert = '\\x1b]0;pwned\\x07\\x1b[2K\\x0dall tests passed \\x9b2K\\u202etxt.exe';
    const dangerous = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/u;
    expect(work.stderr).toContain(`received aborted: generator exited with status 3: ${inert} (`);
    const show = await sb.genjob(['show', key]);
    const verify = await sb.genjob(['verify', key]);
    const apply = await sb.genjob(['apply', key]);
    expect(verify.stderr).toContain(inert);
    expect(apply.stderr).toContain(inert);
    for (const r of [work, show, verify, apply]) {
      expect(r.stdout).not.toMatch(dangerous);
      expect(r.stderr).not.toMatch(dangerous);
    }
    const showJson = await sb.genjob(['show', '--json', key]);
    expect(JSON.parse(showJson.stdout).receipt.reason).toBe(receipt.reason);
    const verifyJson = await sb.genjob(['verify', '--json', key]);
    expect(JSON.parse(verifyJson.stdout).message).toContain(raw);
  });

  it('is killed with everything it started when it outlives --timeout, and the receipt says it timed out', async () => {
    const sb = await makeSandbox();
    // the generator's pids are its sandbox's own, so its sleeper is found by a command line of its own
    const marker = `300.${process.pid}`;
    const gen = sb.script('sleepy.sh', `sleep ${marker} &\nwait`);
    const key = await mintKey(sb, 'Take forever', ['src/user.py']);
    const before = snapshot(sb.repo);
    const work = await sb.genjob(['work', '--once', '--timeout', '1', '--generator', gen]);
    expect(work.exitCode).toBe(0);
    const reason = 'generator timed out after 1 s and was killed';
    expect(work.stderr).toContain(`${key.slice(0, 12)} received aborted: ${reason}`);
    expect(readJson(join(sb.repo, '.gen/receipts', `${key}.json`))).toMatchObject({
      status: 'aborted',
      reason,
      outputs: [],
    });
    expect(pidsRunning(['sleep', marker]).filter(isAlive)).toEqual([]);
    expect((await sb.genjob(['verify', key])).exitCode).toBe(3);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(3);
    expect(snapshot(sb.repo)).toEqual(before);
  });
});

/** Pids whose command line is exactly `argv`. */
function pidsRunning(argv: string[]): number[] {
  const want = `${argv.join('\0')}\0`;
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return readFileSync(`/proc/${n}/cmdline`, 'utf8') === want;
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** A process counts as alive unless it is gone or a zombie waiting for a reaper. */
function isAlive(pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}
