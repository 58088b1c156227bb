// Run secretlint (its core engine and recommended preset, bundled) on one text with only the preset
// rules whose keywords it holds enabled. Loaded lazily by the scanner: a command that scans no
// flagged text never pays for importing it. Findings carry the rule and message id and a line, never
// the matched text (secretlint's messages quote the secret; `maskSecrets` is on as well). The one
// judgement genjob adds: a match that is plainly a placeholder is dropped.
import { lintSource } from '@secretlint/core';
import { secretLintProfiler } from '@secretlint/profiler';
import { rules as presetRules } from '@secretlint/secretlint-rule-preset-recommend';
import { PRESET_ALWAYS_ON, presetFindingName } from './preset-rules.js';

// secretlint's profiler is on by default and keeps a performance entry per rule per file, forever
secretLintProfiler.setEnabled(false);

/** The preset's rule ids, in its order. */
export const PRESET_RULE_IDS: readonly string[] = presetRules.map((r) => r.meta.id);

/** Options for the preset's rules, as genjob uses them. */
const RULE_OPTIONS: Record<string, { options?: object; allowMessageIds?: string[] }> = {
  // access key ids are off by default in secretlint; account ids are not secrets
  '@secretlint/secretlint-rule-aws': {
    options: { enableIDScanRule: true },
    allowMessageIds: ['AWSAccountID'],
  },
};

export interface PresetFinding {
  rule: string;
  /** Where in `text` the match starts (lines are counted by the caller, by "\n" as genjob's own rules are). */
  index: number;
}

/**
 * Lint `text` (the contents of `path`, or a part of them) with the preset rules `ruleIds` (and the
 * always-on ones); return what they report, in order.
 */
export async function lintWithPreset(
  text: string,
  path: string,
  ruleIds: ReadonlySet<string>,
): Promise<PresetFinding[]> {
  // the preset's rules one by one: secretlint 13.0 does not disable a rule inside a preset
  const rules = presetRules
    .filter((r) => ruleIds.has(r.meta.id) || PRESET_ALWAYS_ON.includes(r.meta.id))
    .map((rule) => ({ id: rule.meta.id, rule, ...RULE_OPTIONS[rule.meta.id] }));
  const dot = path.lastIndexOf('.');
  const ext = dot > path.lastIndexOf('/') ? path.slice(dot) : '';
  const result = await lintSource({
    source: {
      content: text,
      // secretlint requires a name; text with none (the instruction) gets one no rule treats specially
      filePath: path === '' ? 'text' : path,
      // a .p12 is refused by its name; secretlint would read it from disk by a relative path
      ext: ext === '.p12' ? '' : ext,
      contentType: 'text',
    },
    options: { config: { rules }, maskSecrets: true, noPhysicFilePath: true },
  });
  return result.messages
    .filter((m) => !isPlaceholder(text.slice(m.range[0], m.range[1])))
    .map((m) => ({ rule: presetFindingName(m.ruleId, m.messageId), index: m.range[0] }));
}

/**
 * A token-sized match holding a run of 8 equal characters is a documented placeholder
 * (`ghp_XXXX…`, Slack's `T00000000/B00000000/XXXX…`), not a credential: random tokens never hold one.
 * Longer matches (a PEM key, whose DER has runs of zero bytes, a whole key file) are never vetoed.
 */
export function isPlaceholder(matched: string): boolean {
  return matched.length <= 300 && /(.)\1{7}/.test(matched);
}
