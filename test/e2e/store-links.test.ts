// A branch can commit .gen/, and git checks out a symbolic link as a link: `.gen/objects -> /etc/cron.d`
// made apply write the replaced bytes of a file (which the branch chooses) there as
// /etc/cron.d/<sha256>, a name cron runs, and `.gen/tmp` or `.gen/attempts` as links sent work's temps
// and records out of the repository. Every command that writes .gen/ refuses a directory of its own that
// is a link (EGJ_BAD_PATH, exit 2) before it writes anything, a job's attempts/<key>/ included; status
// still reads the store.
import { mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import { DEMO_GENERATOR, makeSandbox, mintKey } from './helpers.js';
import { gj, makeRepo, mintBump } from './trust-helpers.js';

describe('forged: a directory of .gen/ committed as a symbolic link', () => {
  it('is refused by every writer before it writes, and nothing lands where the link points', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a timeout to fetch_user', ['src/user.py']);
    const gen = sb.script('gen.sh', `exec ${DEMO_GENERATOR}`);
    expect((await sb.genjob(['work', '--once', '--no-sandbox', '--generator', gen])).exitCode).toBe(0);
    const outside = join(sb.base, 'outside');
    mkdirSync(outside);
    const before = readFileSync(join(sb.repo, 'src/user.py'));
    const cases: Array<[string, string[]]> = [
      ['objects', ['apply', key]],
      ['tmp', ['apply', key]],
      ['attempts', ['mint', '-m', 'Another change', 'README.md']],
      ['journal.d', ['drop', key]],
      ['runs', ['mint', '-m', 'Note {path}', '--each', 'src/*.py', '--run', 'r']],
    ];
    for (const [dir, args] of cases) {
      const at = join(sb.repo, '.gen', dir);
      const kept = `${at}.real`;
      try {
        renameSync(at, kept);
      } catch {
        // not made yet: the link stands in for it
      }
      symlinkSync(outside, at);
      const r = await sb.genjob(args);
      expect(r.exitCode, `${dir}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(
        `EGJ_BAD_PATH: ${at}: a symbolic link; genjob writes only inside .gen/'s own`,
      );
      expect(readdirSync(outside), dir).toEqual([]);
      expect(readFileSync(join(sb.repo, 'src/user.py')), dir).toEqual(before);
      expect((await sb.genjob(['status'])).exitCode, dir).toBe(0);
      // the store again as it was
      renameSync(at, `${at}.link`);
      try {
        renameSync(kept, at);
      } catch {
        // there was none
      }
    }
    const applied = await sb.genjob(['apply', key]);
    expect(applied.exitCode, applied.stderr).toBe(0);
  });

  it("a job's own attempts directory (keys are known before minting) is refused by work, the job put back", async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a timeout to fetch_user', ['src/user.py']);
    const outside = join(sb.base, 'outside');
    mkdirSync(outside);
    symlinkSync(outside, join(sb.repo, '.gen', 'attempts', key));
    const gen = sb.script('gen.sh', `exec ${DEMO_GENERATOR}`);
    const r = await sb.genjob(['work', '--once', '--no-sandbox', '--generator', gen]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`EGJ_BAD_PATH: ${join(sb.repo, '.gen', 'attempts', key)}: a symbolic link`);
    expect(r.stderr).toContain('was put back in queue/');
    expect(readdirSync(outside)).toEqual([]);
    expect(readdirSync(join(sb.repo, '.gen', 'queue'))).toEqual([`${key}.json`]);
  });

  it("a shadow plane, or a job's attempts directory in one, is refused by work --shadow", async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Add a timeout to fetch_user', ['src/user.py']);
    const gen = sb.script('gen.sh', `exec ${DEMO_GENERATOR}`);
    const outside = join(sb.base, 'outside');
    mkdirSync(outside);
    const shadow = join(sb.repo, '.gen', 'shadow');
    mkdirSync(shadow);
    for (const at of [join(shadow, 'b'), join(shadow, 'b', 'attempts', key)]) {
      mkdirSync(join(at, '..'), { recursive: true });
      symlinkSync(outside, at);
      const r = await sb.genjob(['work', '--shadow', 'b', '--all', '--no-sandbox', '--generator', gen]);
      expect(r.stderr).toContain(`EGJ_BAD_PATH: ${at}: a symbolic link; genjob writes only inside`);
      expect(readdirSync(outside), at).toEqual([]);
      renameSync(at, `${at}.link`);
    }
    expect(readdirSync(join(sb.repo, '.gen', 'queue'))).toEqual([`${key}.json`]);
  });

  it('.gen itself as a link is refused the same way', async () => {
    const sb = await makeSandbox();
    const outside = join(sb.base, 'outside');
    mkdirSync(outside);
    symlinkSync(outside, join(sb.repo, '.gen'));
    const r = await sb.genjob(['mint', '-m', 'Add a timeout', 'src/user.py']);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain(`EGJ_BAD_PATH: ${join(sb.repo, '.gen')}: a symbolic link`);
    expect(readdirSync(outside)).toEqual([]);
  });
});

describe('forged: a batch run directory of .gen/batches/ committed as a symbolic link', () => {
  // a new run's id is random, but `work --batch-poll` carries forward every run batches/ lists, so the
  // name is the branch's to choose (the record in it still needs a batch the provider knows)
  let fake: FakeOpenAi | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });
  const A = 'src/a.ts';

  /** A repository with one job submitted as a batch the fake provider finishes at its first look. */
  async function submitted() {
    const answer = () => ({
      body: chatCompletion(structuredAnswer([{ path: A, content: 'export const a = 2;\n' }])),
    });
    fake = await startFakeOpenAi([], { batch: { answer, pollsToFinish: 1 } });
    const repo = makeRepo({ [A]: 'export const a = 1;\n' });
    repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' };
    const key = await mintBump(repo, A);
    const s = await gj(repo, ['work', '--batch', '--generator', 'builtin:openai', '--json']);
    expect(s.exitCode, String(s.stderr)).toBe(0);
    const run = (JSON.parse(String(s.stdout)) as { submitted: { run: string } }).submitted.run;
    const outside = join(repo.outside, 'target');
    mkdirSync(outside);
    return { repo, key, run, runDir: join(repo.root, '.gen', 'batches', run), outside };
  }

  const poll = (repo: ReturnType<typeof makeRepo>) => gj(repo, ['work', '--batch-poll', '--json']);

  it('the run directory as a link is refused by --batch-poll before it writes its results there', async () => {
    const { repo, runDir, outside } = await submitted();
    // the run's files where the link points, as a branch would commit them
    renameSync(runDir, join(outside, 'run'));
    symlinkSync(join(outside, 'run'), runDir);
    const before = readdirSync(join(outside, 'run')).sort();
    const record = readFileSync(join(outside, 'run', 'record.json'));
    const r = await poll(repo);
    expect(readdirSync(join(outside, 'run')).sort()).toEqual(before);
    expect(readFileSync(join(outside, 'run', 'record.json'))).toEqual(record);
    expect(r.exitCode, String(r.stderr)).toBe(2);
    expect(String(r.stderr)).toContain(
      `EGJ_BAD_PATH: ${runDir}: a symbolic link; genjob writes only inside .gen/'s own directories, never through a link, so nothing was written`,
    );
  });

  it("a run's raw/ as a link is refused by --batch-poll before an answer is kept there", async () => {
    const { repo, key, runDir, outside } = await submitted();
    symlinkSync(outside, join(runDir, 'raw'));
    const r = await poll(repo);
    expect(readdirSync(outside)).toEqual([]);
    expect(r.exitCode, String(r.stderr)).toBe(2);
    expect(String(r.stderr)).toContain(
      `EGJ_BAD_PATH: ${join(runDir, 'raw')}: a symbolic link; genjob writes only inside .gen/'s own`,
    );
    expect(readdirSync(join(repo.root, '.gen', 'running'))).toEqual([`${key}.json`]);
  });

  it('an unsent intent behind a link is not removed through it when the poll ends it', async () => {
    const { repo, outside } = await submitted();
    // an intent no user sealed (the poll ends it, removing its record), in a run named to be listed first
    const at = join(repo.root, '.gen', 'batches', '0forged');
    const intent = {
      run: '0forged',
      state: 'intent',
      created_at: new Date().toISOString(),
      jobs: [],
      file_id: null,
      batch_id: null,
      provider_status: null,
    };
    writeFileSync(join(outside, 'record.json'), `${JSON.stringify(intent)}\n`);
    writeFileSync(join(outside, 'input.jsonl'), '');
    symlinkSync(outside, at);
    const r = await poll(repo);
    expect(readdirSync(outside).sort()).toEqual(['input.jsonl', 'record.json']);
    expect(r.exitCode, String(r.stderr)).toBe(2);
    expect(String(r.stderr)).toContain(
      `EGJ_BAD_PATH: ${at}: a symbolic link; genjob removes only inside .gen/'s own directories, never through a link, so nothing was removed`,
    );
  });
});

describe('forged: a journal file of .gen/ committed as a symbolic link', () => {
  // a file genjob appends to is opened where it is: O_APPEND follows a link as any open does
  it("a shadow plane's journal.jsonl is not appended to through it by work --shadow", async () => {
    const sb = await makeSandbox();
    await mintKey(sb, 'Add a timeout to fetch_user', ['src/user.py']);
    const gen = sb.script('gen.sh', `exec ${DEMO_GENERATOR}`);
    const target = join(sb.base, 'victim');
    writeFileSync(target, 'kept\n');
    const plane = join(sb.repo, '.gen', 'shadow', 'b');
    mkdirSync(plane, { recursive: true });
    symlinkSync(target, join(plane, 'journal.jsonl'));
    const r = await sb.genjob(['work', '--shadow', 'b', '--all', '--no-sandbox', '--generator', gen]);
    expect(readFileSync(target, 'utf8')).toBe('kept\n');
    expect(r.exitCode, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `EGJ_BAD_PATH: ${join(plane, 'journal.jsonl')}: a symbolic link; genjob writes only inside .gen/'s own directories, never through a link, so nothing was written`,
    );
  });

  it('a journal segment named for a gone process of this host is not taken over (and appended to) through it', async () => {
    const sb = await makeSandbox();
    const target = join(sb.base, 'victim');
    writeFileSync(target, 'kept');
    const segments = join(sb.repo, '.gen', 'journal.d');
    mkdirSync(segments, { recursive: true });
    // pid 1 never started at time 1: a gone process, whose segment the next writer takes over
    const host = hostname().replace(/[^A-Za-z0-9._]/g, '_') || 'host';
    const forged = join(segments, `${host}-1-1.jsonl`);
    symlinkSync(target, forged);
    expect((await sb.genjob(['mint', '-m', 'Add a timeout', 'src/user.py'])).exitCode).toBe(0);
    expect(readFileSync(target, 'utf8')).toBe('kept');
  });
});
