// promote pins how the user ran the shadow plane — the generator and the sandbox flags of that
// `work --shadow` run, from the worker's own record of it — never what the shadow host wrote in its
// receipt. A hostile host that names another command in receipt.generator.command does not get it
// run live; a shadow run that needed --generator-bind gets it again for the promoted live run, and
// only for that job. A promoted run is generated again even where the live run before it used the same
// generator command (builtin:openai with another model): the host never answers it with that run.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import { tempDir } from '../helpers/temp-store.js';
import { makeSandbox, mintKey, readJson } from './helpers.js';
import { genjob, HOSTILE_REMOTE, mint, NODE, useBoxes } from './ssh-helpers.js';
import { gj, makeRepo, mintedKey } from './trust-helpers.js';

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

describe('a promoted run is a new generation', () => {
  let fake: FakeOpenAi | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it('promoting a plane run with the same generator command as the live run (another model): the host generates again, not from the live entry', async () => {
    // the fake endpoint writes which model answered
    fake = await startFakeOpenAi([], {
      answer: (body) => {
        const model = String((body as { model: string }).model);
        const content = `export const a = '${model}';\n`;
        return { body: chatCompletion(structuredAnswer([{ path: 'src/a.ts', content }]), { model }) };
      },
    });
    const repo = makeRepo({ 'src/a.ts': 'export const a = 1;\n' });
    repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_RETRY_BASE_MS: '0' };
    const as = (model: string) => ({ env: { GENJOB_OPENAI_MODEL: model } });
    const m = await gj(repo, ['mint', '-m', 'rewrite', 'src/a.ts']);
    expect(m.exitCode, String(m.stderr)).toBe(0);
    const key = mintedKey(m);
    const gen = ['--generator', 'builtin:openai'];
    const live = await gj(repo, ['work', '--once', ...gen], as('model-a'));
    expect(live.exitCode, String(live.stderr)).toBe(0);
    const shadow = await gj(repo, ['work', '--shadow', 'b', key, ...gen], as('model-b'));
    expect(shadow.exitCode, String(shadow.stderr)).toBe(0);
    const p = await gj(repo, ['promote', '--shadow', 'b', key]);
    expect(p.exitCode, String(p.stderr)).toBe(0);

    const w = await gj(repo, ['work', '--once', ...gen], as('model-b'));
    expect(w.exitCode, String(w.stderr)).toBe(0);
    const receipt = readJson(path.join(repo.root, '.gen/receipts', `${key}.json`));
    expect(receipt).toMatchObject({
      status: 'ok',
      plane: 'live',
      epoch: 2,
      cached: false,
      generator: { command: 'builtin:openai', version: 'model-b' },
    });
    expect(readFileSync(path.join(repo.root, '.gen/out', key, 'src/a.ts'), 'utf8')).toBe(
      "export const a = 'model-b';\n",
    );
    expect(fake.requests.filter((q) => q.path === '/v1/chat/completions')).toHaveLength(3);
  });
});
