// The spellings of .gen/ and of the policy files that a case-insensitive, HFS+ or NTFS checkout writes to
// the same file: each is held to the rule of the file it stands for; other names are not.
import { describe, expect, it } from 'vitest';
import { inGenDir, isPolicyAlias } from '../../src/git/path-aliases.js';

const POLICY = ['genjob-trust.json', 'genjob.config.json'];

describe('inGenDir', () => {
  it('hostile: every spelling a checkout folds to .gen is .gen', () => {
    for (const p of [
      '.gen',
      '.gen/receipts/x.json',
      '.GEN/receipts/x.json',
      '.Gen/applied/k.json',
      '.g\u200cen/out/k/a',
      '\ufeff.gen/x',
      '.gen./x',
      '.gen ./x',
      '.gen::$INDEX_ALLOCATION/x',
      'GEN~1/x',
      'gen~1',
    ])
      expect(inGenDir(p), p).toBe(true);
  });

  it('leaves other names alone, .gen below the top included (only the root’s .gen is genjob’s)', () => {
    for (const p of ['gen/x', '.general', '.genx/y', 'src/.gen/x', '.git/x', 'gen~2/x', 'x.gen'])
      expect(inGenDir(p), p).toBe(false);
  });
});

describe('isPolicyAlias', () => {
  it('hostile: every spelling a checkout folds to a policy file is that file', () => {
    for (const p of [
      'genjob-trust.json',
      'Genjob-Trust.json',
      'GENJOB.CONFIG.JSON',
      'genjob-trust.json.',
      'genjob-trust.json ',
      'genjob-trust.json:stream',
      'genjob-\u200dtrust.json',
      'GENJOB~1.JSO',
      'genjob~2.jso',
    ])
      expect(isPolicyAlias(p, POLICY), p).toBe(true);
  });

  it('leaves other names alone, and a policy file’s name below the top', () => {
    for (const p of [
      'genjob-trust.json5',
      'sub/genjob-trust.json',
      'genjob-trust',
      'genjob~1.txt',
      'genjo~1.jso',
    ])
      expect(isPolicyAlias(p, POLICY), p).toBe(false);
  });
});
