// mint through the built CLI: every refused path exits 2 naming the path and the rule, and
// nothing is written; --json results of mint, status and show; resolving key prefixes.
import { createHash } from 'node:crypto';
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { workOrderKey } from '../../src/core/job.js';
import { ALL_DIRS } from '../../src/store/layout.js';
import { DEMO_GENERATOR, genDir, makeSandbox, mintKey, snapshot, TIMEOUT_INSTRUCTION } from './helpers.js';

describe('mint refuses bad input with exit 2, naming the path and the rule', () => {
  const cases = [
    {
      // mint sorts the paths: only a repeat is a mistake (not the job file's "not sorted" rule)
      name: 'a path given twice',
      args: ['-m', 'x', 'src/user.py', 'src/user.py'],
      code: 'EGJ_BAD_PATH',
      rule: 'src/user.py is given twice; name each file once',
    },
    {
      name: 'a path given twice, typed two ways',
      args: ['-m', 'x', '--create', 'src/new.py', 'src/user.py', './src/new.py'],
      code: 'EGJ_BAD_PATH',
      rule: 'src/new.py is given twice (as ./src/new.py and src/new.py); name each file once',
    },
    {
      name: 'an absolute path outside the root',
      args: ['-m', 'x', '/etc/passwd'],
      code: 'EGJ_BAD_PATH',
      rule: '/etc/passwd: a path must be inside the repository root {root} (it names /etc/passwd: paths are relative to the current directory)',
    },
    {
      name: 'a .. path leaving the root',
      args: ['-m', 'x', '../outside.txt'],
      code: 'EGJ_BAD_PATH',
      rule: '../outside.txt: a path must be inside the repository root {root} (it names {base}/outside.txt: paths are relative to the current directory)',
    },
    {
      name: 'a .. path in the middle',
      args: ['-m', 'x', 'src/../../outside.txt'],
      code: 'EGJ_BAD_PATH',
      rule: 'src/../../outside.txt: a path must be inside the repository root {root} (it names {base}/outside.txt: paths are relative to the current directory)',
    },
    {
      name: 'a symlink',
      args: ['-m', 'x', 'link.py'],
      code: 'EGJ_BAD_PATH',
      rule: 'link.py: is a symlink; genjob only ships regular files',
    },
    {
      name: 'a path through a symlinked directory',
      args: ['-m', 'x', 'srclink/user.py'],
      code: 'EGJ_BAD_PATH',
      rule: 'srclink/user.py: srclink is a symlink; genjob never writes through links',
    },
    {
      name: 'a directory',
      args: ['-m', 'x', 'src'],
      code: 'EGJ_BAD_PATH',
      rule: 'src: is not a regular file',
    },
    {
      name: 'a file inside .gen/',
      args: ['-m', 'x', '.gen/journal.jsonl'],
      code: 'EGJ_BAD_PATH',
      rule: '.gen/journal.jsonl: path is inside .gen/',
    },
    {
      name: 'a file inside .git/',
      args: ['-m', 'x', '.git/config'],
      code: 'EGJ_BAD_PATH',
      rule: '.git/config: path is inside .git/',
    },
    {
      name: 'a file inside a nested .git/',
      args: ['-m', 'x', 'vendor/lib/.git/config'],
      code: 'EGJ_BAD_PATH',
      rule: 'vendor/lib/.git/config: path is inside .git/',
    },
    {
      name: 'a file inside a case-folded .GIT/',
      args: ['-m', 'x', '.GIT/hooks/pre-commit'],
      code: 'EGJ_BAD_PATH',
      rule: '.GIT/hooks/pre-commit: path is inside .git/ (component ".GIT" is .git after case folding, HFS+ or NTFS aliasing)',
    },
    {
      name: 'a file inside .Gen/',
      args: ['-m', 'x', '.Gen/queue/x.json'],
      code: 'EGJ_BAD_PATH',
      rule: '.Gen/queue/x.json: path is inside .gen/ (component ".Gen" is .gen after case folding, HFS+ or NTFS aliasing)',
    },
    {
      name: 'a hardlink',
      args: ['-m', 'x', 'hard.py'],
      code: 'EGJ_BAD_PATH',
      rule: 'hard.py: has 2 hard links; genjob only ships files with one name (pass --allow-hardlinks to ship it anyway)',
    },
    {
      name: 'a missing file without --create',
      args: ['-m', 'x', 'src/missing.py'],
      code: 'EGJ_BAD_PATH',
      rule: 'src/missing.py: no such file ({root}/src/missing.py; paths are relative to the current directory; use --create for a file the generator should create)',
    },
    {
      name: '--create of an existing file',
      args: ['-m', 'x', '--create', 'README.md'],
      code: 'EGJ_BAD_PATH',
      rule: 'README.md: --create names a file that already exists; list it as a path instead',
    },
    {
      name: 'no instruction',
      args: ['src/user.py'],
      code: 'EGJ_USAGE',
      rule: 'no instruction: pass -m "..." or -f FILE',
    },
    {
      name: 'the instruction given as the first argument',
      args: ['Fix the bug', 'src/user.py', "it's.py"],
      code: 'EGJ_USAGE',
      rule: `no instruction: pass -m "..." or -f FILE (did you mean: genjob mint -m 'Fix the bug' src/user.py 'it'\\''s.py'?)`,
    },
    {
      name: 'the instruction alone',
      args: ['Fix the bug'],
      code: 'EGJ_USAGE',
      rule: `no instruction: pass -m "..." or -f FILE (did you mean: genjob mint -m 'Fix the bug' FILE...?)`,
    },
    {
      name: 'an empty instruction',
      args: ['-m', '  ', 'src/user.py'],
      code: 'EGJ_BAD_INPUT',
      rule: '-m: the instruction is empty',
    },
    {
      // fewer characters than the cap, more bytes: 65,527 two-byte characters
      name: 'an instruction longer than a generator can be given in its environment',
      args: ['-m', 'é'.repeat(65_527), 'src/user.py'],
      code: 'EGJ_BAD_INPUT',
      rule: '-m: the instruction is 131,054 bytes of UTF-8, more than the 131,052 a generator can be given (it gets the instruction in its environment, as GENJOB_INSTRUCTION): put the long part in a file and pass it with --read FILE',
    },
    {
      name: 'no paths',
      args: ['-m', 'x'],
      code: 'EGJ_USAGE',
      rule: 'name at least one file the generator may change (or --create one)',
    },
    {
      name: 'a secret file by name',
      args: ['-m', 'x', 'deploy/.env'],
      code: 'EGJ_SECRET',
      rule: 'deploy/.env: ',
    },
  ];
  for (const c of cases) {
    it(`for ${c.name}`, async () => {
      const sb = await makeSandbox();
      symlinkSync('src/user.py', join(sb.repo, 'link.py'));
      symlinkSync('src', join(sb.repo, 'srclink'));
      writeFileSync(join(sb.base, 'outside-secret.txt'), 'outside the repository\n');
      linkSync(join(sb.base, 'outside-secret.txt'), join(sb.repo, 'hard.py'));
      mkdirSync(join(sb.repo, 'deploy'));
      writeFileSync(join(sb.repo, 'deploy/.env'), 'PORT=8080\n');
      for (const f of ['vendor/lib/.git/config', '.GIT/hooks/pre-commit', '.Gen/queue/x.json']) {
        mkdirSync(join(sb.repo, dirname(f)), { recursive: true });
        writeFileSync(join(sb.repo, f), '[core]\n\tfsmonitor = touch /tmp/pwned\n');
      }
      for (const d of ALL_DIRS) mkdirSync(join(sb.repo, '.gen', d), { recursive: true }); // a used .gen/
      writeFileSync(join(sb.repo, '.gen/journal.jsonl'), '');
      const before = snapshot(sb.repo, ['.git']);
      const r = await sb.genjob(['mint', ...c.args]);
      expect(r.exitCode).toBe(2);
      const rule = c.rule.replaceAll('{root}', sb.repo).replaceAll('{base}', dirname(sb.repo));
      const line = `genjob: ${c.code}: ${rule}`;
      if (c.code === 'EGJ_SECRET') expect(r.stderr.startsWith(line)).toBe(true);
      else expect(r.stderr).toBe(`${line}\n`);
      expect(r.stdout).toBe('');
      expect(snapshot(sb.repo, ['.git'])).toEqual(before);
    });
  }

  it('prints a JSON error on stdout with --json', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob(['mint', '--json', '-m', 'x', 'src']);
    expect(r.exitCode).toBe(2);
    expect(JSON.parse(r.stdout)).toEqual({
      schema: 'genjob/result@1',
      ok: false,
      code: 'EGJ_BAD_PATH',
      message: 'src: is not a regular file',
    });
  });
});

describe('an instruction no generator could be given', () => {
  it('is refused from a file, naming it (too long, or saved as UTF-16), and for the one path of --each that makes it too long, minting none', async () => {
    const sb = await makeSandbox();
    const file = join(sb.base, 'long.md');
    writeFileSync(file, 'x'.repeat(200_000));
    const before = snapshot(sb.repo, ['.git', '.gen']);
    const whole = await sb.genjob(['mint', '-f', file, 'src/user.py']);
    expect(whole.exitCode).toBe(2);
    expect(whole.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_BAD_INPUT: ${file}: the instruction is 200,000 bytes of UTF-8, more than the 131,052`,
      ),
    );
    // saved as UTF-16: a NUL in every other byte, which no environment variable can carry
    writeFileSync(file, Buffer.from('\ufeffFix the bug', 'utf16le'));
    const utf16 = await sb.genjob(['mint', '-f', file, 'src/user.py']);
    expect(utf16.exitCode).toBe(2);
    expect(utf16.stderr).toBe(
      `genjob: EGJ_BAD_INPUT: ${file}: the instruction holds a NUL character (character 4), which a generator's environment cannot carry: save it as UTF-8 text\n`,
    );
    // 131,046 bytes with {path}: src/user.py fits (131,051), tests/run_tests.py, the first path of 18 characters, does not (131,058)
    writeFileSync(file, `${'x'.repeat(131_040)}{path}`);
    await execa('git', ['add', '-A'], { cwd: sb.repo }); // --each takes tracked files
    const each = await sb.genjob(['mint', '--each', '**/*.py', '-f', file]);
    expect(each.exitCode).toBe(2);
    expect(each.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_BAD_INPUT: ${file}, for tests/run_tests.py: the instruction is 131,058 bytes of UTF-8`,
      ),
    );
    expect(snapshot(sb.repo, ['.git', '.gen'])).toEqual(before);
    expect(existsSync(join(sb.repo, '.gen/queue')) ? readdirSync(join(sb.repo, '.gen/queue')) : []).toEqual(
      [],
    );
  });
});

describe('more paths than a job may have', () => {
  it('are refused at mint, not minted into a job work would dead-letter as invalid', async () => {
    const sb = await makeSandbox();
    mkdirSync(join(sb.repo, 'many'));
    const paths = Array.from({ length: 10_001 }, (_, i) => `many/${i}`);
    for (const p of paths) writeFileSync(join(sb.repo, p), 'x');
    const r = await sb.genjob(['mint', '-m', 'touch them all', ...paths]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toBe(
      'genjob: EGJ_BAD_INPUT: 10,001 allowed paths, more than the 10,000 a job may have: split the work into several jobs (mint --each makes one per file)\n',
    );
    expect(existsSync(join(sb.repo, '.gen/queue')) ? readdirSync(join(sb.repo, '.gen/queue')) : []).toEqual(
      [],
    );
  });
});

describe('mint --allow-hardlinks', () => {
  it('ships an input with a second hard link when asked to, and records its hash', async () => {
    const sb = await makeSandbox();
    linkSync(join(sb.repo, 'src/user.py'), join(sb.base, 'second-name.py'));
    const refused = await sb.genjob(['mint', '-m', 'x', 'src/user.py']);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/src\/user\.py: has 2 hard links/);
    const r = await sb.genjob(['mint', '--json', '--allow-hardlinks', '-m', 'x', 'src/user.py']);
    expect(r.exitCode).toBe(0);
    const sha = createHash('sha256')
      .update(readFileSync(join(sb.repo, 'src/user.py')))
      .digest('hex');
    expect(JSON.parse(r.stdout).inputs).toEqual([{ path: 'src/user.py', sha256: sha }]);
  });
});

describe('--json results', () => {
  it('mint has key, digest and minted, and the job file is named by the key', async () => {
    const sb = await makeSandbox();
    const r = await sb.genjob([
      'mint',
      '--json',
      '-m',
      TIMEOUT_INSTRUCTION,
      'tests/test_user.py',
      'src/user.py',
      '--create',
      'src/http.py',
    ]);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    const sha = (p: string) =>
      createHash('sha256')
        .update(readFileSync(join(sb.repo, p)))
        .digest('hex');
    expect(out).toEqual({
      schema: 'genjob/result@1',
      ok: true,
      key: expect.stringMatching(/^[0-9a-f]{64}$/),
      digest: expect.stringMatching(/^[0-9a-f]{64}$/),
      minted: true,
      state: 'queue',
      inputs: [
        { path: 'src/http.py', sha256: null },
        { path: 'src/user.py', sha256: sha('src/user.py') },
        { path: 'tests/test_user.py', sha256: sha('tests/test_user.py') },
      ],
    });
    const file = readFileSync(join(sb.repo, '.gen/queue', `${out.key}.json`));
    expect(
      createHash('sha256')
        .update(file.subarray(0, file.length - 1))
        .digest('hex'),
    ).toBe(out.digest);
  });

  it('mint in a subdirectory names paths from the root, however they are typed', async () => {
    const sb = await makeSandbox();
    const cwd = join(sb.repo, 'src');
    const typed = ['user.py', './user.py', '../tests/test_user.py', '.././README.md', 'new.py'];
    const r = await sb.genjob(['mint', '--json', '-m', 'x', ...typed.slice(1, 4), '--create', 'new.py'], {
      cwd,
    });
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).inputs.map((i: { path: string }) => i.path)).toEqual([
      'README.md',
      'src/new.py',
      'src/user.py',
      'tests/test_user.py',
    ]);
    const plain = await sb.genjob(['mint', '--json', '-m', 'y', typed[0]!], { cwd });
    expect(JSON.parse(plain.stdout).inputs.map((i: { path: string }) => i.path)).toEqual(['src/user.py']);
    const outside = await sb.genjob(['mint', '-m', 'z', '../../x.py'], { cwd });
    expect(outside.exitCode).toBe(2);
  });

  it('status has counts, usage and one row per job', async () => {
    const sb = await makeSandbox();
    const a = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py']);
    expect((await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
    const b = await mintKey(sb, 'Second line\nwith more', ['README.md']);
    const r = await sb.genjob(['status', '--json']);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(true);
    expect(out.counts).toEqual({ queue: 1, running: 0, received: 1, applied: 0, reverted: 0, dead: 0 });
    expect(out.usage).toEqual({ prompt_tokens: 0, completion_tokens: 0, requests: 0 });
    expect(out.jobs).toEqual([
      {
        key: b,
        state: 'queue',
        epoch: 0,
        age_s: expect.any(Number),
        receipt: null,
        stale: false,
        instruction: 'Second line',
        host: null,
      },
      {
        key: a,
        state: 'received',
        epoch: 1,
        age_s: expect.any(Number),
        receipt: 'ok',
        stale: false,
        instruction: TIMEOUT_INSTRUCTION,
        host: 'local',
      },
    ]);
  });

  it('show has the job, its attempts, receipt and journal', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py']);
    expect((await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR])).exitCode).toBe(0);
    const r = await sb.genjob(['show', '--json', key.slice(0, 6)]);
    expect(r.exitCode).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({
      ok: true,
      key,
      state: 'received',
      job: {
        schema: 'genjob/job@1',
        key,
        instruction: TIMEOUT_INSTRUCTION,
        inputs: [{ path: 'src/user.py' }],
      },
      attempts: [{ key, epoch: 1, destination: 'local' }],
      lease: null,
      receipt: {
        schema: 'genjob/receipt@1',
        key,
        epoch: 1,
        status: 'ok',
        outputs: [{ path: 'src/user.py' }],
      },
      applied: null,
      dead: [],
    });
    expect(out.journal.map((e: { event: string }) => e.event)).toEqual(
      expect.arrayContaining(['minted', 'claimed', 'attempt', 'received']),
    );
  });
});

describe('key prefixes', () => {
  it('resolve when unique and 4+ characters; an ambiguous, unknown or malformed one is exit 2', async () => {
    const sb = await makeSandbox();
    // two instructions whose keys share their first 4 hex digits (found, not guessed)
    const readme = createHash('sha256')
      .update(readFileSync(join(sb.repo, 'README.md')))
      .digest('hex');
    const keyOf = (i: number) => workOrderKey(`Probe ${i}`, [{ path: 'README.md', sha256: readme }]);
    const byPrefix = new Map<string, number>();
    let pair: [number, number] | undefined;
    for (let i = 0; pair === undefined; i++) {
      const p = keyOf(i).slice(0, 4);
      const j = byPrefix.get(p);
      if (j !== undefined) pair = [j, i];
      else byPrefix.set(p, i);
    }
    const k1 = await mintKey(sb, `Probe ${pair[0]}`, ['README.md']);
    const k2 = await mintKey(sb, `Probe ${pair[1]}`, ['README.md']);
    expect(k1).toBe(keyOf(pair[0]));
    const shared = k1.slice(0, 4);
    let unique = 4;
    while (k1.slice(0, unique) === k2.slice(0, unique)) unique++;

    const show = await sb.genjob(['show', '--json', k1.slice(0, unique)]);
    expect(show.exitCode).toBe(0);
    expect(JSON.parse(show.stdout).key).toBe(k1);

    const ambiguous = await sb.genjob(['show', shared]);
    expect(ambiguous.exitCode).toBe(2);
    const listed = [k1, k2]
      .sort()
      .map((k) => k.slice(0, 12))
      .join(', ');
    expect(ambiguous.stderr).toBe(
      `genjob: EGJ_AMBIGUOUS_KEY: ${shared}: matches 2 jobs (${listed}); give more characters\n`,
    );

    let unknown = 'ffff';
    for (let n = 0; [k1, k2].some((k) => k.startsWith(unknown)); n++)
      unknown = n.toString(16).padStart(4, '0');
    const missing = await sb.genjob(['verify', unknown]);
    expect(missing).toMatchObject({
      exitCode: 2,
      stderr: `genjob: EGJ_UNKNOWN_KEY: ${unknown}: no job with this key in ${join(sb.repo, '.gen')}\n`,
    });

    const short = await sb.genjob(['apply', k1.slice(0, 3)]);
    expect(short).toMatchObject({
      exitCode: 2,
      stderr: `genjob: EGJ_BAD_KEY: "${k1.slice(0, 3)}": a key or key prefix is 4 to 64 hex characters\n`,
    });
    expect(genDir(sb, 'applied')).toEqual([]);
  });
});

describe('what mint prints', () => {
  it('puts only the key on stdout, one per job with --each, and what it did on stderr', async () => {
    const sb = await makeSandbox();
    const first = await sb.genjob(['mint', '-m', 'x', 'README.md']);
    expect(first.exitCode).toBe(0);
    expect(first.stdout).toMatch(/^[0-9a-f]{64}\n$/);
    const key = first.stdout.trim();
    expect(first.stderr).toBe(`minted: 1 path(s) → .gen/queue/${key}.json\n`);
    // the same mint again: the same key, nothing else, on stdout
    const again = await sb.genjob(['mint', '-m', 'x', 'README.md']);
    expect(again).toMatchObject({
      exitCode: 0,
      stdout: `${key}\n`,
      stderr: 'already minted (state: queue)\n',
    });
    // a fan-out: one key a line, in the order of the matched files
    await execa('git', ['add', '-A'], { cwd: sb.repo }); // --each takes tracked files
    const each = await sb.genjob(['mint', '--each', '**/*.py', '-m', 'Type {path}']);
    expect(each.exitCode, each.stderr).toBe(0);
    const listed = JSON.parse(
      (await sb.genjob(['mint', '--json', '--each', '**/*.py', '-m', 'Type {path}'])).stdout,
    ) as { jobs: Array<{ path: string; key: string }> };
    expect(each.stdout).toBe(listed.jobs.map((j) => `${j.key}\n`).join(''));
    expect(each.stderr).toContain(`${listed.jobs[0]!.path}: ${listed.jobs[0]!.key.slice(0, 12)}\n`);
    expect(each.stderr).toMatch(/minted \d+ of \d+ job\(s\)/);
  });
});
