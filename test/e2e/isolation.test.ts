// The generator's view and reach: it sees only the job's allowed files (never the decoy secret
// elsewhere in the repository), and a write outside them makes the receipt `rejected`, which
// verify and apply refuse, leaving the repository byte-identical.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { genDir, makeSandbox, mintKey, readJson, snapshot } from './helpers.js';

describe('the generator workspace', () => {
  it('holds exactly the allowed files that exist, and never the secret file elsewhere in the repo', async () => {
    const sb = await makeSandbox();
    const listing = join(sb.base, 'workspace-listing.txt');
    // list the workspace (outside it, so the listing is no output), and fail if the decoy is there
    const gen = sb.script(
      'list-workspace.sh',
      `find . -print | LC_ALL=C sort > ${JSON.stringify(listing)}\n` +
        'if [ -e config/credentials.txt ] || [ -e ../repo/config/credentials.txt ]; then echo "saw the secret" >&2; exit 9; fi\n' +
        'echo "# looked around" >> src/user.py',
    );
    const key = await mintKey(sb, 'Look around', ['src/user.py']);
    const work = await sb.genjob(['work', '--once', '--generator', gen]);
    expect(work.exitCode).toBe(0);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(listing, 'utf8')).toBe('.\n./src\n./src/user.py\n');
    const receipt = readJson<{ status: string; outputs: Array<{ path: string }> }>(
      join(sb.repo, '.gen/receipts', `${key}.json`),
    );
    expect(receipt.status).toBe('ok');
    expect(receipt.outputs.map((o) => o.path)).toEqual(['src/user.py']);
  });

  it('runs in the workspace with GENJOB_INSTRUCTION, GENJOB_KEY and GENJOB_JOB set', async () => {
    const sb = await makeSandbox();
    const seen = join(sb.base, 'env.txt');
    const gen = sb.script(
      'env.sh',
      `{ echo "$GENJOB_INSTRUCTION"; echo "$GENJOB_KEY"; node -e 'const j=require(process.env.GENJOB_JOB); console.log(j.key, j.inputs.map(i=>i.path+":"+i.sha256).join(","))'; } > ${JSON.stringify(seen)}\n` +
        'echo "created" > NEW.md',
    );
    const key = await mintKey(sb, 'Report the environment', ['README.md'], ['--create', 'NEW.md']);
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    const { readFileSync } = await import('node:fs');
    const [instruction, envKey, jobLine] = readFileSync(seen, 'utf8').split('\n');
    expect(instruction).toBe('Report the environment');
    expect(envKey).toBe(key);
    expect(jobLine).toMatch(new RegExp(`^${key} NEW.md:null,README.md:[0-9a-f]{64}$`));
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, 'NEW.md'), 'utf8')).toBe('created\n');
  });
  it('has the parent directories of a file to create, and apply creates them in the repository', async () => {
    const sb = await makeSandbox();
    const gen = sb.script('create.sh', 'echo "hello" > docs/guide/intro.md');
    const key = await mintKey(sb, 'Write an intro', [], ['--create', 'docs/guide/intro.md']);
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    expect(readJson(join(sb.repo, '.gen/receipts', `${key}.json`))).toMatchObject({
      status: 'ok',
      reason: null,
    });
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(join(sb.repo, 'docs/guide/intro.md'), 'utf8')).toBe('hello\n');
  });
});

describe('a generator that writes outside the allowed paths', () => {
  const cases = [
    {
      name: 'a new file at the top',
      body: 'echo leaked > LEAK.txt',
      reason: 'wrote "LEAK.txt", which is outside the allowed paths',
    },
    {
      name: 'a file in a directory of its own',
      body: 'mkdir -p config && echo x > config/credentials.txt',
      reason: 'created directory "config" outside the allowed paths',
    },
    {
      name: 'a sibling of an allowed file',
      body: 'echo x > src/other.py',
      reason: 'wrote "src/other.py", which is outside the allowed paths',
    },
    {
      name: 'a symlink at an allowed path',
      body: 'rm src/user.py && ln -s /etc/passwd src/user.py',
      reason: '"src/user.py" is a symlink; only regular files may be outputs',
    },
    {
      name: 'a deleted allowed file',
      body: 'rm src/user.py',
      reason: 'deleted allowed file "src/user.py"; genjob does not apply deletions',
    },
  ];
  for (const c of cases) {
    it(`gets a rejected receipt that verify and apply refuse with exit 3, the repo byte-identical (${c.name})`, async () => {
      const sb = await makeSandbox();
      const gen = sb.script('outside.sh', `echo "# edit" >> src/user.py\n${c.body}`);
      const before = snapshot(sb.repo);
      const key = await mintKey(sb, 'Stray outside', ['src/user.py']);
      const work = await sb.genjob(['work', '--once', '--generator', gen]);
      expect(work.exitCode).toBe(0);
      expect(work.stderr).toContain(`${key.slice(0, 12)} received rejected: ${c.reason}`);
      const receiptFile = join(sb.repo, '.gen/receipts', `${key}.json`);
      expect(readJson(receiptFile)).toMatchObject({ status: 'rejected', reason: c.reason, outputs: [] });

      const verify = await sb.genjob(['verify', key]);
      expect(verify.exitCode).toBe(3);
      expect(verify.stderr).toBe(
        `genjob: EGJ_STATUS_NOT_OK: ${receiptFile}: status is rejected: ${c.reason}\n`,
      );
      const apply = await sb.genjob(['apply', key]);
      expect(apply.exitCode).toBe(3);
      expect(apply.stderr).toBe(verify.stderr);
      expect(snapshot(sb.repo)).toEqual(before);
      expect(genDir(sb, 'applied')).toEqual([]);
      expect(genDir(sb, 'received')).toEqual([`${key}.json`]);
    });
  }
});
