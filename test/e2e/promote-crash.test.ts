// promote of a received job killed (-9) after it moved the job back to the queue and before its
// `promoted` line, through the built CLI: promote again wrote a line, but as a promote of a queued job
// (`from_state: queue`, nothing replaced), so the journal lost that the live answer was set aside. The
// same promote now finishes it as the promote of the received job it was, naming where the answer went.
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/store/journal.js';
import { Store } from '../../src/store/store.js';
import { CLI, genDir, makeSandbox, mintKey, PKG, type Sandbox } from './helpers.js';

const PRELOAD = join(import.meta.dirname, '../helpers/crash-preload.mjs');

/** A generator that appends `line` to src/user.py. */
const appender = (sb: Sandbox, name: string, line: string) =>
  sb.script(name, `echo '${line}' >> src/user.py; exit 0`);

describe('promote killed after the job went back to the queue, before its promoted line', () => {
  it('promote again writes the line once, as the promote of the received job, naming the answer it set aside', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'one', ['src/user.py']);
    expect(
      (await sb.genjob(['work', '--once', '--generator', appender(sb, 'live.sh', '# live')])).exitCode,
    ).toBe(0);
    const shadowGen = appender(sb, 'b.sh', '# promoted');
    expect((await sb.genjob(['work', '--shadow', 'b', key, '--generator', shadowGen])).exitCode).toBe(0);
    const killed = await execa(
      process.execPath,
      ['--import', PRELOAD, CLI, 'promote', '--shadow', 'b', key],
      {
        cwd: sb.repo,
        reject: false,
        env: {
          XDG_CACHE_HOME: sb.cache,
          GENJOB_GENERATOR_BIND_RW: sb.base,
          GENJOB_GENERATOR_BIND: PKG,
          GENJOB_CRASH: JSON.stringify({
            call: 'renameSync',
            match: '/\\.gen/queue/',
            arg: 1,
            when: 'after',
          }),
        },
      },
    );
    expect(killed.signal, String(killed.stderr)).toBe('SIGKILL');
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    const lines = () => readJournal(new Store(sb.repo), key).filter((e) => e.event === 'promoted');
    expect(lines()).toEqual([]);
    const aside = genDir(sb, 'dead')
      .filter((n) => !n.endsWith('.why.json'))
      .map((n) => `dead/${n}`);
    expect(aside).toHaveLength(2); // the live receipt and its outputs

    const again = await sb.genjob(['promote', '--shadow', 'b', key, '--json']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({
      from_state: 'received',
      replaced: aside,
      finished: true,
    });
    expect(lines()).toEqual([expect.objectContaining({ from_state: 'received' })]);
    // finished: promoting the queued job again is a promote of a queued job, as before
    const third = await sb.genjob(['promote', '--shadow', 'b', key, '--json']);
    expect(third.exitCode, third.stderr).toBe(0);
    expect(JSON.parse(third.stdout)).toMatchObject({ from_state: 'queue', replaced: [] });
    expect(JSON.parse(third.stdout).finished).toBeUndefined();
    expect(lines().map((e) => e.from_state)).toEqual(['received', 'queue']);
  });
});
