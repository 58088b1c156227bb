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
import { makeSandbox, mintKey, readJson, type Sandbox } from './helpers.js';
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

/**
 * A job run in shadow plane b by a generator that reads a line from a directory outside everything the
 * tests expose (so it needs --generator-bind), then promoted: the pin carries the bind.
 */
async function promotedWithBind(sb: Sandbox): Promise<{ tools: string; gen: string; promoted: string }> {
  const tools = tempDir('genjob-tools-');
  mkdirSync(path.join(tools, 'data'));
  writeFileSync(path.join(tools, 'data', 'line.txt'), '# from the bound tools\n');
  const gen = sb.script('bound-gen.sh', `cat ${tools}/data/line.txt >> src/user.py`);
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
  return { tools, gen, promoted };
}

describe("promote reuses the shadow run's sandbox flags", () => {
  it('a shadow run with --generator-bind: the promoted live run gets the bind (ok), another job of the same run does not', async () => {
    const sb = await makeSandbox();
    const { gen, promoted } = await promotedWithBind(sb);
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

describe('only a pin and a run record this user sealed are followed (a branch can commit any file under .gen/)', () => {
  /** A pin as `promote` writes it, for `key`, naming `generator` and `serveArgs`: without a seal, or with `seal`. */
  const forgedPin = (key: string, generator: string, serveArgs: string[], seal?: string) => ({
    schema: 'genjob/promotion@1',
    key,
    job_digest: 'f'.repeat(64),
    plane: 'shadow:x',
    generator,
    serve_args: serveArgs,
    shadow_receipt_sha256: 'e'.repeat(64),
    at: '2026-01-01T00:00:00.000Z',
    ...(seal === undefined ? {} : { seal }),
  });

  it('a committed pin naming an unconfined command: `work` runs the job with its own generator, confined, and says why', async () => {
    const sb = await makeSandbox();
    // outside everything a confined generator sees (the sandbox's base is bound for its scripts)
    const outside = tempDir('genjob-outside-');
    const marker = path.join(outside, 'PWNED');
    const key = await mintKey(sb, 'one', ['src/user.py']);
    const evil = `touch ${marker}; echo '# evil' >> src/user.py`;
    const pins = path.join(sb.repo, '.gen/promoted');
    mkdirSync(pins, { recursive: true });
    writeFileSync(path.join(pins, `${key}.json`), JSON.stringify(forgedPin(key, evil, ['--no-sandbox'])));
    const gen = sb.script('gen.sh', `echo '# from the user' >> src/user.py`);

    const w = await sb.genjob(['work', '--once', '--json', '--generator', gen]);
    expect(w.exitCode, w.stderr).toBe(0);
    expect(existsSync(marker)).toBe(false);
    expect(w.stderr).toMatch(
      /promotion pin ignored, the job runs as minted: .*not sealed by this user's genjob/,
    );
    expect(readJson(path.join(sb.repo, '.gen/receipts', `${key}.json`))).toMatchObject({
      status: 'ok',
      generator: { command: gen },
    });
    expect(readFileSync(path.join(sb.repo, '.gen/out', key, 'src/user.py'), 'utf8')).toMatch(
      /# from the user\n$/,
    );
  });

  it("a sealed pin moved to another key, or read by another user, or with a made-up seal, is not followed; the user's own is", async () => {
    const sb = await makeSandbox();
    // its generator needs --generator-bind to read its line: only a followed pin gives it
    const { tools: outside, gen: pinned, promoted } = await promotedWithBind(sb);
    const other = await mintKey(sb, 'two', ['src/user.py', 'README.md']);
    const pins = path.join(sb.repo, '.gen/promoted');
    const sealed = readJson(path.join(pins, `${promoted}.json`));
    expect(sealed.seal).toMatch(/^[0-9a-f]{64}$/);
    // the same pin, seal and all, under the other key; and a made-up seal
    writeFileSync(path.join(pins, `${other}.json`), JSON.stringify({ ...sealed, key: other }));
    const gen = sb.script('gen.sh', `echo '# from the user' >> src/user.py`);
    const receipt = (k: string) => readJson(path.join(sb.repo, '.gen/receipts', `${k}.json`));

    // another user (another cache, so another secret) follows neither
    const elsewhere = tempDir('genjob-cache-');
    const w1 = await sb.genjob(['work', '--drain', '--json', '--generator', gen], {
      env: { XDG_CACHE_HOME: elsewhere },
    });
    expect(w1.exitCode, w1.stderr).toBe(0);
    expect(receipt(promoted)).toMatchObject({ status: 'ok', generator: { command: gen } });
    expect(receipt(other)).toMatchObject({ status: 'ok', generator: { command: gen } });
    expect(w1.stderr).toContain(`${promoted.slice(0, 12)}: promotion pin ignored`);
    expect(w1.stderr).toContain(`${other.slice(0, 12)}: promotion pin ignored`);

    // this user: the moved pin still is not followed, a made-up seal neither, the real one is
    for (const k of [promoted, other]) expect((await sb.genjob(['retry', k])).exitCode).toBe(0);
    const third = await mintKey(sb, 'three', ['src/user.py', 'tests/test_user.py']);
    writeFileSync(
      path.join(pins, `${third}.json`),
      JSON.stringify(forgedPin(third, pinned, ['--generator-bind', outside], 'a'.repeat(64))),
    );
    const w2 = await sb.genjob(['work', '--drain', '--json', '--generator', gen]);
    expect(w2.exitCode, w2.stderr).toBe(0);
    expect(receipt(promoted)).toMatchObject({ status: 'ok', generator: { command: pinned } });
    expect(readFileSync(path.join(sb.repo, '.gen/out', promoted, 'src/user.py'), 'utf8')).toMatch(
      /# from the bound tools\n$/,
    );
    for (const k of [other, third])
      expect(receipt(k)).toMatchObject({ status: 'ok', generator: { command: gen } });
    expect(w2.stderr).not.toContain(`${promoted.slice(0, 12)}: promotion pin ignored`);
  });

  it("promote refuses a shadow run record it did not seal: one edited, or the plane's record read by another user (exit 3, no pin)", async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'one', ['src/user.py']);
    const gen = sb.script('gen.sh', `echo '# shadow' >> src/user.py`);
    const shadow = await sb.genjob(['work', '--shadow', 's', key, '--generator', gen]);
    expect(shadow.exitCode, shadow.stderr).toBe(0);
    const runFile = path.join(sb.repo, '.gen/shadow/s/results', key, 'run.json');
    const run = readJson(runFile);
    expect(run.seal).toMatch(/^[0-9a-f]{64}$/);

    const elsewhere = tempDir('genjob-cache-');
    const foreign = await sb.genjob(['promote', '--shadow', 's', key], {
      env: { XDG_CACHE_HOME: elsewhere },
    });
    expect(foreign.exitCode).toBe(3);
    expect(foreign.stderr).toMatch(
      /EGJ_SHADOW_RUN_UNKNOWN: .*run\.json: the shadow run record is not sealed by this user's genjob/,
    );

    writeFileSync(runFile, JSON.stringify({ ...run, serve_args: ['--no-sandbox'] }));
    const edited = await sb.genjob(['promote', '--shadow', 's', key]);
    expect(edited.exitCode).toBe(3);
    expect(edited.stderr).toContain('EGJ_SHADOW_RUN_UNKNOWN');
    expect(existsSync(path.join(sb.repo, '.gen/promoted', `${key}.json`))).toBe(false);

    writeFileSync(runFile, JSON.stringify(run));
    const own = await sb.genjob(['promote', '--shadow', 's', key]);
    expect(own.exitCode, own.stderr).toBe(0);
  });
});
