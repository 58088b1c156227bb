import { describe, expect, it } from 'vitest';
import {
  BINARY_SNIFF_BYTES,
  createSecretScanner,
  MAX_LINE_CHARS,
  SECRET_TEXT_RULES,
  scanSecretText,
  secretError,
  secretPathProblem,
} from '../../src/core/secrets.js';

// Fake credentials are assembled at run time so this file holds no string a scanner would flag.
const rep = (s: string, n: number) => s.repeat(n);
const FAKE = {
  // a BEGIN line counts only with a key body after it
  pem: '-----BEGIN ' + 'RSA PRIVATE KEY-----\n' + rep('MIIBOgIBAAJBAKj34GkxFhD9', 3),
  openssh: '-----BEGIN ' + 'OPENSSH PRIVATE KEY-----\n' + rep('b3BlbnNzaC1rZXktdjEAAAAA', 3),
  pgp: '-----BEGIN ' + 'PGP PRIVATE KEY BLOCK-----\n\n' + rep('lQOYBF0000000000000000', 3),
  aws: 'AKIA' + 'Q3EGRTX5ZWUV7PLM',
  awsSession: 'ASIA' + 'Q3EGRTX5ZWUV7PLM',
  ghp: 'ghp_' + rep('a1B2', 9),
  ghs: 'ghs_' + rep('Zx9y', 9),
  ghPat: 'github_pat_' + rep('A1', 11) + '_' + rep('b2C', 19) + 'dE',
  glpat: 'glpat-' + rep('x7Y_', 5),
  slack: 'xoxb-' + '123456789012-' + '1234567890123-' + rep('aB3d', 6),
  openai: 'sk-proj-' + rep('Ab3_', 10) + 'T3Blbk' + 'FJ' + rep('cD4-', 10),
  anthropic: 'sk-ant-' + 'api03-' + rep('Qw3-Er5_', 12),
  bareSk: 'sk-' + rep('a9B8c7D6', 6),
  google: 'AIza' + rep('Sy1_', 8) + 'abc',
  stripe: 'sk_' + 'live_' + rep('4eC39HqLyjWDarjtT1zdp7dc', 1),
  npm: 'npm_' + rep('a1b2C3', 6),
  hf: 'hf_' + rep('abcDEFghij', 3) + 'kLmN',
};

describe('secretPathProblem', () => {
  const cases: Array<{ path: string; refused: boolean; rule?: string }> = [
    { path: '.env', refused: true, rule: 'env-file' },
    { path: 'app/.env.production', refused: true, rule: 'env-file' },
    { path: '.env.local', refused: true, rule: 'env-file' },
    { path: '.env.example', refused: false },
    { path: 'config/.env.sample', refused: false },
    { path: '.env.template', refused: false },
    { path: 'src/env.ts', refused: false },
    { path: '.environment', refused: false },
    { path: 'certs/server.pem', refused: true, rule: 'key-file' },
    { path: 'tls/server.KEY', refused: true, rule: 'key-file' },
    { path: 'client.p12', refused: true, rule: 'key-file' },
    { path: 'client.pfx', refused: true, rule: 'key-file' },
    { path: 'android/release.keystore', refused: true, rule: 'key-file' },
    { path: 'src/keyboard.ts', refused: false },
    { path: 'docs/monkey.md', refused: false },
    { path: 'id_rsa', refused: true, rule: 'ssh-private-key' },
    { path: 'deploy/id_ed25519', refused: true, rule: 'ssh-private-key' },
    { path: 'id_ecdsa_sk', refused: true, rule: 'ssh-private-key' },
    { path: 'deploy/id_ed25519.pub', refused: false },
    { path: 'src/id_utils.ts', refused: false },
    { path: 'home/.ssh/config', refused: true, rule: 'credential-dir' },
    { path: '.ssh/authorized_keys', refused: true, rule: 'credential-dir' },
    { path: '.gnupg/secring.gpg', refused: true, rule: 'credential-dir' },
    { path: '.ssh/deploy.pub', refused: false },
    { path: 'docs/ssh/config', refused: false },
    { path: '.npmrc', refused: true, rule: 'credential-file' },
    { path: 'pkg/.pypirc', refused: true, rule: 'credential-file' },
    { path: '.netrc', refused: true, rule: 'credential-file' },
    { path: '.git-credentials', refused: true, rule: 'credential-file' },
    { path: 'npmrc.md', refused: false },
    { path: '.aws/credentials', refused: true, rule: 'cloud-credentials' },
    { path: 'home/.docker/config.json', refused: true, rule: 'cloud-credentials' },
    { path: 'credentials.json', refused: true, rule: 'cloud-credentials' },
    { path: '.kube/config', refused: true, rule: 'cloud-credentials' },
    { path: 'aws/credentials.md', refused: false },
    { path: 'docker/config.json', refused: false },
    { path: 'src/credentials.ts', refused: false },
  ];
  it.each(cases)('$path → refused: $refused', ({ path, refused, rule }) => {
    const problem = secretPathProblem(path);
    expect(problem !== null).toBe(refused);
    if (rule !== undefined) expect(problem).toContain(`rule ${rule}`);
  });
});

describe('scanSecretText rules', () => {
  const cases: Array<{ rule: string; positive: string; negative: string }> = [
    { rule: 'private-key', positive: FAKE.pem, negative: '-----BEGIN PUBLIC KEY-----' },
    { rule: 'private-key', positive: FAKE.openssh, negative: 'the PRIVATE KEY header is checked' },
    { rule: 'private-key', positive: FAKE.pgp, negative: '-----BEGIN CERTIFICATE-----' },
    { rule: 'aws-access-key-id', positive: `key = ${FAKE.aws}`, negative: 'key = AKIAIOSFODNN7' + 'EXAMPLE' },
    { rule: 'aws-access-key-id', positive: FAKE.awsSession, negative: 'AKIA' + 'q3egrtx5zwuv7plm' },
    { rule: 'github-token', positive: `token: ${FAKE.ghp}`, negative: 'ghp_' + rep('a', 20) },
    { rule: 'github-token', positive: FAKE.ghs, negative: 'ghx_' + rep('a1B2', 9) },
    { rule: 'github-token', positive: FAKE.ghPat, negative: 'github_pat_tokens are documented here' },
    { rule: 'gitlab-token', positive: FAKE.glpat, negative: 'glpat-short' },
    { rule: 'slack-token', positive: FAKE.slack, negative: 'xoxb-not-a-token' },
    {
      rule: 'openai-api-key',
      positive: `OPENAI_API_KEY=${FAKE.openai}`,
      negative: 'sk-proj-' + rep('Ab3_', 10),
    },
    { rule: 'anthropic-api-key', positive: FAKE.anthropic, negative: 'sk-ant-api03-short' },
    { rule: 'api-secret-key', positive: FAKE.bareSk, negative: 'sk-' + rep('abcdefgh', 6) },
    {
      rule: 'api-secret-key',
      positive: `"${FAKE.bareSk}"`,
      negative: 'class="sk-fading-circle-with-a-long-name-here"',
    },
    { rule: 'google-api-key', positive: FAKE.google, negative: 'AIza' + rep('Sy1_', 4) },
    {
      rule: 'stripe-live-key',
      positive: FAKE.stripe,
      negative: 'sk_' + 'test_' + '4eC39HqLyjWDarjtT1zdp7dc',
    },
    {
      rule: 'npm-token',
      positive: `//registry.npmjs.org/:_authToken=${FAKE.npm}`,
      negative: 'npm_config_cache=/tmp',
    },
    { rule: 'huggingface-token', positive: FAKE.hf, negative: 'hf_hub_download(repo_id)' },
  ];

  it.each(cases)('$rule: finds the positive case', ({ rule, positive }) => {
    expect(scanSecretText(`first line\n${positive}\n`)).toEqual([{ line: 2, rule }]);
  });

  it.each(cases)('$rule: ignores the negative case', ({ negative }) => {
    expect(scanSecretText(`first line\n${negative}\n`)).toEqual([]);
  });

  it('has a positive and a negative case for every rule', () => {
    expect([...new Set(cases.map((c) => c.rule))].sort()).toEqual([...SECRET_TEXT_RULES].sort());
  });

  it('reports each rule once per line but every line it occurs on', () => {
    const text = `${FAKE.aws} ${FAKE.aws}\nclean\n${FAKE.aws}`;
    expect(scanSecretText(text)).toEqual([
      { line: 1, rule: 'aws-access-key-id' },
      { line: 3, rule: 'aws-access-key-id' },
    ]);
  });

  it('never includes the matched text in a finding or in the error', () => {
    const [finding] = scanSecretText(FAKE.ghp);
    expect(JSON.stringify(finding)).not.toContain(FAKE.ghp);
    const err = secretError('src/a.ts', finding!.rule, finding!.line);
    expect(err.code).toBe('EGJ_SECRET');
    expect(err.exitCode).toBe(2);
    expect(err.message).toContain('src/a.ts:1');
    expect(err.message).toContain('--allow-secret src/a.ts');
    expect(err.message).not.toContain(FAKE.ghp);
  });
});

describe('createSecretScanner', () => {
  it('finds a secret split across chunks at the right line number', () => {
    const text = `one\ntwo\nthree ${FAKE.ghp} four\nfive\n`;
    for (let cut = 1; cut < text.length; cut++) {
      const s = createSecretScanner();
      s.push(text.slice(0, cut));
      s.push(text.slice(cut));
      expect(s.end().findings).toEqual([{ line: 3, rule: 'github-token' }]);
    }
  });

  it('counts the lines of chunks with no rule anchor (skipped whole) and keeps a BEGIN line open across them', () => {
    const clean = Array.from({ length: 100 }, (_, i) => `clean line ${i}`).join('\n');
    for (const chunk of [1, 7, 64, 4096]) {
      const s = createSecretScanner();
      const text = `${clean}\n${FAKE.npm}\n${clean}\n${FAKE.pem}\n`;
      for (let i = 0; i < text.length; i += chunk) s.push(text.slice(i, i + chunk));
      const pemLine = 101 + 100 + 1;
      expect(s.end().findings).toEqual([
        { line: 101, rule: 'npm-token' },
        { line: pemLine, rule: 'private-key' },
      ]);
    }
  });

  it('decodes UTF-8 split inside a multi-byte character and still counts lines', () => {
    const bytes = Buffer.from(`é\nü ${FAKE.aws}\n`, 'utf8');
    const s = createSecretScanner();
    for (const b of bytes) s.push(Uint8Array.of(b));
    expect(s.end()).toEqual({ findings: [{ line: 2, rule: 'aws-access-key-id' }], binary: false });
  });

  it('finds a secret on a last line with no newline', () => {
    const s = createSecretScanner();
    s.push(`a\n${FAKE.npm}`);
    expect(s.end().findings).toEqual([{ line: 2, rule: 'npm-token' }]);
  });

  it('skips content with a NUL in its first bytes as binary', () => {
    const s = createSecretScanner();
    s.push(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0x0a]));
    s.push(Buffer.from(`${FAKE.pem}\n`));
    expect(s.end()).toEqual({ findings: [], binary: true });
  });

  it('treats a NUL past the sniff window as text and keeps scanning', () => {
    const s = createSecretScanner();
    s.push(Buffer.from(`${'x'.repeat(BINARY_SNIFF_BYTES)}\n\0\n${FAKE.pem}\n`));
    expect(s.end()).toEqual({ findings: [{ line: 3, rule: 'private-key' }], binary: false });
  });

  it('scans a line far longer than its window, including a secret straddling two windows', () => {
    const s = createSecretScanner();
    const filler = 'y '.repeat(MAX_LINE_CHARS);
    const chunk = 4096;
    const text = `${filler.slice(0, MAX_LINE_CHARS - 10)}${FAKE.ghp} ${filler}\nnext`;
    for (let i = 0; i < text.length; i += chunk) s.push(text.slice(i, i + chunk));
    expect(s.end().findings).toEqual([{ line: 1, rule: 'github-token' }]);
  });
});
