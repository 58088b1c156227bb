// The keyword prefilter over every text rule: secretlint's preset rules (by their keyword table) and
// genjob's own. One automaton holds all keywords, each mapped to the rules it may wake, so a file
// with no keyword costs one pass over its bytes and nothing per rule; compiled once, on first use.
import { compileKeywords, type Keyword, type KeywordAutomaton, scanKeywords } from './keywords.js';
import { OWN_RULES, type OwnRule } from './own-rules.js';
import { PRESET_RULE_FILTERS, type PresetRuleFilter } from './preset-rules.js';

export type TextRule = { kind: 'preset'; rule: PresetRuleFilter } | { kind: 'own'; rule: OwnRule };

export interface Prefilter {
  automaton: KeywordAutomaton;
  /** Every text rule; a rule's index is its place here. */
  rules: readonly TextRule[];
  /** keyword index → indices of the rules it may wake */
  wakes: ReadonlyArray<readonly number[]>;
}

/**
 * Keywords are cut to their first bytes: a prefix is as necessary as the whole, and a smaller table
 * stays in the CPU's first-level cache (at ~550 states the scan ran ~3x slower than at ~300).
 */
const MAX_KEYWORD_BYTES = 8;

let compiled: Prefilter | undefined;

export function prefilter(): Prefilter {
  compiled ??= compile();
  return compiled;
}

function compile(): Prefilter {
  const rules: TextRule[] = [
    ...PRESET_RULE_FILTERS.map((rule) => ({ kind: 'preset' as const, rule })),
    ...OWN_RULES.map((rule) => ({ kind: 'own' as const, rule })),
  ];
  const keywords: Keyword[] = [];
  const wakes: number[][] = [];
  const index = new Map<string, number>();
  rules.forEach(({ rule }, r) => {
    for (const { text, anyCase } of rule.keywords) {
      const k: Keyword = { text: text.slice(0, MAX_KEYWORD_BYTES), ...(anyCase === true ? { anyCase } : {}) };
      const key = `${k.anyCase === true ? 'i' : 's'}:${k.text}`;
      let at = index.get(key);
      if (at === undefined) {
        at = keywords.push(k) - 1;
        index.set(key, at);
        wakes.push([]);
      }
      if (!wakes[at]!.includes(r)) wakes[at]!.push(r);
    }
  });
  const automaton = compileKeywords(keywords);
  // a pass over the keywords themselves, with two distinct callbacks: the scan's hit path has run, and
  // with callbacks that vary, before V8 optimises the scan, so the optimised loop is not thrown away at
  // the first hit of a file (mint of 2,000 small files spent ~50 ms more CPU in the unoptimised scan)
  const sample = Buffer.from(keywords.map((k) => ` ${k.text} ${k.text.toUpperCase()}`).join(''), 'latin1');
  for (const hit of [() => {}, (_k: number) => {}]) scanKeywords(automaton, sample, 0, sample.length, 0, hit);
  return { automaton, rules, wakes };
}
