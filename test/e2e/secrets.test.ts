// Nothing secret leaves the machine, through the built CLI: mint refuses credential files by name,
// credentials in a file's text (naming the file and line) and in the instruction, with exit 2
// EGJ_SECRET and nothing written; --allow-secret PATH lets exactly that path through.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { traceOptions } from '../helpers/module-trace.js';
import { errorLine, genDir, gj, makeRepo, mintedKey, type Repo, snapshot } from './trust-helpers.js';

// Built at run time so this file itself holds no string a scanner would flag.
const AWS_KEY_ID = ['AKIA', 'Q3VJ7ZP2XK4M6TRB'].join(''); // AWS key ids are base32 (A-Z, 2-7)
const GITHUB_TOKEN = ['ghp', '_', 'a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'].join('');
const PEM_BEGIN = ['-----BEGIN', 'RSA PRIVATE', 'KEY-----'].join(' ');
const CERT = `-----BEGIN CERTIFICATE-----\n${'MIIFazCCA1OgAwIBAgIRAIIQz7DSQONZRGPgu2OCiwAw'.repeat(3)}\n-----END CERTIFICATE-----\n`;

let repo: Repo;

beforeEach(async () => {
  repo = makeRepo({
    '.env': 'DATABASE_PASSWORD=hunter2\n',
    '.env.example': 'DATABASE_PASSWORD=\n',
    'keys/id_rsa': 'not really a key\n',
    'certs/x.pem': 'not really a certificate\n',
    'certs/ca.pem': `${CERT}`,
    'certs/bundle.pem': `${CERT}${PEM_BEGIN}\n${'MIIEowIBAAKCAQEAq3'.repeat(4)}\n`,
    'src/config.ts': `export const region = 'eu-west-1';\n\nexport const keyId = '${AWS_KEY_ID}';\n`,
    'notes/deploy.md': `# deploy\n\nthe key:\n${PEM_BEGIN}\n${'MIIEowIBAAKCAQEAq3'.repeat(4)}\n`,
    'src/app.ts': 'export const app = 1;\n',
  });
  // create .gen/'s directories first, so a refused mint can be shown to change nothing at all
  expect((await gj(repo, ['init'])).exitCode).toBe(0);
});

const cases: Array<{ name: string; args: string[]; line: RegExp }> = [
  {
    name: 'a .env file',
    args: ['-m', 'x', 'src/app.ts', '.env'],
    line: /^genjob: EGJ_SECRET: \.env: looks like a secret \(.*rule env-file\)/,
  },
  {
    name: 'an id_rsa file',
    args: ['-m', 'x', 'keys/id_rsa'],
    line: /^genjob: EGJ_SECRET: keys\/id_rsa: looks like a secret \(.*rule ssh-private-key\)/,
  },
  {
    name: 'a .pem file',
    args: ['-m', 'x', 'certs/x.pem'],
    line: /^genjob: EGJ_SECRET: certs\/x\.pem: looks like a secret \(.*rule key-file\)/,
  },
  {
    name: 'a .pem that opens with a certificate but holds a private key after it (file and line)',
    args: ['-m', 'x', 'certs/bundle.pem'],
    line: /^genjob: EGJ_SECRET: certs\/bundle\.pem:4: looks like a secret \(private-key\)/,
  },
  {
    name: 'a file holding an AWS access key id (file and line)',
    args: ['-m', 'x', 'src/app.ts', 'src/config.ts'],
    line: /^genjob: EGJ_SECRET: src\/config\.ts:3: looks like a secret \(secretlint aws: AWSAccessKeyID\)/,
  },
  {
    name: 'a file holding a PRIVATE KEY block (file and line)',
    args: ['-m', 'x', 'notes/deploy.md'],
    line: /^genjob: EGJ_SECRET: notes\/deploy\.md:4: looks like a secret \(private-key\)/,
  },
  {
    name: 'an instruction holding a token',
    args: ['-m', `fix the login, the token is ${GITHUB_TOKEN}`, 'src/app.ts'],
    line: /^genjob: EGJ_SECRET: the instruction \(-m\):1: looks like a secret \(secretlint github: GITHUB_TOKEN\); .*Take it out of the instruction/,
  },
];

describe('genjob mint refuses to ship a secret', () => {
  for (const c of cases) {
    it(`refuses ${c.name}: exit 2, EGJ_SECRET naming where, nothing written`, async () => {
      const before = snapshot(repo.root);
      const r = await gj(repo, ['mint', ...c.args]);
      expect(r.exitCode).toBe(2);
      expect(errorLine(r)).toMatch(c.line);
      expect(r.stdout).toBe('');
      expect(snapshot(repo.root)).toEqual(before);
      expect(genDir(repo, 'queue')).toEqual([]);
    });
  }

  it('never prints the secret it found', async () => {
    const r = await gj(repo, ['mint', '-m', 'x', 'src/config.ts']);
    expect(r.exitCode).toBe(2);
    expect(`${r.stdout}${r.stderr}`).not.toContain(AWS_KEY_ID);
  });

  it("prints only its refusal when the user's DEBUG names every logger (the rule set's logger stays silent)", async () => {
    const r = await gj(repo, ['mint', '-m', 'x', 'src/config.ts'], { env: { DEBUG: '*' } });
    expect(r.exitCode).toBe(2);
    expect(String(r.stderr).trim().split('\n')).toHaveLength(1);
    expect(errorLine(r)).toMatch(/^genjob: EGJ_SECRET: src\/config\.ts:3:/);
  });

  it('names the instruction file and line for -f', async () => {
    const task = join(repo.outside, 'task.md');
    writeFileSync(task, `Rotate the key.\n\nOld one: ${AWS_KEY_ID}\n`);
    const r = await gj(repo, ['mint', '-f', task, 'src/app.ts']);
    expect(r.exitCode).toBe(2);
    expect(errorLine(r)).toMatch(
      new RegExp(
        `^genjob: EGJ_SECRET: ${task.replace(/[.]/g, '\\.')}:3: looks like a secret \\(secretlint aws: AWSAccessKeyID\\)`,
      ),
    );
    expect(genDir(repo, 'queue')).toEqual([]);
  });

  it('ships a public certificate named *.pem', async () => {
    const r = await gj(repo, ['mint', '-m', 'x', 'certs/ca.pem']);
    expect(r.exitCode).toBe(0);
    expect(genDir(repo, 'queue')).toEqual([`${mintedKey(r)}.json`]);
  });

  it('ships an .env template, which holds no secret by convention', async () => {
    const r = await gj(repo, ['mint', '-m', 'x', '.env.example']);
    expect(r.exitCode).toBe(0);
    expect(genDir(repo, 'queue')).toEqual([`${mintedKey(r)}.json`]);
  });
});

describe('loading secretlint', () => {
  // a trace that names every module of the bundle as it first runs
  const traced = async (args: string[]) => {
    const r = await gj(repo, args, { env: { NODE_OPTIONS: traceOptions() } });
    return { r, engine: String(r.stderr).includes('loaded src/secrets/preset-engine.ts') };
  };

  it("happens only when a file holds one of its rules' keywords: not for a clean mint, nor for status", async () => {
    const clean = await traced(['mint', '-m', 'x', 'src/app.ts']);
    expect(clean.r.exitCode).toBe(0);
    expect(String(clean.r.stderr)).toContain('loaded src/commands/mint.ts'); // the trace sees the modules
    expect(clean.engine).toBe(false);
    expect((await traced(['status'])).engine).toBe(false);
    const flagged = await traced(['mint', '-m', 'x', 'src/config.ts']);
    expect(flagged.r.exitCode).toBe(2);
    expect(flagged.engine).toBe(true);
  });
});

describe('genjob mint --allow-secret PATH', () => {
  it('lets exactly that path through', async () => {
    const r = await gj(repo, ['mint', '--allow-secret', '.env', '-m', 'x', 'src/app.ts', '.env']);
    expect(r.exitCode).toBe(0);
    const key = mintedKey(r);
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
    const job = JSON.parse(readFileSync(join(repo.root, '.gen', 'queue', `${key}.json`), 'utf8'));
    expect(job.inputs.map((i: { path: string }) => i.path).sort()).toEqual(['.env', 'src/app.ts']);
  });

  it('lets a file with a secret in its text through when named', async () => {
    const r = await gj(repo, ['mint', '--allow-secret', 'src/config.ts', '-m', 'x', 'src/config.ts']);
    expect(r.exitCode).toBe(0);
    expect(genDir(repo, 'queue')).toEqual([`${mintedKey(r)}.json`]);
  });

  it('does not let another secret path in the same mint through', async () => {
    const before = snapshot(repo.root);
    const r = await gj(repo, ['mint', '--allow-secret', '.env', '-m', 'x', '.env', 'keys/id_rsa']);
    expect(r.exitCode).toBe(2);
    expect(errorLine(r)).toMatch(/^genjob: EGJ_SECRET: keys\/id_rsa: looks like a secret /);
    expect(snapshot(repo.root)).toEqual(before);

    const content = await gj(repo, ['mint', '--allow-secret', '.env', '-m', 'x', '.env', 'src/config.ts']);
    expect(content.exitCode).toBe(2);
    expect(errorLine(content)).toMatch(/^genjob: EGJ_SECRET: src\/config\.ts:3: /);
    expect(snapshot(repo.root)).toEqual(before);
    expect(genDir(repo, 'queue')).toEqual([]);
  });

  it('cannot let a secret in the instruction through', async () => {
    const r = await gj(repo, [
      'mint',
      '--allow-secret',
      'src/app.ts',
      '-m',
      `use ${GITHUB_TOKEN}`,
      'src/app.ts',
    ]);
    expect(r.exitCode).toBe(2);
    expect(errorLine(r)).toMatch(/^genjob: EGJ_SECRET: the instruction \(-m\):1: /);
    expect(genDir(repo, 'queue')).toEqual([]);
  });
});
