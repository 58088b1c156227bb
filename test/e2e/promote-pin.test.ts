// promote pins how the user ran the shadow plane — the generator and the sandbox flags of that
// `work --shadow` run, from the worker's own record of it — never what the shadow host wrote in its
// receipt. A hostile host that names another command in receipt.generator.command does not get it
// run live; a shadow run that needed --generator-bind gets it again for the promoted live run, and
// only for that job.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-store.js';
import { makeSandbox, mintKey, readJson } from './helpers.js';
import { genjob, HOSTILE_REMOTE, mint, NODE, useBoxes } from './ssh-helpers.js';

const box = useBoxes();

describe('promote pins the generator the user ran the shadow plane with', () => {
  it('a shadow host that lies in receipt.generator.command: the pin and the live run use the command the user gave', async () => {
    const sb = await box();
    const key = await mint(sb, 'rewrite a', ['src/a.txt']);
    const ran = path.join(sb.dir, 'user-generator-ran');
    const gen = path.join(sb.dir, 'gen.sh');
    writeFileSync(gen, `: > ${ran}\necho 'from the user generator' > src/a.txt\n`);
    const userGenerator = `sh ${gen}`;
    const shadow = await genjob(sb, [
      'work',
      '--shadow',
      's',
      key,
      '--generator',
      userGenerator,
      '--launch',
      `${NODE} ${HOSTILE_REMOTE} lying-generator ${sb.dir}`,
    ]);
    expect(shadow.exitCode, String(shadow.stderr)).toBe(0);
    const receipt = readJson(path.join(sb.repo, '.gen/shadow/s/results', key, 'receipt.json'));
    expect((receipt.generator as { command: string }).command).toContain('evil.example'); // the lie

    const p = await genjob(sb, ['promote', '--shadow', 's', key, '--json']);
    expect(p.exitCode, String(p.stderr)).toBe(0);
    expect(JSON.parse(String(p.stdout))).toMatchObject({ generator: userGenerator, serve_args: [] });
    const pin = readJson(path.join(sb.repo, '.gen/promoted', `${key}.json`));
    expect(pin.generator).toBe(userGenerator);

    // the live run (a real local serve, no --generator: the pin decides) runs the user's command
    const w = await genjob(sb, ['work', '--once', '--json']);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(existsSync(ran)).toBe(true);
    const live = readJson(path.join(sb.repo, '.gen/receipts', `${key}.json`));
    expect(live).toMatchObject({ status: 'ok', plane: 'live', generator: { command: userGenerator } });
  });

  it('refuses to pin an answer the worker has no record of running, or one run without --generator (exit 3)', async () => {
    const sb = await box();
    const key = await mint(sb, 'rewrite a', ['src/a.txt']);
    const lying = `${NODE} ${HOSTILE_REMOTE} lying-generator ${sb.dir}`;
    // without --generator the host chose: its word is all there is
    expect((await genjob(sb, ['work', '--shadow', 's', key, '--launch', lying])).exitCode).toBe(0);
    const r = await genjob(sb, ['promote', '--shadow', 's', key]);
    expect(r.exitCode).toBe(3);
    expect(String(r.stderr)).toMatch(
      /EGJ_SHADOW_RUN_UNKNOWN: .*run\.json: shadow:s was run without --generator/,
    );
    // an answer stored by an older genjob (no run.json): the same refusal
    expect(
      (await genjob(sb, ['work', '--shadow', 't', key, '--generator', 'g', '--launch', lying])).exitCode,
    ).toBe(0);
    rmSync(path.join(sb.repo, '.gen/shadow/t/results', key, 'run.json'));
    const old = await genjob(sb, ['promote', '--shadow', 't', key]);
    expect(old.exitCode).toBe(3);
    expect(String(old.stderr)).toContain('EGJ_SHADOW_RUN_UNKNOWN');
    expect(existsSync(path.join(sb.repo, '.gen/promoted', `${key}.json`))).toBe(false);
  });
});

describe("promote reuses the shadow run's sandbox flags", () => {
  it('a shadow run with --generator-bind: the promoted live run gets the bind (ok), another job of the same run does not', async () => {
    const sb = await makeSandbox();
    // a directory outside everything the tests expose, read by the generator
    const tools = tempDir('genjob-tools-');
    mkdirSync(path.join(tools, 'data'));
    writeFileSync(path.join(tools, 'data', 'line.txt'), '# from the bound tools\n');
    const gen = sb.script('gen.sh', `cat ${tools}/data/line.txt >> src/user.py`);
    const promoted = await mintKey(sb, 'one', ['src/user.py']);
    const shadow = await sb.genjob([
      'work',
      '--shadow',
      'b',
      promoted,
      '--generator',
      gen,
      '--generator-bind',
      tools,
    ]);
    expect(shadow.exitCode, shadow.stderr).toBe(0);
    const p = await sb.genjob(['promote', '--shadow', 'b', promoted]);
    expect(p.exitCode, p.stderr).toBe(0);
    expect(p.stdout).toContain(`and sandbox flags --generator-bind ${tools} (as the shadow run was)`);
    const other = await mintKey(sb, 'two', ['src/user.py', 'README.md']);

    // the live run gives no --generator-bind: the pin brings it for the promoted job only
    const w = await sb.genjob(['work', '--drain', '--json', '--generator', gen]);
    expect(w.exitCode, w.stderr).toBe(0);
    const receipt = (k: string) => readJson(path.join(sb.repo, '.gen/receipts', `${k}.json`));
    expect(receipt(promoted)).toMatchObject({ status: 'ok', plane: 'live' });
    expect(readFileSync(path.join(sb.repo, '.gen/out', promoted, 'src/user.py'), 'utf8')).toMatch(
      /# from the bound tools\n$/,
    );
    expect(receipt(other)).toMatchObject({ status: 'aborted' });
  });
});
