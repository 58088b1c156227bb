// `work --quiet` hides progress, never the reason for a non-zero exit. The worker's write of a bundle
// to its serve session is failed with strace (every writev of the worker from the first on: the
// bundle's frames go out corked, in writev calls), so the session breaks before the bundle is
// delivered: the job goes back to the queue unspent, the run exits 3, and stderr says why.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { haveStrace } from '../helpers/strace-fault.js';
import { CLI, genDir, makeSandbox, mintKey, PKG } from './helpers.js';

describe.skipIf(!haveStrace)('work --quiet says why it exits non-zero (strace fault injection)', () => {
  it.each([
    { errno: 'EIO', json: false },
    { errno: 'ENOSPC', json: true },
  ])(
    'a bundle write failing with $errno (--json: $json): exit 3, the job back in the queue, the reason on stderr',
    async ({ errno, json }) => {
      const sb = await makeSandbox();
      const gen = sb.script('gen.sh', 'echo x >> README.md');
      const key = await mintKey(sb, 'One', ['README.md']);
      const log = join(sb.base, 'strace.log');
      const r = await execa(
        'strace',
        [
          '-y',
          '-qq',
          '-o',
          log,
          '-e',
          'trace=writev',
          '-e',
          `inject=writev:error=${errno}:when=1+`,
          process.execPath,
          CLI,
          'work',
          '--once',
          '--quiet',
          ...(json ? ['--json'] : []),
          '--generator',
          gen,
        ],
        {
          cwd: sb.repo,
          env: { XDG_CACHE_HOME: sb.cache, GENJOB_GENERATOR_BIND: PKG, GENJOB_GENERATOR_BIND_RW: sb.base },
          reject: false,
        },
      );
      // the fault landed on the bundle's first frame, on the session's pipe
      const injected = readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.includes('(INJECTED)'));
      expect(injected[0]).toMatch(
        /^writev\(\d+<(socket|pipe):\[\d+\]>, \[\{iov_base="[^"]*", iov_len=4\}, \{iov_base="job\.json/,
      );
      expect(r.exitCode, String(r.stderr)).toBe(3);
      expect(String(r.stderr)).toContain(`genjob: ${key.slice(0, 12)} back in the queue: session broke: `);
      expect(String(r.stderr)).toContain(errno);
      expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
      expect(genDir(sb, 'running')).toEqual([]);
      if (json) expect(JSON.parse(String(r.stdout)).outcomes).toMatchObject([{ key, outcome: 'requeued' }]);
    },
  );
});
