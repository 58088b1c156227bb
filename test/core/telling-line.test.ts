// The line of a failed generator's stderr that says what failed: not a stack trace's first line, not a
// frame or a source excerpt, not a banner — the last line that reads like an error, else the last line.
import { describe, expect, it } from 'vitest';
import { lastLines, tellingLine } from '../../src/core/telling-line.js';

const NODE_CJS = `node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module './helper'
Require stack:
- /tmp/error-gen/gen.cjs
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27) {
  code: 'MODULE_NOT_FOUND',
  requireStack: [ '/tmp/error-gen/gen.cjs' ]
}

Node.js v20.20.2`;

const NODE_THROW = `file:///tmp/gen.mjs:3
throw new Error('model quota exceeded');
^

Error: model quota exceeded
    at file:///tmp/gen.mjs:3:7
    at ModuleJob.run (node:internal/modules/esm/module_job:234:25)

Node.js v20.20.2`;

const PYTHON = `Traceback (most recent call last):
  File "/srv/gen.py", line 9, in <module>
    raise KeyError("instruction")
KeyError: 'instruction'`;

describe('tellingLine', () => {
  it.each([
    { name: 'a Node module that is not found', text: NODE_CJS, line: "Error: Cannot find module './helper'" },
    { name: 'a Node error thrown by the generator', text: NODE_THROW, line: 'Error: model quota exceeded' },
    { name: 'a Python traceback', text: PYTHON, line: "KeyError: 'instruction'" },
    {
      name: 'a shell that cannot find a command',
      text: '/srv/gen.sh: 2: coder: not found',
      line: '/srv/gen.sh: 2: coder: not found',
    },
    {
      name: 'progress, then a failure',
      text: 'step 1\nstep 2 failed: disk full\nbye',
      line: 'step 2 failed: disk full',
    },
    { name: 'nothing that reads like an error: the last line', text: 'one\ntwo\n\n', line: 'two' },
    { name: 'only noise: its first line', text: '    at x (y:1:2)\n', line: 'at x (y:1:2)' },
    { name: 'nothing', text: '', line: '' },
  ])('$name: $line', (c) => {
    expect(tellingLine(c.text)).toBe(c.line);
  });
});

describe('lastLines', () => {
  it('keeps the last whole lines, drops a first line a byte cap cut, and trailing blank lines', () => {
    expect(lastLines('cut line\na\nb\nc\n\n', 2, true)).toEqual(['b', 'c']);
    expect(lastLines('whole\na\n', 5, false)).toEqual(['whole', 'a']);
    expect(lastLines('x\r\ny', 5, false)).toEqual(['x', 'y']);
  });
});
