// A branch may commit .gen/locks/: a lock directory that looks held, with an owner record or a taker's
// intent beside it that is a link to /dev/zero or a FIFO. Taking that lock (here by `drop`) reads
// neither through: the lock goes stale and is taken, in bounded memory and time. The built CLI runs
// under a 2 GiB address-space limit and is killed after 30 s. A stale lock directory with files in it
// (git keeps a directory only so) is removed whole, not refused as EGJ_IO for ever.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, genDir, makeSandbox, mintKey } from './helpers.js';

const FORGED = [
  { beside: 'owner', kind: 'link to /dev/zero' },
  { beside: 'owner', kind: 'FIFO' },
  { beside: 'intent', kind: 'link to /dev/zero' },
  { beside: 'intent', kind: 'FIFO' },
] as const;

describe('a committed lock with a hostile record beside it', () => {
  it.each(FORGED)('is taken without reading its $beside record, a $kind', async ({ beside, kind }) => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Note', ['README.md']);
    const lock = join(sb.repo, '.gen', 'locks', `key-${key}.lock`);
    mkdirSync(lock, { recursive: true });
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(lock, old, old); // stale: taken at once
    const record = beside === 'owner' ? `${lock}.owner` : `${lock}.taking-1-1`;
    if (kind === 'FIFO') execFileSync('mkfifo', [record]);
    else symlinkSync('/dev/zero', record);
    const r = await execa(
      'sh',
      ['-c', 'ulimit -v 2097152; exec "$0" "$@"', process.execPath, CLI, 'drop', key],
      {
        cwd: sb.repo,
        env: { XDG_CACHE_HOME: sb.cache },
        reject: false,
        timeout: 30_000,
      },
    );
    expect(r.timedOut, 'waited on the record').toBe(false);
    expect(r.signal, String(r.stderr)).toBeUndefined();
    expect(r.exitCode, String(r.stderr)).toBe(0);
    expect(genDir(sb, 'queue')).toEqual([]);
  });

  it('is taken once stale though files lie in it (genjob never puts any there), removed whole', async () => {
    const sb = await makeSandbox();
    const key = await mintKey(sb, 'Note', ['README.md']);
    const lock = join(sb.repo, '.gen', 'locks', `key-${key}.lock`);
    mkdirSync(join(lock, 'deeper'), { recursive: true });
    writeFileSync(join(lock, 'keep'), ''); // git keeps a directory only with a file in it
    symlinkSync(sb.repo, join(lock, 'deeper', 'repo')); // removed as a link, never followed
    const old = new Date(Date.now() - 3_600_000);
    utimesSync(lock, old, old);
    const r = await sb.genjob(['drop', key]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(genDir(sb, 'queue')).toEqual([]);
    expect(genDir(sb, 'locks')).toEqual([]);
    expect(readFileSync(join(sb.repo, 'README.md'), 'utf8').length).toBeGreaterThan(0);
  });
});
