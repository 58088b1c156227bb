// A generator named by a file (`--generator ./gen.sh`, as README and docs write it) runs: the path is
// resolved from where serve was started (for a local serve, where `work` was) and the file is shown
// read-only in the sandbox. A command the shell cannot start (exit 126/127) is a configuration error:
// the job goes back unspent and nothing is cached, so the fixed generator runs at the next `work`
// without `retry`. And a failed run's reason leads with the line of stderr that says what failed.
// The built CLI, a local serve and the suite's sshd on loopback.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import {
  CLI,
  committedReceipt,
  genDir,
  genjob,
  journal,
  mint,
  NODE,
  REPO_ROOT,
  type Sandbox,
  sshFlags,
  useBoxes,
} from './ssh-helpers.js';

const sshd = useSshd();
const box = useBoxes();

/** The entries a serve cache directory holds (none when it was never made). */
function cached(cacheDir: string): string[] {
  const d = path.join(cacheDir, 'results');
  return existsSync(d) ? readdirSync(d) : [];
}

function writeScript(file: string, body: string, mode = 0o755): void {
  writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode });
}

/** The ssh flags for a serve started in `dir` (so `./gen.sh` there is the generator). */
const servedFrom = (sb: Sandbox, dir: string) =>
  sshFlags(
    sshd(),
    `cd ${dir} && ${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache} --generator-bind ${REPO_ROOT}`,
  );

describe('--generator ./gen.sh', () => {
  it('runs a script named relative to where work was started (a local serve), verbatim as the README writes it', async () => {
    const sb = await box();
    writeScript(path.join(sb.repo, 'gen.sh'), 'echo "# generated" >> README.md');
    const key = await mint(sb, 'add a line', ['README.md']);
    const w = await genjob(sb, ['work', '--once', '--generator', './gen.sh']);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(committedReceipt(sb, key)).toMatchObject({ status: 'ok', generator: { command: './gen.sh' } });
    expect(readFileSync(path.join(sb.repo, '.gen/out', key, 'README.md'), 'utf8')).toBe(
      '# toy\n# generated\n',
    );
  });

  it('runs a script named relative to where serve was started on the host, over ssh', async () => {
    const sb = await box();
    writeScript(path.join(sb.dir, 'gen.sh'), 'echo "# from the host" >> README.md');
    const key = await mint(sb, 'add a line', ['README.md']);
    const w = await genjob(sb, ['work', '--once', '--generator', './gen.sh', ...servedFrom(sb, sb.dir)]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(committedReceipt(sb, key)).toMatchObject({ status: 'ok' });
    expect(readFileSync(path.join(sb.repo, '.gen/out', key, 'README.md'), 'utf8')).toBe(
      '# toy\n# from the host\n',
    );
  });

  it.each([
    {
      name: 'a file that is not there',
      make: () => {},
      says: /no such file .*\/gen\.sh \(a path is resolved from where serve was started: /,
    },
    {
      name: 'a file that is not executable',
      make: (file: string) => writeScript(file, 'true', 0o644),
      says: /gen\.sh is not executable \(chmod \+x it, or run it through its interpreter: sh \.\/gen\.sh\)/,
    },
  ])(
    '$name: exit 2 with EGJ_GENERATOR_CONFIG before anything is claimed',
    async (c) => {
      const sb = await box();
      c.make(path.join(sb.repo, 'gen.sh'));
      const key = await mint(sb, 'add a line', ['README.md']);
      const w = await genjob(sb, ['work', '--once', '--generator', './gen.sh']);
      expect(w.exitCode).toBe(2);
      expect(String(w.stderr)).toMatch(/^genjob: EGJ_GENERATOR_CONFIG: /m);
      expect(String(w.stderr)).toMatch(c.says);
      expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
      expect(genDir(sb, 'attempts')).toEqual([]);
    },
    60_000,
  );
});

describe('a generator the shell cannot start', () => {
  it.each([
    { name: 'a local serve', local: true },
    { name: 'serve over ssh', local: false },
  ])(
    'is refused, never cached, spends no attempt, and the fixed one runs at the next work without retry ($name)',
    async (c) => {
      const sb = await box();
      const where = c.local ? sb.repo : sb.dir;
      const cacheDir = c.local ? path.join(sb.workerCache, 'genjob') : sb.hostCache;
      const gen = path.join(where, 'gen.sh');
      writeScript(gen, 'no-such-coding-cli --apply "$GENJOB_INSTRUCTION"');
      const key = await mint(sb, 'add a line', ['README.md']);
      const flags = c.local ? [] : servedFrom(sb, where);
      const first = await genjob(sb, ['work', '--once', '--generator', './gen.sh', ...flags]);
      expect(first.exitCode).toBe(3);
      expect(String(first.stderr)).toContain(
        `${key.slice(0, 12)} back in the queue: the host refused: EGJ_GENERATOR_CONFIG: generator could not be started (exit 127: `,
      );
      expect(String(first.stderr)).toMatch(
        /no-such-coding-cli: not found\); nothing was cached: fix the command and run again; the generator runs confined, where only the system directories \(\/usr, \/bin, \/opt, …\) and the job's files are visible: a program installed elsewhere needs its directory exposed with --generator-bind DIR/,
      );
      // --once ends after its one job: the host's failure announces no retry
      expect(String(first.stderr)).not.toContain('retrying in');
      expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
      expect(journal(sb, key).filter((e) => e.event === 'requeued')).toMatchObject([
        { attempt_spent: false },
      ]);
      expect(cached(cacheDir)).toEqual([]);

      writeScript(gen, 'echo "# fixed" >> README.md');
      const second = await genjob(sb, ['work', '--once', '--generator', './gen.sh', ...flags]);
      expect(second.exitCode, String(second.stderr)).toBe(0);
      expect(committedReceipt(sb, key)).toMatchObject({ status: 'ok', cached: false });
      expect(readFileSync(path.join(sb.repo, '.gen/out', key, 'README.md'), 'utf8')).toBe('# toy\n# fixed\n');
    },
    90_000,
  );
});

describe('the reason of a failed generator', () => {
  it('leads with the line that says what failed, not the first line of a Node stack trace; progress and status show it, the receipt keeps the last lines', async () => {
    const sb = await box();
    const gen = path.join(sb.dir, 'gen.cjs');
    writeFileSync(gen, "require('./helper-that-is-missing');\n");
    const key = await mint(sb, 'add a line', ['README.md']);
    const w = await genjob(sb, ['work', '--once', '--generator', `node ${gen}`]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    const telling = "generator exited with status 1: Error: Cannot find module './helper-that-is-missing'";
    expect(String(w.stderr)).toContain(`${key.slice(0, 12)} received aborted: ${telling} (`);
    const reason = committedReceipt(sb, key).reason!;
    expect(reason.split('\n')[0]).toBe(telling);
    expect(reason).toMatch(/\nstderr \(last lines\):\nnode:internal\/modules\/cjs\/loader:\d+\n/);
    expect(reason).toMatch(/\nNode\.js v\d+\.\d+\.\d+$/);
    expect(reason.split('\n').length).toBeLessThanOrEqual(2 + 40);

    const status = await genjob(sb, ['status', '--json']);
    expect(JSON.parse(String(status.stdout)).jobs).toMatchObject([
      { key, receipt: 'aborted', reason: telling },
    ]);
    const human = await genjob(sb, ['status'], { env: { XDG_CACHE_HOME: sb.workerCache, COLUMNS: '300' } });
    expect(String(human.stdout)).toContain(telling);
  });
});
