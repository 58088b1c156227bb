// Node 20 reads a file as utf8 in C++ and aborts the whole process when that file's close fails. genjob
// reads text through readText (outside the store) and the store's named fs (inside it), which read bytes
// and decode: a failed close is then an ordinary error (EGJ_IO in the store). Checked for real: the
// child runs under strace, which fails the close of the file it reads (that file's, by path) with EIO;
// Node's own utf8 read is run the same way as the control, so this test can fail.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { beforeEach, describe, expect, it } from 'vitest';
import { bundleChild } from '../helpers/bundle-child.js';
import { haveStrace } from '../helpers/strace-fault.js';
import { tempDir } from '../helpers/temp-store.js';

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

  /**
   * Run the child under strace; with `fail`, the close of `file` (and only it: -P filters the calls
   * strace traces and tampers with by the path their fd names) fails with EIO. Counting closes instead
   * would depend on how many other closes Node's start-up makes first, which varies with load.
   */
  async function run(how: string, fail = false) {
    const log = join(dir, `${how}-${fail ? 'fail' : 'probe'}.log`);
    const inject = fail ? ['-e', 'inject=close:error=EIO:when=1'] : [];
    const r = await execa(
      'strace',
      [
        '-f',
        '-y',
        '-qq',
        '-o',
        log,
        '-P',
        file,
        '-e',
        'trace=close',
        ...inject,
        process.execPath,
        child,
        how,
        file,
      ],
      // a guard against a hang only: strace'd start-up on a loaded machine can take long
      { reject: false, timeout: 600_000, stripFinalNewline: false },
    );
    return { ...r, log: readFileSync(log, 'utf8') };
  }

  for (const how of ['readText', 'store']) {
    it(`${how}: a failed close is an error naming EIO, and the process lives`, async () => {
      const probe = await run(how);
      expect(probe.stdout).toBe('read hello\n');
      expect(probe.log, 'the probe closed the file').toContain(`<${file}>`);
      const r = await run(how, true);
      expect(r.log).toMatch(
        new RegExp(
          `close\\(\\d+<${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}>\\) += -1 EIO .*\\(INJECTED\\)`,
        ),
      );
      expect(r.signal).toBeUndefined();
      expect(r.exitCode).toBe(0);
      expect(r.stdout).toMatch(/^error (EIO|EGJ_IO) /);
    });
  }

  it("Node's own utf8 read aborts on the same fault (the hazard the others avoid)", async () => {
    const r = await run('node', true);
    expect(r.log).toContain('(INJECTED)');
    expect(r.signal).toBe('SIGABRT');
  });
});
