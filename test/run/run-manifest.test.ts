// Run names and the sealed manifest (src/run/run-name.ts, run-manifest.ts, run-seal.ts): NAME and NAME@N
// name `.gen/runs/NAME.json` and `NAME@N.json`; sealing is an exclusive create and the user's seal beside
// it, the same expansion again is no write (or only the seal, for a manifest there without the user's),
// another one under the name is EGJ_RUN_SEALED naming the next free revision, and a reading command's
// NAME means the newest revision.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { GenjobError } from '../../src/core/errors.js';
import { macOf } from '../../src/core/mac.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { sealedRunKeys } from '../../src/run/run-keys.js';
import {
  buildManifest,
  parseManifest,
  readManifest,
  sealedAlready,
  sealManifest,
  templateDigest,
} from '../../src/run/run-manifest.js';
import { manifestFile, parseRunName, resolveRun, revisionsOf } from '../../src/run/run-name.js';
import { runSealed, runSealFile } from '../../src/run/run-seal.js';
import type { Store } from '../../src/store/store.js';
import { tempStore } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

const K = (c: string) => c.repeat(64);
const SECRET = randomBytes(32);
/** Whether run `id`'s manifest is there under the user's seal (SECRET's). */
function sealedHere(store: Store, id: string): boolean {
  const file = manifestFile(store, ref(id));
  return existsSync(file) && runSealed(store, ref(id), sha256Hex(readFileSync(file)), SECRET);
}
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
    expect(sealManifest(store, m, SECRET)).toBe('written');
    const bytes = readFileSync(manifestFile(store, ref('hints')));
    const again = { ...m, created_at: '2030-01-01T00:00:00.000Z' };
    expect(sealManifest(store, again, SECRET)).toBe('same');
    expect(readFileSync(manifestFile(store, ref('hints')))).toEqual(bytes);
    expect(readManifest(store, ref('hints'))).toEqual(m);
    expect(m.keys).toEqual([K('a')]);
    expect(m.template_digest).toBe(templateDigest(template));
  });

  it('lists a job two paths expanded to once: the run intends distinct jobs', () => {
    const store = tempStore('genjob-run-');
    const expansion = [
      { path: 'src/a.py', key: K('a') },
      { path: 'src/b.py', key: K('a') },
      { path: 'src/c.py', key: K('c') },
    ];
    const m = buildManifest(ref('pair'), template, expansion);
    expect([m.expansion, m.keys]).toEqual([expansion, [K('a'), K('c')]]);
    sealManifest(store, m, SECRET);
    expect(sealedRunKeys(store, 'pair', SECRET, 'nothing').intended).toEqual([K('a'), K('c')]);
    // a manifest written before listed the repeated key again: read, and its job counted once
    const file = manifestFile(store, ref('old'));
    const old = { ...m, name: 'old', keys: expansion.map((e) => e.key) };
    writeFileSync(file, JSON.stringify(old));
    expect(parseManifest(readFileSync(file), file).keys).toEqual([K('a'), K('a'), K('c')]);
    sealManifest(store, { ...old, created_at: 'x' }, SECRET);
    expect(sealedRunKeys(store, 'old', SECRET, 'nothing').intended).toEqual([K('a'), K('c')]);
    // keys in another order, or one left out, are not the expansion's
    for (const keys of [[K('c'), K('a')], [K('a')], [K('a'), K('c'), K('c')]]) {
      writeFileSync(file, JSON.stringify({ ...old, keys }));
      expect((thrown(() => parseManifest(readFileSync(file), file)) as GenjobError).code).toBe(
        'EGJ_RUN_INVALID',
      );
    }
  });

  it('refuses another expansion under a sealed name, naming the next revision (exit 4)', () => {
    const store = tempStore('genjob-run-');
    sealManifest(store, buildManifest(ref('hints'), template, [{ path: 'src/a.py', key: K('a') }]), SECRET);
    sealManifest(
      store,
      buildManifest(ref('hints', 2), template, [{ path: 'src/a.py', key: K('b') }]),
      SECRET,
    );
    const err = thrown(() =>
      sealManifest(store, buildManifest(ref('hints'), template, [{ path: 'src/a.py', key: K('c') }]), SECRET),
    ) as GenjobError;
    expect(err.code).toBe('EGJ_RUN_SEALED');
    expect(err.exitCode).toBe(4);
    expect(err.message).toContain('1 job(s) there, 1 now, 2 key(s) differ); nothing was minted');
    expect(err.message).toContain('--run hints@3');
    // the newest revision names the next, whichever revisions there are
    sealManifest(
      store,
      buildManifest(ref('hints', 3), template, [{ path: 'src/a.py', key: K('d') }]),
      SECRET,
    );
    const two = [
      { path: 'src/a.py', key: K('a') },
      { path: 'src/b.py', key: K('e') },
    ];
    const next = thrown(() => sealManifest(store, buildManifest(ref('hints'), template, two), SECRET));
    expect((next as GenjobError).message).toContain('(1 job(s) there, 2 now, 1 key(s) differ); nothing');
    expect((next as GenjobError).message).toContain('--run hints@4');
    expect(err.message).not.toContain('another template');
    // another template with the same keys is another run too
    const other = buildManifest(ref('hints'), { ...template, instruction: 'x' }, [
      { path: 'src/a.py', key: K('a') },
    ]);
    expect((thrown(() => sealManifest(store, other, SECRET)) as GenjobError).message).toContain(
      'another template',
    );
  });

  it('means the newest revision when a reading command names no revision', () => {
    const store = tempStore('genjob-run-');
    for (const rev of [1, 3, 2])
      sealManifest(store, buildManifest(ref('h', rev), template, [{ path: null, key: K('a') }]), SECRET);
    sealManifest(store, buildManifest(ref('hx'), template, [{ path: null, key: K('a') }]), SECRET);
    expect(revisionsOf(store, 'h')).toEqual([1, 2, 3]);
    expect(resolveRun(store, 'h')).toEqual(ref('h', 3));
    expect(resolveRun(store, 'h@1')).toEqual(ref('h', 1));
    const err = thrown(() => resolveRun(store, 'h@4')) as GenjobError;
    expect([err.code, err.exitCode]).toEqual(['EGJ_UNKNOWN_RUN', 2]);
    // the name is minted: mint --run h would be a no-op, so the message names the revisions there are
    expect(err.message).toBe(
      `${manifestFile(store, { id: 'h@4' })}: no run "h@4": run h has no revision 4 (its revisions: h, h@2, h@3); name one of those, or mint revision 4 with genjob mint --each GLOB --run h@4`,
    );
    expect((thrown(() => resolveRun(store, 'nope')) as GenjobError).code).toBe('EGJ_UNKNOWN_RUN');
  });

  it('refuses a tampered manifest whose keys and expansion disagree', () => {
    const store = tempStore('genjob-run-');
    const m = buildManifest(ref('t'), template, [{ path: 'a', key: K('a') }]);
    sealManifest(store, m, SECRET);
    const file = manifestFile(store, ref('t'));
    writeFileSync(file, JSON.stringify({ ...m, keys: [K('b')] }));
    expect((thrown(() => readManifest(store, ref('t'))) as GenjobError).code).toBe('EGJ_RUN_INVALID');
    expect((thrown(() => parseManifest(Buffer.from('{'), file)) as GenjobError).code).toBe('EGJ_RUN_INVALID');
  });

  const good = buildManifest(ref('p'), template, [
    { path: 'a', key: K('a') },
    { path: 'b', key: K('b') },
  ]);
  const keyed = (key: unknown) => ({
    ...good,
    keys: [key, K('b')],
    expansion: [{ path: 'a', key }, good.expansion[1]],
  });
  it.each([
    ['not JSON', '{'],
    ['null', 'null'],
    ['another schema', { ...good, schema: 'genjob/run@2' }],
    ['no keys', { ...good, keys: undefined }],
    ['keys not a list', { ...good, keys: K('a') }],
    ['no expansion', { ...good, expansion: undefined }],
    ['a key more than the expansion', { ...good, keys: [...good.keys, K('c')] }],
    ['a key less', { ...good, keys: [K('a')] }],
    ['keys in another order than the expansion', { ...good, keys: [K('b'), K('a')] }],
    ["a second key not the expansion's", { ...good, keys: [K('a'), K('c')] }],
    ['a key not a string', keyed(7)],
    ['a key in capitals', keyed(K('A'))],
    ['a key of 63 digits', keyed(K('a').slice(1))],
    ['a key with a digit after 64', keyed(`${K('a')}0`)],
    ['a key with a letter before 64', keyed(`x${K('a')}`)],
    ['no template', { ...good, template: undefined }],
    ['no template digest', { ...good, template_digest: undefined }],
    [
      'a number canonical JSON cannot hold in the template',
      JSON.stringify({ ...good, template: { ...template, instruction: 'N' } }).replace('"N"', '1e400'),
    ],
  ])('refuses %s (EGJ_RUN_INVALID, naming the file)', (_what, doc) => {
    const bytes = Buffer.from(typeof doc === 'string' ? doc : JSON.stringify(doc));
    const err = thrown(() => parseManifest(bytes, '/r/.gen/runs/p.json')) as GenjobError;
    expect([err.code, err.exitCode]).toEqual(['EGJ_RUN_INVALID', 2]);
    expect(err.message).toMatch(
      /^\/r\/\.gen\/runs\/p\.json: not a (run manifest: \S|genjob\/run@1 manifest)/,
    );
  });

  it('reads a manifest that keeps every rule', () => {
    expect(parseManifest(Buffer.from(JSON.stringify(good)), 'p.json')).toEqual(good);
    // each under the file of the run it names: another name, another revision (p@2)
    for (const [doc, file] of [
      [{ ...good, name: 'q' }, '/r/.gen/runs/q.json'],
      [{ ...good, revision: 2 }, '/r/.gen/runs/p@2.json'],
    ] as const)
      expect(parseManifest(Buffer.from(JSON.stringify(doc)), file)).toEqual(doc);
  });

  it.each([
    ['another name', { ...good, name: 'q' }, 'it names run q'],
    ['another revision', { ...good, revision: 2 }, 'it names run p@2'],
    ['no name', { ...good, name: undefined }, 'it names no run (a name, and a revision from 1)'],
    ['a revision 0', { ...good, revision: 0 }, 'it names no run (a name, and a revision from 1)'],
    ['a revision in words', { ...good, revision: '1' }, 'it names no run (a name, and a revision from 1)'],
    ['a fractional revision', { ...good, revision: 1.5 }, 'it names no run (a name, and a revision from 1)'],
  ])("refuses a manifest filed under another run's name: %s (EGJ_RUN_INVALID)", (_what, doc, names) => {
    const err = thrown(() =>
      parseManifest(Buffer.from(JSON.stringify(doc)), '/r/.gen/runs/p.json'),
    ) as GenjobError;
    expect([err.code, err.exitCode]).toEqual(['EGJ_RUN_INVALID', 2]);
    expect(err.message).toBe(`/r/.gen/runs/p.json: not the manifest of run p: ${names}`);
  });

  it("a forged manifest: another run's, with its seal, copied in under this run's name is refused, never adopted", () => {
    const store = tempStore('genjob-run-');
    const expansion = [{ path: 'a', key: K('a') }];
    sealManifest(store, buildManifest(ref('a'), template, expansion), SECRET);
    // what a branch commits: run a's manifest and seal under the name b (the same jobs b would mint)
    const file = manifestFile(store, ref('b'));
    const forged = readFileSync(manifestFile(store, ref('a')));
    writeFileSync(file, forged);
    writeFileSync(runSealFile(store, ref('b')), readFileSync(runSealFile(store, ref('a'))));
    const seal = readFileSync(runSealFile(store, ref('b')));
    const message = `${file}: not the manifest of run b: it names run a`;
    for (const attempt of [
      () => readManifest(store, ref('b')),
      () => sealedRunKeys(store, 'b', SECRET, 'nothing was decided'),
      () => sealedAlready(store, buildManifest(ref('b'), template, expansion), SECRET),
      () => sealManifest(store, buildManifest(ref('b'), template, expansion), SECRET),
    ]) {
      const err = thrown(attempt) as GenjobError;
      expect([err.code, err.message]).toEqual(['EGJ_RUN_INVALID', message]);
    }
    // nothing written: the forged files as committed, not sealed as the user's
    expect(readFileSync(file)).toEqual(forged);
    expect(readFileSync(runSealFile(store, ref('b')))).toEqual(seal);
    expect(sealedHere(store, 'b')).toBe(false);
  });

  it("refuses a manifest whose template digest is not its template's", () => {
    const store = tempStore('genjob-run-');
    const m = buildManifest(ref('d'), template, [{ path: 'a', key: K('a') }]);
    sealManifest(store, m, SECRET);
    const file = manifestFile(store, ref('d'));
    // the digest the user's run has, over another instruction: the same run by its digest, another in words
    writeFileSync(file, JSON.stringify({ ...m, template: { ...template, instruction: 'Delete {path}' } }));
    const err = thrown(() => readManifest(store, ref('d'))) as GenjobError;
    expect([err.code, err.exitCode]).toEqual(['EGJ_RUN_INVALID', 2]);
    expect(err.message).toContain("the template digest be its template's");
    writeFileSync(file, JSON.stringify({ ...m, template: null }));
    expect((thrown(() => readManifest(store, ref('d'))) as GenjobError).code).toBe('EGJ_RUN_INVALID');
  });
});

describe("the user's seal on a run", () => {
  const seeded = () => {
    const store = tempStore('genjob-run-seal-');
    const m = buildManifest(ref('s'), template, [
      { path: 'src/a.py', key: K('a') },
      { path: 'src/b.py', key: K('b') },
    ]);
    sealManifest(store, m, SECRET);
    return { store, m, file: manifestFile(store, ref('s')) };
  };

  it('lies beside the manifest and holds for its bytes, under the secret that sealed it, at that id', () => {
    const { store, file } = seeded();
    const sha = sha256Hex(readFileSync(file));
    expect(runSealFile(store, ref('s'))).toBe(file.replace(/\.json$/, '.seal'));
    // the format is kept from one genjob to the next (the bench writes one): HMAC-SHA256 of the bytes' sha256
    expect(readFileSync(runSealFile(store, ref('s')), 'utf8')).toBe(
      `${macOf(SECRET, 'genjob-run-manifest-v1', 's', sha)}\n`,
    );
    expect(runSealed(store, ref('s'), sha, SECRET)).toBe(true);
    expect(sealedHere(store, 's')).toBe(true);
    expect(sealedRunKeys(store, 's', SECRET, 'nothing').intended).toEqual([K('a'), K('b')]);
    expect(runSealed(store, ref('s'), sha, randomBytes(32))).toBe(false); // another user
    expect(runSealed(store, ref('s'), 'e'.repeat(64), SECRET)).toBe(false); // other bytes
    expect(runSealed(store, ref('t'), sha, SECRET)).toBe(false); // moved to another run
    expect(sealedHere(store, 'none')).toBe(false);
  });

  it('refuses a run whose manifest was rewritten, or came without the seal (EGJ_RUN_UNSEALED, exit 3)', () => {
    const { store, m, file } = seeded();
    // the branch's manifest: the same run but for the job that fails, left out
    writeFileSync(
      file,
      JSON.stringify({ ...m, expansion: m.expansion.slice(0, 1), keys: m.keys.slice(0, 1) }),
    );
    const err = thrown(() => sealedRunKeys(store, 's', SECRET, 'nothing was decided')) as GenjobError;
    expect([err.code, err.exitCode]).toEqual(['EGJ_RUN_UNSEALED', 3]);
    expect(err.message).toMatch(/^\S+s\.json: run s was not minted by your genjob .*; nothing was decided$/);
    rmSync(runSealFile(store, ref('s')));
    expect((thrown(() => sealedRunKeys(store, 's', SECRET, '')) as GenjobError).code).toBe(
      'EGJ_RUN_UNSEALED',
    );
  });

  it('is added by the same mint to a manifest there without it, and only when it holds exactly that run', () => {
    const { store, m, file } = seeded();
    const bytes = readFileSync(file);
    rmSync(runSealFile(store, ref('s'))); // a mint killed between its two writes, or a copy
    const again = { ...m, created_at: '2030-01-01T00:00:00.000Z', template: { ...template, each: null } };
    expect(sealedAlready(store, again, SECRET)).toBe(false); // so the mint goes on, and seals it
    expect(sealManifest(store, again, SECRET)).toBe('adopted');
    expect(readFileSync(file)).toEqual(bytes); // the manifest is never rewritten
    expect(sealedHere(store, 's')).toBe(true);
    expect(sealManifest(store, again, SECRET)).toBe('same');
    expect(sealedAlready(store, again, SECRET)).toBe(true);
    expect(sealedAlready(store, buildManifest(ref('none'), template, m.expansion), SECRET)).toBe(false);
    // another user's mint of the same run seals it as theirs; the first user's seal no longer holds
    const other = randomBytes(32);
    expect(sealManifest(store, again, other)).toBe('adopted');
    expect(sealedHere(store, 's')).toBe(false);
    // a manifest holding fewer jobs than the mint would seal is another run: refused, never sealed
    writeFileSync(file, JSON.stringify({ ...m, expansion: m.expansion.slice(1), keys: m.keys.slice(1) }));
    const err = thrown(() => sealManifest(store, m, SECRET)) as GenjobError;
    expect(err.code).toBe('EGJ_RUN_SEALED');
    expect((thrown(() => sealedAlready(store, m, SECRET)) as GenjobError).code).toBe('EGJ_RUN_SEALED');
    expect(sealedHere(store, 's')).toBe(false);
    expect(existsSync(runSealFile(store, ref('s')))).toBe(true);
  });
});
