// A hostile host (fixtures/hostile-remote/serve.mjs escape-*) and a hostile batch provider inject
// terminal escape sequences — OSC 8 links, OSC 52 clipboard writes, clear-screen, BEL, CR, C1 CSI/OSC —
// into every piece of text a worker prints: serve's stderr, receipt reasons, generator names,
// refusals, the pre-claim generator check, host-down reasons, batch answers. Every command that
// shows such text (work, work --shadow, work --batch/--batch-poll, status, show, compare, verify)
// must print none of it raw, in text or --json mode; --json keeps the exact text as data.
import { afterEach, describe, expect, it } from 'vitest';
import { chatCompletion, type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { genjob, HOSTILE_REMOTE, mint, NODE, type Sandbox, useBoxes } from './ssh-helpers.js';

const box = useBoxes();
let fake: FakeOpenAi | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** The escape sequences fixtures/hostile-remote/serve.mjs sends (its EVIL). */
const EVIL =
  '\x1b]8;;https://evil.example/\x07click me\x1b]8;;\x07 \x1b]52;c;cHduZWQ=\x07 \x1b[2J\x1b[1A\rall good \u009b2K\u009d0;title\u009c\x07 \u202e\u200f\u200b\u{e0041}';

/**
 * Anything a terminal acts on or draws as nothing: C0 controls but \t and \n, DEL, C1, line separators,
 * bidi controls and marks, zero-width and tag characters.
 */
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\p{Bidi_Control}\p{Default_Ignorable_Code_Point}]/u;

interface Printed {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
}

/** Run a command and fail the test if anything terminal-active reaches its stdout or stderr. */
async function inert(
  sb: Sandbox,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Printed> {
  const r = await genjob(sb, args, {
    env: { XDG_CACHE_HOME: sb.workerCache, NO_COLOR: '1', ...env },
  });
  const out = { exitCode: r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) };
  const what = `genjob ${args.join(' ')}`;
  for (const stream of ['stdout', 'stderr'] as const) {
    const hit = RAW.exec(out[stream]);
    expect(
      hit,
      `${what}: raw U+${hit?.[0].codePointAt(0)?.toString(16).padStart(4, '0')} on ${stream}:\n${out[stream]}`,
    ).toBeNull();
  }
  if (args.includes('--json')) JSON.parse(out.stdout); // still exact JSON
  return out;
}

const host = (sb: Sandbox, kase: string) => `${NODE} ${HOSTILE_REMOTE} ${kase} ${sb.dir}`;

describe('host-written text never reaches the terminal raw (injected escape sequences)', () => {
  it("work, work --shadow, status, show, compare and verify print a hostile host's text escaped", async () => {
    const sb = await box();
    const a = await mint(sb, 'one', ['src/a.txt']);
    const b = await mint(sb, 'two', ['src/b.txt']);

    /** `work ARGS` against the hostile host `kase` (the generator named is never the host's to run). */
    const work = (kase: string, ...args: string[]) =>
      inert(sb, ['work', ...args, '--generator', 'g', '--launch', host(sb, kase)]);

    // the answer: an aborted receipt whose reason and generator name are escapes; serve's stderr too
    const w = await work('escape-text', '--once');
    expect(w.exitCode, w.stderr).toBe(0);
    expect(w.stderr).toContain('\\x1b]52;c;cHduZWQ=\\x07'); // shown, made visible
    expect(w.stderr).toMatch(/^\[[0-9a-f]{12}\] generator says: /m); // the relayed line, named by its job
    const [outcome] = JSON.parse((await work('escape-text', '--once', '--json')).stdout).outcomes;
    expect(outcome.reason).toBe(`generator exited with status 1: ${EVIL}`); // exact, as data

    // the shadow plane: a stored answer with the same text, and a refusal
    const s = await work('escape-text', '--shadow', 's', a);
    expect(s.exitCode, s.stderr).toBe(0);
    const r = await work('escape-refuse', '--shadow', 'r', a);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toContain('the host refused: EGJ_GENERATOR_CONFIG: settings broke: \\x1b]8;;');
    await work('escape-refuse', '--shadow', 'r', a, '--json');

    // the pre-claim generator check, and a host that refuses every run (it is taken down)
    const c = await work('escape-check', '--drain');
    expect(c.exitCode).toBe(2);
    expect(c.stderr).toContain('generator broken: \\x1b]8;;');
    await work('escape-check', '--drain', '--json');
    await mint(sb, 'three', ['README.md']);
    const down = await work('escape-refuse', '--once');
    expect(down.stderr).toMatch(/is down \(refused: EGJ_GENERATOR_CONFIG: settings broke: \\x1b\]8;;/);

    for (const args of [
      ['status'],
      ['status', '--json'],
      ['status', '--state', 'received'],
      ['show', a],
      ['show', '--json', a],
      ['show', b],
      ['compare', '--shadow', 's'],
      ['compare', '--shadow', 's', '--json'],
      ['verify', a],
      ['verify', '--json', a],
      ['verify', '--all'],
    ]) {
      const out = await inert(sb, args);
      expect(out.exitCode, `${args.join(' ')}: ${out.stderr}`).not.toBe(1);
    }
  });

  it("work --batch and --batch-poll print a hostile provider's answers escaped", async () => {
    const sb = await box();
    let lines = 0;
    fake = await startFakeOpenAi([], {
      batch: {
        pollsToFinish: 0,
        // one job failed by the provider, the other answered with text that is no answer
        answer: () =>
          lines++ === 0
            ? { status: 400, code: 'invalid_request', message: `bad: ${EVIL}` }
            : { body: chatCompletion(EVIL) },
      },
    });
    const env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' };
    await mint(sb, 'one', ['src/a.txt']);
    await mint(sb, 'two', ['src/b.txt']);
    const submit = await inert(sb, ['work', '--batch', '--generator', 'builtin:openai'], env);
    expect(submit.exitCode, submit.stderr).toBe(0);
    const poll = await inert(sb, ['work', '--batch-poll'], env);
    expect(poll.exitCode, poll.stderr).toBe(0);
    expect(poll.stderr).toMatch(/aborted: .*\\x1b\]52;c;cHduZWQ=\\x07/);
    await inert(sb, ['status'], env);
    await inert(sb, ['status', '--json'], env);
  });
});
