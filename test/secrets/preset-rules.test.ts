import { describe, expect, it } from 'vitest';
import type { Keyword } from '../../src/secrets/keywords.js';
import { lintWithPreset, PRESET_RULE_IDS } from '../../src/secrets/preset-engine.js';
import { PRESET_ALWAYS_ON, PRESET_RULE_FILTERS, presetFindingName } from '../../src/secrets/preset-rules.js';
import { corpusValue as v } from './corpus-values.js';

const has = (text: string, k: Keyword) =>
  k.anyCase ? text.toLowerCase().includes(k.text.toLowerCase()) : text.includes(k.text);

// a text each preset rule reports (through secretlint itself), with the file name it needs
const positives: Array<{ rule: string; text: string; path?: string }> = [
  { rule: 'aws', text: `const id = '${v('aws-key-id')}';` },
  { rule: 'aws', text: `aws_secret_access_key = ${v('aws-secret')}` },
  {
    rule: 'gcp',
    path: 'sa.json',
    text: `{"type": "service_account", "private_key_id": "1", "private_key": "${v('pkcs8-json')}"}`,
  },
  { rule: 'privatekey', text: v('rsa-pkcs1') },
  { rule: 'npm', text: `NPM_TOKEN=${v('npm')}` },
  {
    rule: 'npm',
    path: 'package.json',
    text: `{"dependencies": {"x": "git+https://${v('github-hex')}:x-oauth-basic@github.com/a/b.git"}}`,
  },
  { rule: 'basicauth', text: `git clone https://ci-bot:${v('basic-password')}@git.acme-corp.net/a.git` },
  { rule: 'slack', text: v('slack-bot') },
  {
    rule: 'slack',
    text: v('slack-webhook')
      .toUpperCase()
      .replace('HTTPS://HOOKS.SLACK.COM/SERVICES', 'https://Hooks.Slack.com/services'),
  },
  { rule: 'sendgrid', text: v('sendgrid') },
  { rule: 'shopify', text: v('shopify') },
  { rule: 'stripe', text: v('stripe-live') },
  { rule: 'github', text: v('ghp') },
  { rule: 'github', text: v('github-pat') },
  { rule: 'gitlab', text: v('gitlab') },
  { rule: 'grafana', text: v('grafana-sa') },
  { rule: 'openai', text: v('openai-proj') },
  { rule: 'anthropic', text: v('anthropic') },
  { rule: 'groq', text: v('groq') },
  { rule: 'huggingface', text: v('hf') },
  { rule: 'linear', text: v('linear') },
  { rule: 'notion', text: v('notion') },
  { rule: '1password', text: v('1password') },
  {
    rule: 'database-connection-string',
    text: `url: POSTGRES://svc_app:${v('db-password')}@db.prod.internal/app`,
  },
  { rule: 'hashicorp-vault', text: v('vault') },
  { rule: 'vercel', text: v('vercel') },
  { rule: 'databricks', text: v('databricks') },
  { rule: 'docker', text: v('docker-pat') },
  { rule: 'figma', text: v('figma') },
  { rule: 'cloudflare', text: v('cloudflare') },
  { rule: 'tailscale', text: v('tailscale') },
];

describe('the preset keyword table', () => {
  it('names every rule of the pinned preset, and nothing else', () => {
    const named = [...PRESET_RULE_FILTERS.map((f) => f.id), ...PRESET_ALWAYS_ON].sort();
    expect(named).toEqual([...PRESET_RULE_IDS].sort());
  });

  it('has a positive case for every reporting rule', () => {
    const covered = new Set(positives.map((p) => `@secretlint/secretlint-rule-${p.rule}`));
    expect(PRESET_RULE_FILTERS.map((f) => f.id).filter((id) => !covered.has(id))).toEqual([]);
  });

  it.each(positives)(
    '$rule: secretlint reports it, and its keywords and gate hold on it',
    async ({ rule, text, path }) => {
      const id = `@secretlint/secretlint-rule-${rule}`;
      const content = path?.endsWith('.json') ? text : `first line\n${text}\n`; // JSON stays JSON
      const reported = await lintWithPreset(content, path ?? 'notes.txt', new Set(PRESET_RULE_IDS));
      expect(
        reported.map((f) => f.rule).filter((r) => r.startsWith(`secretlint ${rule}:`)).length,
      ).toBeGreaterThan(0);
      const filter = PRESET_RULE_FILTERS.find((f) => f.id === id)!;
      expect(filter.keywords.some((k) => has(text, k))).toBe(true);
      expect(filter.gate?.test(text) ?? true).toBe(true);
    },
  );

  it('names a finding by the short rule id and the message id', () => {
    expect(presetFindingName('@secretlint/secretlint-rule-aws', 'AWSAccessKeyID')).toBe(
      'secretlint aws: AWSAccessKeyID',
    );
  });
});
