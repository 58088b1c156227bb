// A branch can commit .gen/, and git checks out a symbolic link as a link: `.gen/objects -> /etc/cron.d`
// made apply write the replaced bytes of a file (which the branch chooses) there as
// /etc/cron.d/<sha256>, a name cron runs, and `.gen/tmp` or `.gen/attempts` as links sent work's temps
// and records out of the repository. Every command that writes .gen/ refuses a directory of its own that
// is a link (EGJ_BAD_PATH, exit 2) before it writes anything, a job's attempts/<key>/ included; status
// still reads the store.
import { mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEMO_GENERATOR, makeSandbox, mintKey } from './helpers.js';

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
