import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileKeywords, type Keyword, runGate, scanKeywords } from '../../src/secrets/keywords.js';

/** Every (keyword, end) the automaton reports over `text`, fed in pieces cut at `cuts`. */
function hits(keywords: Keyword[], text: string, cuts: number[] = []): string[] {
  const a = compileKeywords(keywords);
  const bytes = Buffer.from(text, 'latin1');
  const out: string[] = [];
  let state = 0;
  const bounds = [0, ...cuts.filter((c) => c > 0 && c < bytes.length).sort((x, y) => x - y), bytes.length];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const piece = bytes.subarray(bounds[i], bounds[i + 1]);
    state = scanKeywords(a, piece, 0, piece.length, state, (k, end) =>
      out.push(`${keywords[k]!.text}@${bounds[i]! + end}`),
    );
  }
  return out.sort();
}

/** The same, by brute force: every occurrence, case folded where the keyword allows it. */
function naive(keywords: Keyword[], text: string): string[] {
  const out: string[] = [];
  for (const k of keywords) {
    const hay = k.anyCase ? text.toLowerCase() : text;
    const needle = k.anyCase ? k.text.toLowerCase() : k.text;
    for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + 1))
      out.push(`${k.text}@${i + needle.length - 1}`);
  }
  return out.sort();
}

describe('compileKeywords / scanKeywords', () => {
  it('reports overlapping keywords and keywords that end inside others', () => {
    const kw = [{ text: 'he' }, { text: 'she' }, { text: 'his' }, { text: 'hers' }];
    expect(hits(kw, 'ushers')).toEqual(['he@3', 'hers@5', 'she@3']);
  });

  it('folds case for an anyCase keyword only', () => {
    const kw = [{ text: 'Secret', anyCase: true }, { text: 'AKIA' }];
    expect(hits(kw, 'SECRET akia AKIA secret')).toEqual(['AKIA@15', 'Secret@22', 'Secret@5']);
  });

  it('finds a keyword split across pieces when the state is carried over', () => {
    const kw = [{ text: 'ghp_' }, { text: 'PRIVATE KEY' }];
    const text = 'x ghp_ y -----BEGIN PRIVATE KEY-----';
    for (let cut = 1; cut < text.length; cut++) expect(hits(kw, text, [cut])).toEqual(naive(kw, text));
  });

  it('agrees with brute force on random text and keywords (property)', () => {
    const alphabet = fc.constantFrom('a', 'b', 'A', 'B', '_', '-');
    const word = fc.string({ unit: alphabet, minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ text: word, anyCase: fc.boolean() }), {
          minLength: 1,
          maxLength: 6,
          selector: (k) => `${k.anyCase}:${k.text}`,
        }),
        fc.string({ unit: alphabet, maxLength: 60 }),
        fc.array(fc.nat(60), { maxLength: 3 }),
        (keywords, text, cuts) => {
          // a case-sensitive keyword that began in an earlier piece is reported unconfirmed: check
          // exactness on whole text, and on cut text only that nothing is lost
          expect(hits(keywords, text)).toEqual(naive(keywords, text));
          const cutHits = new Set(hits(keywords, text, cuts));
          for (const h of naive(keywords, text)) expect(cutHits.has(h)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('widens its table to 32-bit states only when 16 bits cannot number them', () => {
    const few = compileKeywords(Array.from({ length: 300 }, (_, i) => ({ text: `kw${i}_` })));
    expect(few.next).toBeInstanceOf(Uint16Array);
    const many = Array.from({ length: 3000 }, (_, i) => ({
      text: `k${i.toString(36)}x${(i * 7919).toString(36)}_`,
    }));
    const wide = compileKeywords(many);
    expect(wide.next).toBeInstanceOf(Uint32Array);
    const text = `${many[2999]!.text} ${many[5]!.text}`;
    expect(hits(many, text)).toEqual(naive(many, text));
  });
});

describe('runGate', () => {
  it('holds exactly when a run of n characters of its class occurs (property, against a regex)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'f', '0', 'g', ' ', 'é'), maxLength: 80 }),
        fc.integer({ min: 1, max: 9 }),
        (text, n) => {
          expect(runGate('af0', n).test(text)).toBe(new RegExp(`[af0]{${n}}`).test(text));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('finds a 40-hex token among short hex-letter words', () => {
    const words = 'a bad face fed a deaf cafe added '.repeat(50);
    expect(runGate('0123456789abcdef', 40).test(words)).toBe(false);
    expect(runGate('0123456789abcdef', 40).test(`${words}${'0a1b2c3d4e'.repeat(4)} ${words}`)).toBe(true);
  });
});
