// What must appear in a text before a rule of secretlint's recommended preset can report anything:
// each rule's keywords (a literal every one of its patterns contains) and, for a keyword common in
// ordinary code, a cheaper necessary condition on the text. Only a rule that passes both runs, so most
// files never start secretlint at all, but whatever runs, secretlint's own rule decides. A preset rule
// missing from this table fails a test (a newer preset adds rules), never the scan.
import type { Gate, Keyword } from './keywords.js';

export interface PresetRuleFilter {
  /** The rule's id in the preset (`meta.id`). */
  id: string;
  keywords: readonly Keyword[];
  /** A necessary condition cheaper than the rule, tested on the text once a keyword is seen. */
  gate?: Gate;
}

const literal = (...texts: string[]): Keyword[] => texts.map((text) => ({ text }));
const anyCase = (...texts: string[]): Keyword[] => texts.map((text) => ({ text, anyCase: true }));
const rule = (name: string) => `@secretlint/secretlint-rule-${name}`;

export const PRESET_RULE_FILTERS: readonly PresetRuleFilter[] = [
  {
    // access key ids (prefix + 16 of [A-Z0-9]) and `(aws_)secret_access_key = <40>`
    id: rule('aws'),
    keywords: [
      ...literal('AKIA', 'ASIA', 'A3T', 'AGPA', 'AIDA', 'AROA', 'AIPA', 'ANPA', 'ANVA'),
      ...anyCase('secretaccess', 'secret_access'),
    ],
    gate: /(?:A3T|AKIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASIA)[A-Z0-9]{16}|[Ss][Ee][Cc][Rr][Ee][Tt]_?[Aa][Cc][Cc][Ee][Ss][Ss]/,
  },
  // a service account's JSON key (the rule looks at *.json only)
  { id: rule('gcp'), keywords: literal('private_key_id') },
  { id: rule('privatekey'), keywords: literal('PRIVATE KEY') },
  {
    id: rule('npm'),
    keywords: literal('npm_', 'x-oauth-basic', '_authToken='),
    gate: /npm_\w{30}|x-oauth-basic|_authToken=/,
  },
  // user:password@ in a URL; "://" alone is in every link
  { id: rule('basicauth'), keywords: literal('://'), gate: /:\/\/[-\w]{1,256}:[-\w]{1,256}@/ },
  {
    id: rule('slack'),
    keywords: [
      ...literal('xoxb-', 'xoxp-', 'xapp-', 'xoxa-', 'xoxo-', 'xoxr-'),
      ...anyCase('hooks.slack.com/services/'),
    ],
  },
  { id: rule('sendgrid'), keywords: literal('SG.'), gate: /SG\.\w+\.\w/ },
  { id: rule('shopify'), keywords: literal('shppa_', 'shpca_', 'shpat_', 'shpss_') },
  { id: rule('stripe'), keywords: literal('sk_live_', 'sk_test_', 'rk_live_', 'rk_test_') },
  { id: rule('github'), keywords: literal('ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'github_pat_') },
  { id: rule('gitlab'), keywords: literal('glpat-') },
  { id: rule('grafana'), keywords: literal('glc_', 'glsa_') },
  { id: rule('openai'), keywords: literal('T3BlbkFJ') },
  { id: rule('anthropic'), keywords: literal('sk-ant-api0') },
  { id: rule('groq'), keywords: literal('gsk_') },
  { id: rule('huggingface'), keywords: literal('hf_'), gate: /hf_[a-zA-Z]{30}/ },
  { id: rule('linear'), keywords: literal('lin_api_') },
  { id: rule('notion'), keywords: literal('ntn_') },
  { id: rule('1password'), keywords: literal('ops_ey') },
  {
    // scheme://user:password@host: the rule reports only with both parts
    id: rule('database-connection-string'),
    keywords: anyCase('mongodb', 'mysql', 'postgres'),
    gate: /:\/\/[^:/\s]{1,100}:[^@/\s]{1,200}@/,
  },
  { id: rule('hashicorp-vault'), keywords: literal('hvs.', 'hvb.', 'hvr.') },
  { id: rule('vercel'), keywords: literal('vcp_', 'vci_', 'vca_', 'vcr_', 'vck_') },
  { id: rule('databricks'), keywords: literal('dapi'), gate: /dapi[A-Fa-f0-9]{16}/ },
  { id: rule('docker'), keywords: literal('dckr_pat_') },
  { id: rule('figma'), keywords: literal('figd_') },
  { id: rule('cloudflare'), keywords: literal('cfk_', 'cfut_', 'cfat_') },
  { id: rule('tailscale'), keywords: literal('tskey-') },
];

/**
 * Rules of the preset that report nothing themselves: they run whenever secretlint runs. The comment
 * filter honours `secretlint-disable` comments, which teams already running secretlint have written.
 */
export const PRESET_ALWAYS_ON: readonly string[] = [rule('filter-comments')];

/** How genjob names a secretlint finding: `secretlint <rule>: <messageId>`. */
export function presetFindingName(ruleId: string, messageId: string): string {
  return `secretlint ${ruleId.replace('@secretlint/secretlint-rule-', '')}: ${messageId}`;
}
