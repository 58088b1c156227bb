// The commands people reach for: work KEY…, retry, cancel, mint -f -, key prefixes in any case,
// show of a dead key, the reason near the top, and the pager on a terminal only.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { traceOptions } from '../helpers/module-trace.js';
import { CLI, DEMO_GENERATOR, genDir, makeSandbox, mintKey, type Sandbox } from './helpers.js';

function deadWhy(sb: Sandbox, key: string): Record<string, unknown> {
  const name = genDir(sb, 'dead').find((n) => n.startsWith(`${key}.job.`) && n.endsWith('.why.json'))!;
  return JSON.parse(readFileSync(join(sb.repo, '.gen', 'dead', name), 'utf8'));
}

describe('genjob work KEY…', () => {
  it('works only the named jobs, found by a prefix in upper case', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('note.sh', 'for f in *; do :; done; echo "# $GENJOB_INSTRUCTION" >> README.md');
    const keys = [];
    for (const i of [1, 2, 3]) keys.push(await mintKey(sb, `Note ${i}`, ['README.md']));
    const r = await sb.genjob(['work', keys[1]!.slice(0, 8).toUpperCase(), '--quiet', '--generator', gen]);
    expect(r.exitCode).toBe(0);
    expect(genDir(sb, 'received')).toEqual([`${keys[1]}.json`]);
    expect(genDir(sb, 'queue')).toEqual([keys[0], keys[2]].map((k) => `${k}.json`).sort());
  });

  it('refuses a named job that is not queued, claiming nothing (exit 2)', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('note.sh', 'echo x >> README.md');
    const a = await mintKey(sb, 'Note a', ['README.md']);
    const b = await mintKey(sb, 'Note b', ['README.md']);
    await sb.genjob(['work', a, '--quiet', '--generator', gen]);
    const r = await sb.genjob(['work', b, a, '--generator', gen]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_NOT_QUEUED: .*received/${a}\\.json: job ${a.slice(0, 12)} is received, not queued`,
      ),
    );
    expect(genDir(sb, 'queue')).toEqual([`${b}.json`]);
  });
});

describe('claim order', () => {
  it('work --drain takes the jobs in the order they were minted (oldest first), whatever their keys', async () => {
    const sb = await makeSandbox();
    const log = join(sb.base, 'order.log');
    const gen = sb.script('log.sh', `echo "$GENJOB_KEY" >> ${log}; echo x >> README.md`);
    const keys: string[] = [];
    for (let i = 0; i < 6; i++) keys.push(await mintKey(sb, `Note ${i}`, ['README.md']));
    expect(keys).not.toEqual([...keys].sort()); // else key order would pass too
    const r = await sb.genjob(['work', '--drain', '--quiet', '--generator', gen]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual(keys);
  });
});

describe('genjob retry KEY', () => {
  it('sends an aborted job back; the next attempt (a new epoch) generates again; the old receipt stays in dead/', async () => {
    const sb = await makeSandbox();
    const log = join(sb.base, 'runs.log');
    const fixed = join(sb.base, 'fixed');
    const gen = sb.script(
      'flaky.sh',
      `echo run >> ${log}\ntest -f ${fixed} || { echo endpoint down >&2; exit 5; }\necho '# retried' >> README.md\n`,
    );
    const key = await mintKey(sb, 'Note the retry', ['README.md']);
    await sb.genjob(['work', '--once', '--quiet', '--max-attempts', '1', '--generator', gen]);
    const shown = (await sb.genjob(['show', key])).stdout.split('\n');
    expect(shown.slice(0, 3)).toEqual([
      `key       ${key}`,
      'state     received',
      'reason    aborted: generator exited with status 5: endpoint down',
    ]);
    // the receipt is a block under its heading, every line of it indented alike
    const at = shown.indexOf('receipt:');
    expect(shown.slice(at, at + 3)).toEqual(['receipt:', '  {', expect.stringMatching(/^ {4}"/)]);
    expect(shown.slice(at + 1).find((l) => l === '  }')).toBe('  }');

    writeFileSync(fixed, '');
    const r = await sb.genjob(['retry', key.slice(0, 10)]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/back in the queue \(its aborted receipt of epoch 1 is kept in dead\/\)/);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'receipts')).toEqual([]);
    expect(genDir(sb, 'dead').filter((n) => n.startsWith(`${key}.receipt.e1.`))).toHaveLength(2);

    // no --retry-aborted: the retry itself asks the host to generate again
    const w = await sb.genjob(['work', '--once', '--quiet', '--max-attempts', '1', '--generator', gen]);
    expect(w.exitCode).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe('run\nrun\n');
    expect((await sb.genjob(['verify', key])).stdout).toMatch(/ok: 1 output\(s\), epoch 2/);
    // `regenerated`: epoch 2 delivered its bundle with the request to generate again
    expect(genDir(sb, `attempts/${key}`)).toEqual([
      '1.json',
      '2.json',
      'minted-after',
      'regenerated',
      'retry-after',
    ]);
    const usage = JSON.parse((await sb.genjob(['show', key, '--json'])).stdout).usage;
    expect(usage.map((u: { epoch: number; status: string }) => [u.epoch, u.status])).toEqual([
      [1, 'aborted'],
      [2, 'ok'],
    ]);

    // an ok result can be retried too (its checks failed, say): generated again at the next epoch
    const again = await sb.genjob(['retry', key]);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/back in the queue \(its ok receipt of epoch 2 is kept in dead\/\)/);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'receipts')).toEqual([]);
  });
});

describe('genjob cancel KEY', () => {
  it('moves a queued job to dead/ as cancelled; show says so, with the reason', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Never mind', ['README.md']);
    const r = await sb.genjob(['cancel', key.slice(0, 6).toUpperCase()]);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(`^${key.slice(0, 12)} cancelled \\(was queue\\): dead/${key}\\.job\\.`),
    );
    expect(genDir(sb, 'queue')).toEqual([]);
    expect(deadWhy(sb, key)).toMatchObject({ code: 'EGJ_CANCELLED', reason: 'cancelled by the user' });
    const shown = await sb.genjob(['show', key.slice(0, 8)]);
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout.split('\n').slice(1, 3)).toEqual([
      'state     dead',
      'reason    EGJ_CANCELLED: cancelled by the user',
    ]);
    expect(shown.stdout).toContain('  Never mind');
  });

  it('says "already cancelled" and exits 0 when the job is cancelled again, and changes nothing', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Never mind', ['README.md']);
    expect((await sb.genjob(['cancel', key])).exitCode).toBe(0);
    const dead = genDir(sb, 'dead');
    const again = await sb.genjob(['cancel', key.slice(0, 8)]);
    expect(again).toMatchObject({ exitCode: 0, stderr: '' });
    const name = dead.find((n) => !n.endsWith('.why.json'))!;
    expect(again.stdout).toBe(
      `${key.slice(0, 12)} already cancelled: dead/${name} (genjob retry ${key.slice(0, 12)} queues it again)\n`,
    );
    const json = await sb.genjob(['cancel', '--json', key]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: true,
      key,
      was: 'cancelled',
      already: true,
      dead: [name],
    });
    expect(genDir(sb, 'dead')).toEqual(dead);
  });

  it('still refuses a job that is dead for another reason (dropped): not cancellable, exit 4', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Never mind', ['README.md']);
    expect((await sb.genjob(['drop', key, '--reason', 'wrong approach'])).exitCode).toBe(0);
    const r = await sb.genjob(['cancel', key]);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(
      /^genjob: EGJ_NOT_CANCELLABLE: \S+\/\.gen\/dead\/[0-9a-f]{64}\.job\.\S+: the job is already in dead\/ \(EGJ_DROPPED: .*wrong approach\); only queued or running jobs can be cancelled\n$/,
    );
  });
  it('then retry puts a job cancelled before any attempt back in the queue, and work runs it', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a timeout to fetch_user', ['src/user.py']);
    expect((await sb.genjob(['cancel', key])).exitCode).toBe(0);
    const retried = await sb.genjob(['retry', key]);
    expect(retried.exitCode, retried.stderr).toBe(0);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    const again = await sb.genjob(['retry', key]);
    expect(again.exitCode).toBe(4);
    expect(again.stderr).toMatch(/EGJ_NOT_RETRYABLE: .*\(this one is queue\)/);
    const gen = sb.script('gen.sh', `exec ${DEMO_GENERATOR}`);
    const work = await sb.genjob(['work', '--once', '--no-sandbox', '--generator', gen]);
    expect(work.exitCode, work.stderr).toBe(0);
    expect(genDir(sb, 'received')).toEqual([`${key}.json`]);
  });
  // a running job: test/e2e/cancel-running.test.ts (local and over ssh)
});

describe('a dead job named to a command that takes none', () => {
  it('says the job is dead, with its code, and the command that brings it back; exit 2 as for an unknown key', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Never mind', ['README.md']);
    const k = key.slice(0, 12);
    expect((await sb.genjob(['cancel', key])).exitCode).toBe(0);
    for (const args of [['verify'], ['apply'], ['revert'], ['drop'], ['promote', '--shadow', 'p']]) {
      const r = await sb.genjob([args[0]!, key.slice(0, 8), ...args.slice(1)]);
      expect(r.exitCode, args[0]).toBe(2);
      expect(r.stderr).toBe(
        `genjob: EGJ_UNKNOWN_KEY: ${key.slice(0, 8)}: job ${k} is dead, EGJ_CANCELLED: cancelled by the user; genjob retry ${k} generates it again\n`,
      );
    }
  });

  it('a job whose input changed: its dead letter, verify and retry all name genjob remint, which takes it', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a line', ['README.md']);
    const k = key.slice(0, 12);
    writeFileSync(join(sb.repo, 'README.md'), 'edited under the job\n');
    const gen = sb.script('gen.sh', 'echo x >> README.md');
    const w = await sb.genjob(['work', '--once', '--generator', gen]);
    const remint = `the job is stale: genjob remint ${k} mints its successor from the current tree`;
    expect(w.stderr).toContain(`the input changed under the job; ${remint}\n`);
    expect(deadWhy(sb, key)).toMatchObject({ code: 'EGJ_INPUT_CHANGED' });
    expect(String(deadWhy(sb, key).reason)).toMatch(
      new RegExp(`the input changed under the job; ${remint}$`),
    );
    const v = await sb.genjob(['verify', key]);
    expect(v.exitCode).toBe(2);
    expect(v.stderr).toMatch(
      new RegExp(`^genjob: EGJ_UNKNOWN_KEY: ${key}: job ${k} is dead, EGJ_INPUT_CHANGED: .*; ${remint}\n$`),
    );
    const r = await sb.genjob(['retry', key]);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain(
      `(this one is dead for another reason: genjob remint ${k} mints its successor from the current tree)`,
    );
    expect((await sb.genjob(['remint', key])).exitCode).toBe(0);
  });
});

describe('mint -f -', () => {
  it('reads the instruction from stdin', async () => {
    const sb = await makeSandbox();
    const r = await execa(process.execPath, [CLI, 'mint', '--json', '-f', '-', 'README.md'], {
      cwd: sb.repo,
      env: { XDG_CACHE_HOME: sb.cache },
      input: 'Say hello\n\nin the README\n',
      reject: false,
    });
    expect(r.exitCode).toBe(0);
    const { key } = JSON.parse(r.stdout);
    const job = JSON.parse(readFileSync(join(sb.repo, '.gen', 'queue', `${key}.json`), 'utf8'));
    expect(job.instruction).toBe('Say hello\n\nin the README\n');
  });
});

describe('long output', () => {
  it('goes through $PAGER on a terminal and straight to stdout otherwise', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Page me', ['README.md']);
    const env = { ...process.env, XDG_CACHE_HOME: sb.cache, PAGER: 'sed s/^/PAGED:/', GENJOB_PAGER: '' };
    delete (env as Record<string, string | undefined>).GENJOB_PAGER;
    const tty = await execa('script', ['-qec', `${process.execPath} ${CLI} show ${key}`, '/dev/null'], {
      cwd: sb.repo,
      env,
      reject: false,
    });
    expect(tty.stdout).toContain(`PAGED:key       ${key}`);
    const piped = await sb.genjob(['show', key], { env: { PAGER: 'sed s/^/PAGED:/' } });
    expect(piped.stdout.startsWith(`key       ${key}\n`)).toBe(true);
  });
});

describe('genjob show and the config', () => {
  it('reads the config (and loads its reader) only when the repository has one', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Show me', ['README.md']);
    const config = join(sb.repo, 'genjob.config.json');
    rmSync(config, { force: true });
    const trace = { NODE_OPTIONS: traceOptions() };
    const bare = await sb.genjob(['show', key], { env: trace });
    expect(bare.exitCode).toBe(0);
    expect(bare.stderr).toContain('loaded src/commands/show.ts'); // the trace sees the modules
    expect(bare.stderr).not.toContain('loaded src/cli/config-file.ts');
    expect(bare.stdout).not.toContain('\nchecks ');
    writeFileSync(config, `${JSON.stringify({ checkers: { tests: { run: 'true' } } })}\n`);
    const declared = await sb.genjob(['show', key], { env: trace });
    expect(declared.exitCode).toBe(0);
    expect(declared.stdout).toContain('\nchecks    tests: no record\n');
    writeFileSync(config, '{"checkers": ');
    // a malformed file does not keep anyone from looking at a job: a warning names it
    const broken = await sb.genjob(['show', key]);
    expect(broken.exitCode).toBe(0);
    expect(broken.stderr).toContain(`genjob: warning: ${config}: not JSON`);
  });
});

describe('genjob show and child processes', () => {
  it('loads no node:child_process when it pages nothing (commander and the pager load it on use)', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Show me', ['README.md']);
    const preload = join(sb.base, 'builtins.cjs');
    writeFileSync(
      preload,
      "const loaded = () => process.moduleLoadList.includes('NativeModule child_process');\n" +
        "process.on('exit', () => process.stderr.write('child_process loaded: ' + loaded() + '\\n'));\n",
    );
    const shown = await sb.genjob(['show', key], { env: { NODE_OPTIONS: `--require=${preload}` } });
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout.startsWith(`key       ${key}\n`)).toBe(true);
    expect(shown.stderr).toBe('child_process loaded: false\n');
    // a command that runs git loads it (the probe sees it)
    const pushed = await sb.genjob(['push'], { env: { NODE_OPTIONS: `--require=${preload}` } });
    expect(pushed.stderr).toContain('child_process loaded: true\n');
  });
});

describe('genjob show of a job file that is not a job', () => {
  const cases = [
    { name: 'a corrupted (truncated) file', bytes: '{"schema":"genjob/job@1","ke', rule: 'malformed JSON' },
    {
      name: 'a tampered instruction',
      edit: (doc: Record<string, unknown>) => ({ ...doc, instruction: 'Something else' }),
      rule: 'key is not the sha256 of its work order',
    },
  ];
  for (const c of cases) {
    it(`says it is unreadable and exits 2 for ${c.name}, still showing the state`, async () => {
      const sb = await makeSandbox();
      const key = await mintKey(sb, 'Note it', ['README.md']);
      const file = join(sb.repo, '.gen', 'queue', `${key}.json`);
      const doc = JSON.parse(readFileSync(file, 'utf8'));
      writeFileSync(file, c.bytes ?? JSON.stringify(c.edit!(doc)));
      const r = await sb.genjob(['show', key]);
      expect(r.exitCode).toBe(2);
      expect(r.stderr).toBe(`genjob: EGJ_JOB_INVALID: ${file}: not a valid job: ${c.rule}\n`);
      expect(r.stdout.split('\n').slice(0, 3)).toEqual([
        `key       ${key}`,
        'state     queue',
        `job       unreadable: ${file}: not a valid job: ${c.rule}`,
      ]);
      const json = await sb.genjob(['show', '--json', key]);
      expect(json.exitCode).toBe(2);
      expect(JSON.parse(json.stdout)).toMatchObject({
        ok: false,
        code: 'EGJ_JOB_INVALID',
        state: 'queue',
        job: null,
      });
    });
  }
});
