import { describe, expect, it } from 'vitest';
import { SECRET_HEAD_BYTES, secretPathProblem } from '../../src/secrets/path-rules.js';

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

describe('secretPathProblem, cleared by the first bytes', () => {
  const head = (s: string | Buffer) => () => Buffer.from(s).subarray(0, SECRET_HEAD_BYTES);
  const cases: Array<{ name: string; path: string; first: string | Buffer; refused: boolean }> = [
    {
      name: 'a certificate in a .pem',
      path: 'certs/ca.pem',
      first: '-----BEGIN CERTIFICATE-----\nMIIF',
      refused: false,
    },
    {
      name: 'a public key in a .pem',
      path: 'keys/pub.pem',
      first: '-----BEGIN PUBLIC KEY-----\nMII',
      refused: false,
    },
    {
      name: 'a CSR in a .pem',
      path: 'csr.pem',
      first: '\n-----BEGIN CERTIFICATE REQUEST-----',
      refused: false,
    },
    {
      name: 'a private key in a .pem',
      path: 'certs/server.pem',
      first: '-----BEGIN PRIVATE KEY-----\nMII',
      refused: true,
    },
    {
      name: 'EC parameters then a key',
      path: 'ec.pem',
      first: '-----BEGIN EC PRIVATE KEY-----',
      refused: true,
    },
    {
      name: 'text before the first BEGIN',
      path: 'bundle.pem',
      first: 'Bag Attributes\n-----BEGIN CERTIFICATE-----',
      refused: true,
    },
    {
      name: 'a certificate named .key',
      path: 'tls/server.key',
      first: '-----BEGIN CERTIFICATE-----',
      refused: true,
    },
    {
      name: 'a Keynote document (zip) named .key',
      path: 'slides/q3.key',
      first: Buffer.from([0x50, 0x4b, 3, 4, 20]),
      refused: false,
    },
    { name: 'a .pem with no file yet (--create)', path: 'new.pem', first: '', refused: true },
  ];
  it.each(cases)('$name ($path) → refused: $refused', ({ path, first, refused }) => {
    const problem = secretPathProblem(path, first === '' ? () => undefined : head(first));
    expect(problem !== null).toBe(refused);
  });
});
