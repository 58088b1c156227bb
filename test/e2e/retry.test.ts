// Retrying a job whose generation was aborted: the host keeps the aborted result (a redelivery
// never spends twice), so a retry is deliberate — drop the job, mint the same work order again,
// and `work --retry-aborted`. The re-minted job's attempt count starts afresh; epochs never repeat.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { genDir, makeSandbox, mintKey } from './helpers.js';

describe('retrying an aborted job', () => {
  it('answers from the host cache until the worker asks to retry, then generates again', async () => {
    const sb = await makeSandbox();
    const log = join(sb.base, 'runs.log');
    const fixed = join(sb.base, 'fixed');
    const gen = sb.script(
      'flaky.sh',
      `echo run >> ${log}\ntest -f ${fixed} || { echo endpoint down >&2; exit 5; }\necho '# retried' >> README.md\n`,
    );
    const key = await mintKey(sb, 'Note the retry', ['README.md']);

    expect((await sb.genjob(['work', '--once', '--max-attempts', '1', '--generator', gen])).exitCode).toBe(0);
    expect((await sb.genjob(['verify', key])).stderr).toMatch(
      /EGJ_STATUS_NOT_OK: .*aborted: generator exited with status 5: endpoint down/,
    );

    writeFileSync(fixed, '');
    expect((await sb.genjob(['drop', key, '--reason', 'endpoint was down'])).exitCode).toBe(0);
    expect(await mintKey(sb, 'Note the retry', ['README.md'])).toBe(key);
    // without --retry-aborted the host answers with the aborted result it keeps
    await sb.genjob(['work', '--once', '--max-attempts', '1', '--generator', gen]);
    expect((await sb.genjob(['verify', key])).exitCode).toBe(3);
    expect(readFileSync(log, 'utf8')).toBe('run\n');

    await sb.genjob(['drop', key]);
    await mintKey(sb, 'Note the retry', ['README.md']);
    const retried = await sb.genjob([
      'work',
      '--once',
      '--max-attempts',
      '1',
      '--retry-aborted',
      '--generator',
      gen,
    ]);
    expect(retried.exitCode).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe('run\nrun\n');
    expect((await sb.genjob(['verify', key])).exitCode).toBe(0);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(0);
    expect(readFileSync(join(sb.repo, 'README.md'), 'utf8')).toMatch(/# retried\n$/);
    // three attempts in all, epochs 1, 2, 3: never reused across the drops
    expect(genDir(sb, `attempts/${key}`)).toEqual(['1.json', '2.json', '3.json', 'minted-after']);
    expect(genDir(sb, 'dead').filter((n) => n.endsWith('.why.json')).length).toBeGreaterThanOrEqual(4);
  });
});
