import { describe, expect, it } from 'vitest';
import { scanKeywords } from '../../src/secrets/keywords.js';
import { prefilter } from '../../src/secrets/prefilter.js';

/** The names of the rules `text` wakes. */
function woken(text: string): Set<string> {
  const { automaton, rules, wakes } = prefilter();
  const out = new Set<string>();
  const bytes = Buffer.from(text);
  scanKeywords(automaton, bytes, 0, bytes.length, 0, (k) => {
    for (const r of wakes[k]!) {
      const { kind, rule } = rules[r]!;
      out.add(kind === 'own' ? rule.name : rule.id);
    }
  });
  return out;
}

describe('prefilter', () => {
  it('wakes every rule by each of its keywords, whole (as it is written in a file)', () => {
    for (const { kind, rule } of prefilter().rules)
      for (const k of rule.keywords)
        expect(woken(`x ${k.text} y`).has(kind === 'own' ? rule.name : rule.id), `${k.text}`).toBe(true);
  });

  it('wakes nothing on ordinary code', () => {
    expect(woken('export function add(a: number, b: number) {\n  return a + b;\n}\n')).toEqual(new Set());
  });

  it('wakes by a keyword cut to its first 8 bytes, and only the rules that keyword names', () => {
    expect(woken('pypi-AgE')).toEqual(new Set(['pypi-token']));
    expect(woken('hooks.sl')).toEqual(
      new Set(['@secretlint/secretlint-rule-slack', 'slack-workflow-webhook']),
    );
  });

  it('keeps its table small enough for the first-level cache', () => {
    const { automaton } = prefilter();
    expect(automaton.next.byteLength).toBeLessThanOrEqual(40 * 1024);
  });
});
