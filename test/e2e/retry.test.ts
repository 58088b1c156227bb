// Retrying a job whose generation was aborted: the host keeps the aborted result (a redelivery
// never spends twice), so a retry is deliberate — drop the job, mint the same work order again,
// and `work --retry-aborted`. The re-minted job's attempt count starts afresh; epochs never repeat.
// `genjob retry KEY` does it in one step: over a real sshd with a host cache, a counter file the
// generator increments shows the host generates again instead of answering with its aborted result.
import { readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path, { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import { genDir as localGenDir, makeSandbox, mintKey, readJson } from './helpers.js';
import {
  countLines,
  genDir,
  genjob,
  hostResults,
  mint,
  remoteServe,
  type Sandbox as SshSandbox,
  sandbox,
  sshFlags,
} from './ssh-helpers.js';

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
    expect(localGenDir(sb, `attempts/${key}`)).toEqual(['1.json', '2.json', '3.json', 'minted-after']);
    expect(localGenDir(sb, 'dead').filter((n) => n.endsWith('.why.json')).length).toBeGreaterThanOrEqual(4);
  });
});

describe('retrying an ok job', () => {
  it('generates it again, though the host keeps the ok result: each retry is a generation of its own', async () => {
    const sb = await makeSandbox();
    const log = join(sb.base, 'runs.log');
    const gen = sb.script('count.sh', `echo run >> ${log}\necho "# run $(wc -l < ${log})" >> README.md\n`);
    const key = await mintKey(sb, 'Note the run', ['README.md']);
    expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
    const receipt = () => readJson(join(sb.repo, '.gen/receipts', `${key}.json`));
    expect(receipt()).toMatchObject({ status: 'ok', epoch: 1, cached: false });

    for (const epoch of [2, 3]) {
      const r = await sb.genjob(['retry', key]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toContain(
        `its ok receipt of epoch ${epoch - 1} is kept in dead/); the next worker generates it again`,
      );
      expect((await sb.genjob(['work', '--once', '--generator', gen])).exitCode).toBe(0);
      expect(receipt()).toMatchObject({ status: 'ok', epoch, cached: false });
      expect(readFileSync(join(sb.repo, '.gen/out', key, 'README.md'), 'utf8')).toMatch(
        new RegExp(`# run ${epoch}\\n$`),
      );
    }
    expect(readFileSync(log, 'utf8')).toBe('run\nrun\nrun\n');
  });
});

describe('genjob retry over ssh, with a host cache', () => {
  const sshd = useSshd();
  const boxes: SshSandbox[] = [];
  afterEach(async () => {
    for (const b of boxes.splice(0)) await b.cleanup();
  });

  it.each([
    { when: 'at the attempt right after the retry', cutFirst: false, epoch: 2 },
    { when: 'even when the first attempt after the retry never reached it', cutFirst: true, epoch: 3 },
  ])('makes the host generate again, $when', async ({ cutFirst, epoch }) => {
    const sb = await sandbox();
    boxes.push(sb);
    const runs = path.join(sb.dir, 'runs');
    const fixed = path.join(sb.dir, 'fixed');
    const script = path.join(sb.dir, 'flaky.sh');
    await writeFile(
      script,
      `echo run >> ${runs}\ntest -f ${fixed} || { echo endpoint down >&2; exit 5; }\necho '# retried' >> src/a.txt\n`,
    );
    const gen = ['--generator', `sh ${script}`];
    const serve = remoteServe(sb.hostCache);
    const key = await mint(sb, 'Note the retry', ['src/a.txt']);

    expect((await genjob(sb, ['work', '--once', ...gen, ...sshFlags(sshd(), serve)])).exitCode).toBe(0);
    expect(countLines(runs)).toBe(1);
    expect(hostResults(sb.hostCache, key)).toHaveLength(1); // the aborted result the host keeps
    writeFileSync(fixed, '');
    expect((await genjob(sb, ['retry', key])).exitCode).toBe(0);

    if (cutFirst) {
      // the retry's first attempt (epoch 2) is cut before the host reads its request: nothing generated
      const cut = await genjob(sb, ['work', '--once', ...gen, ...sshFlags(sshd(), `head -c 100 | ${serve}`)]);
      expect(cut.exitCode).toBe(3);
      expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
      expect(countLines(runs)).toBe(1);
    }

    // the attempt asks for a fresh generation: the host does not answer with its aborted result
    const w = await genjob(sb, ['work', '--once', ...gen, ...sshFlags(sshd(), serve)]);
    expect(w.exitCode).toBe(0);
    expect(countLines(runs)).toBe(2);
    const receipt = JSON.parse(readFileSync(path.join(sb.repo, '.gen/receipts', `${key}.json`), 'utf8'));
    expect(receipt).toMatchObject({ status: 'ok', epoch, cached: false });
  });
});
