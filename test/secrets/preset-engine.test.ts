import { describe, expect, it } from 'vitest';
import { isPlaceholder, lintWithPreset, PRESET_RULE_IDS } from '../../src/secrets/preset-engine.js';
import { corpusValue as v } from './corpus-values.js';

const ALL = new Set(PRESET_RULE_IDS);
const only = (...names: string[]) => new Set(names.map((n) => `@secretlint/secretlint-rule-${n}`));

describe('lintWithPreset', () => {
  it('names the rule, the message and where the match starts, never the matched text', async () => {
    const token = v('ghp');
    const text = `a\nb\nconst t = '${token}';\n`;
    const found = await lintWithPreset(text, 'src/a.ts', ALL);
    expect(found).toEqual([{ rule: 'secretlint github: GITHUB_TOKEN', index: text.indexOf(token) }]);
    expect(JSON.stringify(found)).not.toContain(token.slice(4));
  });

  it('runs only the rules it is given', async () => {
    const text = `${v('ghp')}\n${v('aws-key-id')}\n`;
    expect((await lintWithPreset(text, 'a.txt', only('aws'))).map((f) => f.rule)).toEqual([
      'secretlint aws: AWSAccessKeyID',
    ]);
    expect(await lintWithPreset(text, 'a.txt', new Set())).toEqual([]);
  });

  it('reports AWS access key ids (off by default in secretlint) but not account ids', async () => {
    const found = await lintWithPreset(
      `id = ${v('aws-key-id')}\naws_account_id = 1234-5678-9012\n`,
      'a.ini',
      ALL,
    );
    expect(found.map((f) => f.rule)).toEqual(['secretlint aws: AWSAccessKeyID']);
  });

  it('honours a secretlint-disable-line comment, as secretlint does', async () => {
    const text = `const t = '${v('ghp')}'; // secretlint-disable-line\n`;
    expect(await lintWithPreset(text, 'a.ts', ALL)).toEqual([]);
  });

  it('drops a documented placeholder, keeps a key whose body has runs of A', async () => {
    const placeholders = [
      'ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX',
      'https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX',
    ];
    for (const p of placeholders) expect(await lintWithPreset(p, 'README.md', ALL), p).toEqual([]);
    const openssh = v('openssh-key');
    expect(openssh).toMatch(/A{8}/);
    expect((await lintWithPreset(openssh, 'k.txt', ALL)).map((f) => f.rule)).toEqual([
      'secretlint privatekey: PrivateKey',
    ]);
  });

  it('looks at a GCP service account key only in a .json file', async () => {
    const sa = `{"private_key_id": "1", "private_key": "${v('pkcs8-json')}"}`;
    expect((await lintWithPreset(sa, 'gcp/sa.json', only('gcp'))).map((f) => f.rule)).toEqual([
      'secretlint gcp: PrivateKeyJSON',
    ]);
    expect(await lintWithPreset(sa, 'gcp/sa.txt', only('gcp'))).toEqual([]);
  });
});

describe('isPlaceholder', () => {
  it.each([
    { matched: 'ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX', placeholder: true },
    { matched: 'AKIA0000000000000000', placeholder: true },
    { matched: v('ghp'), placeholder: false },
    {
      matched: `-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB${'Q'.repeat(300)}`,
      placeholder: false,
    },
  ])('$matched → $placeholder', ({ matched, placeholder }) => {
    expect(isPlaceholder(matched)).toBe(placeholder);
  });
});
