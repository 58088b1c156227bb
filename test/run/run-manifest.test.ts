// Run names and the sealed manifest (src/run/run-name.ts, run-manifest.ts): NAME and NAME@N name
// `.gen/runs/NAME.json` and `NAME@N.json`; sealing is an exclusive create, the same expansion again is no
// write, another one under the name is EGJ_RUN_SEALED naming the next free revision, and a reading
// command's NAME means the newest revision.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { GenjobError } from '../../src/core/errors.js';
import {
  buildManifest,
  parseManifest,
  readManifest,
  sealManifest,
  templateDigest,
} from '../../src/run/run-manifest.js';
import { manifestFile, parseRunName, resolveRun, revisionsOf } from '../../src/run/run-name.js';
import { tempStore } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

const K = (c: string) => c.repeat(64);
const template = { instruction: 'Hint {path}', also: [], reads: [], each: { glob: 'src/*.py' } };
const ref = (name: string, revision = 1) => ({
  name,
  revision,
  id: revision === 1 ? name : `${name}@${revision}`,
});

describe('run names', () => {
  it.each([
    { typed: 'hints', name: 'hints', revision: undefined },
    { typed: 'hints@2', name: 'hints', revision: 2 },
    { typed: 'a.b_c-9@17', name: 'a.b_c-9', revision: 17 },
    { typed: '0', name: '0', revision: undefined },
  ])('reads $typed', ({ typed, name, revision }) => {
    expect(parseRunName(typed)).toEqual({ name, revision });
  });

  it.each([
    '',
    'Hints',
    '-x',
    '.x',
    'a/b',
    'a@',
    'a@0',
    'a@02',
    'a@b',
    'a@1@2',
    '../x',
    'x'.repeat(65),
    'a@1000001',
  ])('refuses %j (EGJ_BAD_RUN_NAME)', (typed) => {
    expect((thrown(() => parseRunName(typed)) as GenjobError).code).toBe('EGJ_BAD_RUN_NAME');
  });
});

describe('the sealed manifest', () => {
  it('is written once; the same expansion again writes nothing', () => {
    const store = tempStore('genjob-run-');
    const m = buildManifest(ref('hints'), template, [{ path: 'src/a.py', key: K('a') }]);
    expect(sealManifest(store, m)).toBe(true);
    const bytes = readFileSync(manifestFile(store, ref('hints')));
    const again = { ...m, created_at: '2030-01-01T00:00:00.000Z' };
    expect(sealManifest(store, again)).toBe(false);
    expect(readFileSync(manifestFile(store, ref('hints')))).toEqual(bytes);
    expect(readManifest(store, ref('hints'))).toEqual(m);
    expect(m.keys).toEqual([K('a')]);
    expect(m.template_digest).toBe(templateDigest(template));
  });

  it('refuses another expansion under a sealed name, naming the next revision (exit 4)', () => {
    const store = tempStore('genjob-run-');
    sealManifest(store, buildManifest(ref('hints'), template, [{ path: 'src/a.py', key: K('a') }]));
    sealManifest(store, buildManifest(ref('hints', 2), template, [{ path: 'src/a.py', key: K('b') }]));
    const err = thrown(() =>
      sealManifest(store, buildManifest(ref('hints'), template, [{ path: 'src/a.py', key: K('c') }])),
    ) as GenjobError;
    expect(err.code).toBe('EGJ_RUN_SEALED');
    expect(err.exitCode).toBe(4);
    expect(err.message).toContain('1 job(s) there, 1 now, 2 key(s) differ');
    expect(err.message).toContain('--run hints@3');
    // another template with the same keys is another run too
    const other = buildManifest(ref('hints'), { ...template, instruction: 'x' }, [
      { path: 'src/a.py', key: K('a') },
    ]);
    expect((thrown(() => sealManifest(store, other)) as GenjobError).message).toContain('another template');
  });

  it('means the newest revision when a reading command names no revision', () => {
    const store = tempStore('genjob-run-');
    for (const rev of [1, 3, 2])
      sealManifest(store, buildManifest(ref('h', rev), template, [{ path: null, key: K('a') }]));
    sealManifest(store, buildManifest(ref('hx'), template, [{ path: null, key: K('a') }]));
    expect(revisionsOf(store, 'h')).toEqual([1, 2, 3]);
    expect(resolveRun(store, 'h')).toEqual(ref('h', 3));
    expect(resolveRun(store, 'h@1')).toEqual(ref('h', 1));
    const err = thrown(() => resolveRun(store, 'h@4')) as GenjobError;
    expect([err.code, err.exitCode]).toEqual(['EGJ_UNKNOWN_RUN', 2]);
    expect(err.message).toContain('(revisions: h, h@2, h@3)');
    expect((thrown(() => resolveRun(store, 'nope')) as GenjobError).code).toBe('EGJ_UNKNOWN_RUN');
  });

  it('refuses a tampered manifest whose keys and expansion disagree', () => {
    const store = tempStore('genjob-run-');
    const m = buildManifest(ref('t'), template, [{ path: 'a', key: K('a') }]);
    sealManifest(store, m);
    const file = manifestFile(store, ref('t'));
    writeFileSync(file, JSON.stringify({ ...m, keys: [K('b')] }));
    expect((thrown(() => readManifest(store, ref('t'))) as GenjobError).code).toBe('EGJ_RUN_INVALID');
    expect((thrown(() => parseManifest(Buffer.from('{'), file)) as GenjobError).code).toBe('EGJ_RUN_INVALID');
  });
});
