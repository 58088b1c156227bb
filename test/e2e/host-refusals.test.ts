// A host that passes its hello and check, then refuses runs: a refusal that spends no attempt backs the
// host off and, after failures in a row, gives it up, instead of claiming the job again at once with a
// new epoch each time; a session a refusal left open is closed before the next, so the drain exits.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { genjob, HOSTILE_REMOTE, mint, NODE, useBoxes } from './ssh-helpers.js';

const newBox = useBoxes();

type Box = Awaited<ReturnType<typeof newBox>>;

/** work --drain through the hostile serve playing `kase`, each generator run bounded to 5 s. */
function drainVia(sb: Box, kase: string, timeout: number, extra: string[] = []) {
  const launch = `${NODE} ${HOSTILE_REMOTE} ${kase} ${sb.dir}/evil`;
  return genjob(
    sb,
    ['work', '--drain', '--timeout', '5', ...extra, '--generator', 'true', '--launch', launch],
    {
      timeout,
    },
  );
}

function epochs(repo: string, key: string): number {
  return readdirSync(path.join(repo, '.gen/attempts', key)).filter((n) => /^\d+\.json$/.test(n)).length;
}

describe('a host whose every answer spends no attempt', () => {
  it.each([
    ['EGJ_GENERATION_RUNNING at once', 'running'],
    ['a refusal before generating (EGJ_GENERATOR_CONFIG) every time', 'refuse-run'],
  ])(
    '%s: work --drain --timeout 5 ends, spending few epochs',
    async (_what, kase) => {
      const sb = await newBox();
      const key = await mint(sb, 'shout alpha', ['src/a.txt']);
      // the host backs off 50, 100, 200 … ms instead of 1, 2, 4 … s: the same seven failures in a row
      const w = await drainVia(sb, kase, 45_000, ['--max-attempts', '2', '--host-backoff', '0.05']);
      expect({ timedOut: w.timedOut, epochs: epochs(sb.repo, key) <= 10 }).toEqual({
        timedOut: false,
        epochs: true,
      });
    },
    60_000,
  );
});

describe('a host that refuses one run, then works', () => {
  it('work --drain exits once the queue is done (the refused session is not left open)', async () => {
    const sb = await newBox();
    await mint(sb, 'shout alpha', ['src/a.txt']);
    const started = Date.now();
    const w = await drainVia(sb, 'refuse-once', 30_000);
    expect(w.stderr).toContain('received ok');
    expect({ timedOut: w.timedOut, fast: Date.now() - started < 15_000 }).toEqual({
      timedOut: false,
      fast: true,
    });
  }, 60_000);
});
