import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bindingDigest, bindingsAt, boundFiles } from '../../src/check/binding.js';
import { type JudgeChecker, parseChecker } from '../../src/check/checker.js';
import { judgeEndpoint } from '../../src/check/judge-endpoint.js';
import { commitAll } from '../helpers/commit-all.js';
import { tempDir } from '../helpers/temp-store.js';

const cmd = parseChecker('tests', { run: 'npm test' }, 'f');
const judge = parseChecker('review', { judge: 'builtin:openai', model: 'm1', rubric: 'docs/r.md' }, 'f');
const file = (path: string, c: string | null) => ({ path, sha256: c === null ? null : c.repeat(64) });

describe('bindingDigest', () => {
  it('changes with the definition, a file’s digest, a file appearing, and the model', () => {
    const base = bindingDigest(cmd, [file('package-lock.json', 'a')]);
    expect(
      bindingDigest(parseChecker('tests', { run: 'npm test -- --x' }, 'f'), [file('package-lock.json', 'a')]),
    ).not.toBe(base);
    expect(
      bindingDigest(parseChecker('tests', { run: 'npm test', attempts: 2 }, 'f'), [
        file('package-lock.json', 'a'),
      ]),
    ).not.toBe(base);
    expect(bindingDigest(cmd, [file('package-lock.json', 'b')])).not.toBe(base);
    expect(bindingDigest(cmd, [file('package-lock.json', 'a'), file('yarn.lock', 'c')])).not.toBe(base);
    expect(bindingDigest(cmd, [])).not.toBe(base);
    const j = bindingDigest(judge, [file('docs/r.md', 'a')]);
    expect(
      bindingDigest(
        parseChecker('review', { judge: 'builtin:openai', model: 'm2', rubric: 'docs/r.md' }, 'f'),
        [file('docs/r.md', 'a')],
      ),
    ).not.toBe(j);
    expect(bindingDigest(judge, [file('docs/r.md', null)])).not.toBe(j);
  });

  it("forged: a judge's binding changes with the endpoint it asks, never with the credentials in its URL", () => {
    // no openai.json of the user's: only the variables below say where the judge asks
    const env = (base?: string) => ({
      XDG_CONFIG_HOME: tempDir('genjob-binding-xdg-'),
      ...(base === undefined ? {} : { GENJOB_OPENAI_BASE_URL: base }),
    });
    const files = [file('docs/r.md', 'a')];
    const real = bindingDigest(judge, files, env('https://api.openai.com/v1'));
    expect(bindingDigest(judge, files, env('https://api.openai.com/v1/'))).toBe(real);
    expect(bindingDigest(judge, files, env('http://127.0.0.1:18790/v1'))).not.toBe(real);
    expect(bindingDigest(judge, files, env('https://api.openai.com/v2'))).not.toBe(real);
    expect(bindingDigest(judge, files, env())).not.toBe(real);
    expect(bindingDigest(judge, files, env('https://u:secret@api.openai.com/v1?key=secret'))).toBe(real);
    expect(judgeEndpoint(judge as JudgeChecker, env('https://u:secret@api.openai.com/v1?key=secret'))).toBe(
      'https://api.openai.com/v1',
    );
    // a command's binding names no endpoint
    expect(bindingDigest(cmd, files, env('http://127.0.0.1:18790/v1'))).toBe(
      bindingDigest(cmd, files, env()),
    );
  });

  it('does not depend on how the files are ordered or how the definition was spelled', () => {
    const a = bindingDigest(cmd, [file('a.lock', 'a'), file('b.lock', 'b')]);
    expect(bindingDigest(cmd, [file('b.lock', 'b'), file('a.lock', 'a')])).toBe(a);
    const spelled = parseChecker(
      'tests',
      { attempts: 1, network: false, run: 'npm test', timeout: '10m' },
      'f',
    );
    expect(bindingDigest(spelled, [file('a.lock', 'a'), file('b.lock', 'b')])).toBe(a);
  });
});

describe('boundFiles', () => {
  it('pins the lockfiles present at the tree by default; a named pin or the rubric even when absent', async () => {
    const root = tempDir('genjob-binding-');
    writeFileSync(join(root, 'poetry.lock'), 'x\n');
    writeFileSync(join(root, 'docs.md'), 'r\n');
    await commitAll(root);
    const files = await boundFiles(root, 'HEAD', cmd);
    expect(files.map((f) => f.path)).toEqual(['poetry.lock']);
    expect(files[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(
      await boundFiles(root, 'HEAD', parseChecker('t', { run: 'x', pin: ['missing.lock'] }, 'f')),
    ).toEqual([{ path: 'missing.lock', sha256: null }]);
    expect(
      await boundFiles(
        root,
        'HEAD',
        parseChecker('r', { judge: 'builtin:openai', model: 'm', rubric: 'docs.md' }, 'f'),
      ),
    ).toEqual([{ path: 'docs.md', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
  });
});

describe('bindingsAt', () => {
  it('gives each checker, read together, the digest of its own files as read alone', async () => {
    const root = tempDir('genjob-bindings-');
    writeFileSync(join(root, 'poetry.lock'), 'x\n');
    writeFileSync(join(root, 'a.lock'), 'a\n');
    writeFileSync(join(root, 'docs.md'), 'r\n');
    await commitAll(root);
    const checkers = [
      cmd,
      parseChecker('pinned', { run: 'x', pin: ['missing.lock', 'a.lock'] }, 'f'),
      parseChecker('judge', { judge: 'builtin:openai', model: 'm', rubric: 'docs.md' }, 'f'),
      parseChecker('none', { run: 'y', pin: [] }, 'f'),
    ];
    const together = await bindingsAt(root, 'HEAD', checkers);
    expect([...together.keys()]).toEqual(checkers.map((c) => c.name));
    for (const c of checkers)
      expect(together.get(c.name)).toBe(bindingDigest(c, await boundFiles(root, 'HEAD', c)));
    expect(new Set(together.values()).size).toBe(checkers.length);
  });
});
