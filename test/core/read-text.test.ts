// Node 20 reads a file as utf8 in C++ and aborts the whole process when that file's close fails. genjob
// reads text through readText (outside the store) and the store's named fs (inside it), which read bytes
// and decode: a failed close is then an ordinary error (EGJ_IO in the store). Checked for real: the
// child runs under strace, which fails the close of the file it reads with EIO; Node's own utf8 read is
// run the same way as the control, so this test can fail.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeEach, describe, expect, it } from 'vitest';
import { bundleChild } from '../helpers/bundle-child.js';
import { tempDir } from '../helpers/temp-store.js';

const haveStrace =
  (await execa('strace', ['-V'], { reject: false }).catch(() => ({ exitCode: 1 }))).exitCode === 0;

const CHILD = `
import { readFileSync } from 'node:fs';
import { readText } from '../../src/core/read-text.js';
import { nodeFs } from '../../src/store/fs-port.js';
const [how, file] = process.argv.slice(2);
const read = { readText, store: (f) => nodeFs.readFileSync(f, 'utf8'), node: (f) => readFileSync(f, 'utf8') }[how];
try {
  process.stdout.write('read ' + read(file));
} catch (err) {
  process.stdout.write('error ' + err.code + ' ' + err.message);
}
`;

describe.skipIf(!haveStrace)('reading text when its close fails', () => {
  let dir: string;
  let child: string;
  let file: string;
  // a fresh directory per test: tempDir's are removed after each
  beforeEach(async () => {
    dir = tempDir('genjob-readtext-');
    child = await bundleChild(CHILD, import.meta.dirname, dir);
    file = join(dir, 'text.txt');
    writeFileSync(file, 'hello\n');
  });

  /** Run the child under strace; with `when`, the when-th close of its main thread fails with EIO. */
  async function run(how: string, when?: number) {
    const log = join(dir, `${how}-${when ?? 'probe'}.log`);
    const inject = when ? ['-e', `inject=close:error=EIO:when=${when}`] : [];
    const r = await execa(
      'strace',
      ['-f', '-y', '-qq', '-o', log, '-e', 'trace=close', ...inject, process.execPath, child, how, file],
      { reject: false, timeout: 60_000, stripFinalNewline: false },
    );
    return { ...r, log: readFileSync(log, 'utf8') };
  }

  /** The number of the main thread's close that closes `file`. */
  function closeOfFile(log: string): number {
    const lines = log.split('\n').filter(Boolean);
    const main = lines[0]!.split(' ')[0];
    const closes = lines.filter((l) => l.startsWith(`${main} `) && /\bclose\(/.test(l));
    const n = closes.findIndex((l) => l.includes(`<${file}>`));
    expect(n, 'the probe closed the file').toBeGreaterThanOrEqual(0);
    return n + 1;
  }

  for (const how of ['readText', 'store']) {
    it(`${how}: a failed close is an error naming EIO, and the process lives`, async () => {
      const probe = await run(how);
      expect(probe.stdout).toBe('read hello\n');
      const r = await run(how, closeOfFile(probe.log));
      expect(r.log).toContain('(INJECTED)');
      expect(r.signal).toBeUndefined();
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/^error (EIO|EGJ_IO) /);
    });
  }

  it("Node's own utf8 read aborts on the same fault (the hazard the others avoid)", async () => {
    const probe = await run('node');
    const r = await run('node', closeOfFile(probe.log));
    expect(r.signal).toBe('SIGABRT');
  });
});
