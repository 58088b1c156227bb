import { describe, expect, it } from 'vitest';
import { OWN_RULE_NAMES, OWN_RULES, type OwnRule } from '../../src/secrets/own-rules.js';
import { corpusValue as v } from './corpus-values.js';

/** Start indices every rule of `name` finds in `text`. */
function found(name: string, text: string): number[] {
  return OWN_RULES.filter((r) => r.name === name).flatMap((r) => r.find(text));
}

/** The rules of `name` that could run on `text`: a keyword present (case as declared), the gate passed. */
function woken(name: string, text: string): OwnRule[] {
  return OWN_RULES.filter(
    (r) =>
      r.name === name &&
      r.keywords.some((k) =>
        k.anyCase ? text.toLowerCase().includes(k.text.toLowerCase()) : text.includes(k.text),
      ) &&
      (r.gate === undefined || r.gate.test(text)),
  );
}

const x = (n: number) => 'x'.repeat(n);
/** `text` with each of its lines indented `n` times `by`. */
const indent = (text: string, n: number, by = ' ') => text.replace(/^(?=.)/gm, by.repeat(n));

const cases: Array<{ rule: string; positive: string; negatives: string[] }> = [
  {
    rule: 'private-key',
    positive: `key:\n${v('encrypted-pkcs8')}`,
    negatives: [
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA...\n-----END RSA PRIVATE KEY-----',
      "const BEGIN = '-----BEGIN PRIVATE KEY-----';\nexport {};",
    ],
  },
  {
    // a YAML block scalar nested deep in a manifest: the body is indented past any short prefix
    rule: 'private-key',
    positive: `          env:\n            - name: SIGNING_KEY\n              value: |\n${indent(v('ec-sec1'), 16)}`,
    negatives: [
      `              value: |\n${indent('-----BEGIN EC PRIVATE KEY-----\n<paste the key here>\n-----END EC PRIVATE KEY-----', 16)}`,
    ],
  },
  {
    rule: 'private-key',
    positive: `\t\t\tprivateKey: |\n${indent(v('ed25519-pkcs8'), 14, '\t')}`,
    negatives: [],
  },
  {
    rule: 'private-key',
    positive: v('pgp-private'),
    negatives: ['-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: 1\n\n(paste here)'],
  },
  {
    rule: 'private-key',
    positive: `"private_key": "${v('pkcs8-json')}"`,
    negatives: ['"private_key": "-----BEGIN PRIVATE KEY-----\\n..."'],
  },
  {
    rule: 'private-key',
    positive: `tls.key: ${v('pkcs8-base64')}`,
    negatives: [`tls.crt: ${Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB').toString('base64')}`],
  },
  {
    rule: 'jwt',
    positive: `Authorization: Bearer ${v('jwt-hs256')}`,
    negatives: [
      'eyJhbGciOiJub25lIn0.eyJpc3MiOiJqb2UiLCJleHAiOjEzMDA4MTkzODB9.',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl',
      // an alg of "none" with a signature-sized tail
      `eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.${'a1B2'.repeat(11)}`,
      // a header that is not JSON, a header without an algorithm
      `eyJub3QganNvbg.eyJzdWIiOiIxIn0.${'a1B2'.repeat(11)}`,
      `eyJ0eXAiOiJKV1QifQ.eyJzdWIiOiIxIn0.${'a1B2'.repeat(11)}`,
    ],
  },
  { rule: 'jwt', positive: `{"t": "${v('jwt-rs256')}"}`, negatives: ['eyJyZWdpb24iOiJldS13ZXN0LTEifQ=='] },
  {
    rule: 'azure-storage-account-key',
    positive: `DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${v('azure-storage-key')};EndpointSuffix=core.windows.net`,
    negatives: [
      'AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;',
      'AccountKey=<your-key>',
      `AccountKey=${x(86)}==`,
    ],
  },
  {
    rule: 'azure-shared-access-key',
    positive: `Endpoint=sb://a.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=${v('azure-sb-key')}`,
    negatives: ['SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=<key>'],
  },
  {
    rule: 'azure-sas-token',
    positive: `https://a.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&se=2027-01-01&sig=${v('azure-sas-sig')}`,
    negatives: ['?sv=2022-11-02&sp=r&sig=<signature>', `https://example.org/x?sig=${'Ab3'.repeat(20)}`],
  },
  {
    rule: 'azure-ad-client-secret',
    positive: `secret = '${v('azure-ad-secret')}'`,
    negatives: ['path ~/Q~/notes', `a1Q~${x(34)}`],
  },
  {
    rule: 'github-token',
    positive: `GITHUB_TOKEN=${v('github-hex')}`,
    negatives: [
      `GITHUB_SHA=${v('github-hex')}`,
      `commit ${v('github-hex')} on github`,
      `github_token: ${'0'.repeat(40)}`,
      `gh-pages: ${v('github-hex')}`,
    ],
  },
  {
    rule: 'github-token',
    positive: `curl -H "Authorization: token ${v('github-hex')}" https://api.github.com`,
    negatives: ['Authorization: token <your-token>'],
  },
  {
    rule: 'github-token',
    positive: `url = https://${v('github-hex')}@github.com/acme/lib.git`,
    negatives: [`https://github.com/acme/lib/commit/${v('github-hex')}`],
  },
  {
    rule: 'github-token',
    positive: `ghToken: "${v('github-hex')}"`,
    negatives: [`ghost: "${v('github-hex')}"`],
  },
  {
    rule: 'github-token',
    positive: `github.com:\n- user: octocat\n  oauth_token: ${v('github-hex')}`,
    negatives: [`oauth_verifier: ${v('github-hex')}`],
  },
  {
    rule: 'connection-string-password',
    positive: `"Main": "Server=tcp:acme.database.windows.net,1433;Database=app;User ID=app;Password=${v('db-password')};Encrypt=True;"`,
    negatives: [
      'Server=myServerAddress;Database=myDataBase;User Id=myUsername;Password=myPassword;',
      `Server=db;Database=app;User Id=app;Password=${'$'}{DB_PASSWORD};`,
      'Data Source=db;Initial Catalog=app;Integrated Security=True;',
      `DB_PASSWORD=${v('db-password')}`,
      `spring.datasource.password=${v('db-password')}`,
    ],
  },
  {
    rule: 'connection-string-password',
    positive: `url=jdbc:sqlserver://db.internal:1433;user=app;password=${v('db-password')}`,
    negatives: ['jdbc:sqlserver://db;password=<secret>'],
  },
  { rule: 'google-api-key', positive: `key: '${v('google-api')}'`, negatives: [`AIza${x(35)}`, 'AIzaShort'] },
  {
    rule: 'sk-api-key',
    positive: `OPENAI_API_KEY=${v('sk-compat')}`,
    negatives: [
      "export const skeletonId = 'sk-1f3a9b2c4d5e6f708192a3b4c5d6e7f8';",
      'api_key: sk-your-api-key-goes-here-please-replace',
      '/guides/sk-8f14e45fceea167a5a36dedd4bea2543',
    ],
  },
  { rule: 'sk-api-key', positive: `Authorization: Bearer ${v('sk-compat')}`, negatives: ['Bearer sk-short'] },
  { rule: 'anthropic-admin-key', positive: v('anthropic-admin'), negatives: ['sk-ant-admin01-short'] },
  {
    rule: 'aws-secret-key',
    positive: `aws.secret.key=${v('aws-secret')}`,
    negatives: [
      'aws_secret_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
      'aws_secret_key = path/to/some/file/in/a/dir/abc',
    ],
  },
  // a value ending in "/", where secretlint's pattern finds no word boundary
  {
    rule: 'aws-secret-key',
    positive: `secret_access_key = ${v('aws-secret-slash')}`,
    negatives: [`secret_access_key = ${'ab/'.repeat(13)}c`],
  },
  { rule: 'pypi-token', positive: `password = ${v('pypi')}`, negatives: ['pypi-AgEIcHlwaS5vcmc'] },
  { rule: 'digitalocean-token', positive: v('digitalocean'), negatives: [`dop_v1_${'0'.repeat(64)}`] },
  {
    rule: 'discord-webhook',
    positive: v('discord-webhook'),
    negatives: ['https://discord.com/api/webhooks/<id>/<token>'],
  },
  {
    rule: 'telegram-bot-token',
    positive: `BOT=${v('telegram')}`,
    negatives: ['time 12:AA', `123:AA${x(33)}`],
  },
  { rule: 'age-secret-key', positive: v('age'), negatives: ['AGE-SECRET-KEY-1...'] },
  { rule: 'google-oauth-client-secret', positive: v('gocspx'), negatives: [`GOCSPX-${x(28)}`] },
  {
    rule: 'teams-webhook',
    positive: v('teams-webhook'),
    negatives: ['https://contoso.webhook.office.com/webhookb2/<id>'],
  },
  {
    rule: 'slack-workflow-webhook',
    positive: v('slack-workflow-webhook'),
    negatives: ['https://hooks.slack.com/workflows/T000/A000/1/x'],
  },
  { rule: 'postman-api-key', positive: v('postman'), negatives: ['PMAK-<key>'] },
  { rule: 'new-relic-user-key', positive: v('newrelic'), negatives: [`NRAK-${'X'.repeat(27)}`] },
  { rule: 'heroku-api-key', positive: v('heroku'), negatives: ['HRKU-AA'] },
  { rule: 'mapbox-secret-token', positive: v('mapbox'), negatives: ['pk.eyJ1IjoiYSJ9.public-token'] },
  { rule: 'rubygems-api-key', positive: v('rubygems'), negatives: [`rubygems_${'0'.repeat(48)}`] },
  { rule: 'sentry-auth-token', positive: v('sentry'), negatives: ['sntryu_short'] },
];

describe("genjob's own rules", () => {
  it.each(cases)(
    '$rule: finds the positive case, where its keywords and gate let it run',
    ({ rule, positive }) => {
      const text = `first line\n${positive}\nlast line\n`;
      expect(found(rule, text).length).toBeGreaterThan(0);
      expect(woken(rule, text).length).toBeGreaterThan(0);
    },
  );

  it.each(cases)('$rule: finds none of the negative cases', ({ rule, negatives }) => {
    for (const n of negatives) expect(found(rule, `first line\n${n}\n`), n).toEqual([]);
  });

  it('has a case for every rule', () => {
    expect([...new Set(cases.map((c) => c.rule))].sort()).toEqual([...OWN_RULE_NAMES].sort());
  });

  it('finds where the credential starts, so its line can be named', () => {
    const text = `a\nb\nAPI_KEY = ${v('sk-compat')}\n`;
    const [at] = found('sk-api-key', text);
    expect(text.slice(0, at).split('\n').length).toBe(3);
  });
});
