// A generator command whose first word is a path to a file is run by its absolute path, resolved from
// where serve was started; a word that is no plain path (a command on PATH, a quoted or expanded word,
// an assignment) is left alone; a missing or non-executable file is a configuration problem.
import { chmodSync, mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { generatorFile, generatorFileProblem } from '../../src/remote/generator-file.js';
import { tempDir } from '../helpers/temp-store.js';

let cwd: string;
beforeEach(() => {
  cwd = realpathSync(tempDir('gj-genfile-'));
  mkdirSync(join(cwd, 'tools'));
  writeFileSync(join(cwd, 'gen.sh'), '#!/bin/sh\n', { mode: 0o755 });
  writeFileSync(join(cwd, 'tools/plain.txt'), 'x', { mode: 0o644 });
  symlinkSync('gen.sh', join(cwd, 'gen-link'));
});

describe('generatorFile', () => {
  it.each([
    { command: 'my-coder --apply', why: 'a command on PATH' },
    { command: '"./gen.sh" --x', why: 'a quoted word' },
    { command: '$HOME/gen.sh', why: 'an expanded word' },
    { command: 'FOO=./x ./gen.sh', why: 'an assignment first' },
    { command: '~/gen.sh', why: 'a tilde' },
    { command: './gen*.sh', why: 'a glob' },
    { command: 'echo a/b', why: 'a slash only in a later word' },
  ])('leaves $why alone', (c) => {
    expect(generatorFile(c.command, cwd)).toEqual({ kind: 'none' });
  });

  it('resolves a relative first word from the given directory and runs it by that absolute path', () => {
    expect(generatorFile('./gen.sh --apply "$GENJOB_INSTRUCTION"', cwd)).toEqual({
      kind: 'file',
      word: './gen.sh',
      path: join(cwd, 'gen.sh'),
      real: join(cwd, 'gen.sh'),
      executable: true,
      command: `'${join(cwd, 'gen.sh')}' --apply "$GENJOB_INSTRUCTION"`,
    });
    expect(generatorFile('  tools/../gen.sh', cwd)).toMatchObject({ command: `'${join(cwd, 'gen.sh')}'` });
  });

  it('keeps an absolute first word as written (argv[0] is what the command names), and knows the file it really is', () => {
    const link = join(cwd, 'gen-link');
    expect(generatorFile(`${link} -v`, cwd)).toMatchObject({
      path: link,
      real: join(cwd, 'gen.sh'),
      command: `${link} -v`,
    });
    expect(generatorFile('/bin/sh -c true', cwd)).toMatchObject({ kind: 'file', command: '/bin/sh -c true' });
  });

  it('quotes a path the shell would split or expand', () => {
    const dir = join(cwd, "it's a dir");
    mkdirSync(dir);
    writeFileSync(join(dir, 'g'), '', { mode: 0o755 });
    expect(generatorFile('./g x', dir)).toMatchObject({ command: `'${cwd}/it'\\''s a dir/g' x` });
    expect(generatorFile('./a\\ b/g', cwd)).toEqual({ kind: 'none' }); // a backslash: not a plain word
  });
});

describe('generatorFileProblem', () => {
  it('names a missing file and where a relative path was resolved from', () => {
    expect(generatorFileProblem(generatorFile('./nope.sh --x', cwd), cwd)).toBe(
      `generator "./nope.sh": no such file ${join(cwd, 'nope.sh')} (a path is resolved from where serve was started: ${cwd})`,
    );
    expect(generatorFileProblem(generatorFile('./tools', cwd), cwd)).toContain('no such file'); // a directory runs nothing
  });

  it('names a file that is not executable, and how to run it', () => {
    chmodSync(join(cwd, 'gen.sh'), 0o644);
    expect(generatorFileProblem(generatorFile('./gen.sh', cwd), cwd)).toBe(
      `generator "./gen.sh": ${join(cwd, 'gen.sh')} is not executable (chmod +x it, or run it through its interpreter: sh ./gen.sh)`,
    );
  });

  it('has nothing to say about an executable file or a command that names none', () => {
    expect(generatorFileProblem(generatorFile('./gen.sh', cwd), cwd)).toBeNull();
    expect(generatorFileProblem(generatorFile('my-coder --apply', cwd), cwd)).toBeNull();
  });
});
