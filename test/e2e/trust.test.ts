// Signed receipts end to end through the built CLI (local transport): keygen → trust add → a worker
// whose serve child signs (GENJOB_SIGN_KEY) → verify names the signer → apply. Then every way a
// receipt can fail the trust check — unsigned, signed by an impostor claiming the trusted key id,
// one payload byte changed, unsigned under --require-signature — is exit 3 with the repository untouched.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BIN,
  errorLine,
  genDir,
  gj,
  makeRepo,
  mintedKey,
  publicKeyOfFile,
  type Repo,
  readJournalFile,
  snapshot,
} from './trust-helpers.js';

const GENERATOR = `printf 'hello world\\n' > a.txt`;

/** A --launch command starting this build's serve with no signing key, its cache in the repository's. */
function unsignedServe(repo: Repo): string {
  return `env XDG_CACHE_HOME=${repo.cache} ${process.execPath} ${BIN} serve`;
}

async function keygen(repo: Repo, name: string): Promise<{ file: string; publicKey: string; keyid: string }> {
  const file = join(repo.outside, name);
  const r = await gj(repo, ['keygen', '--out', file]);
  expect(r.exitCode).toBe(0);
  const publicKey = String(r.stdout).split('\n')[0]!;
  expect(publicKey).toMatch(/^ed25519:[A-Za-z0-9+/]{43}=$/);
  expect(publicKeyOfFile(file).publicKey).toBe(publicKey);
  return { file, publicKey, keyid: publicKeyOfFile(file).keyid };
}

/** Mint one job on a.txt and run one worker; `signKey` is passed to the serve child through the environment. */
async function mintAndWork(repo: Repo, signKey?: string): Promise<string> {
  const key = mintedKey(await gj(repo, ['mint', '-m', 'say hello to the world', 'a.txt']));
  const w = await gj(
    repo,
    ['work', '--once', '--generator', GENERATOR],
    signKey ? { env: { GENJOB_SIGN_KEY: signKey } } : {},
  );
  expect(w.stderr).toContain('received ok');
  expect(w.exitCode).toBe(0);
  return key;
}

function receiptFile(repo: Repo, key: string): string {
  return join(repo.root, '.gen', 'receipts', `${key}.json`);
}

/** verify and apply both refuse with `code`, and neither changes one byte of the repository. */
async function expectRefused(repo: Repo, key: string, code: string, extra: string[] = []): Promise<void> {
  const before = snapshot(repo.root);
  const v = await gj(repo, ['verify', '--all', ...extra]);
  expect(v.exitCode).toBe(3);
  expect(errorLine(v)).toMatch(new RegExp(`^genjob: ${code}: .*receipts/${key}\\.json: `));
  expect(snapshot(repo.root)).toEqual(before);
  const a = await gj(repo, ['apply', key.slice(0, 12), ...extra]);
  expect(a.exitCode).toBe(3);
  expect(errorLine(a)).toMatch(new RegExp(`^genjob: ${code}: `));
  expect(snapshot(repo.root)).toEqual(before);
  expect(readFileSync(join(repo.root, 'a.txt'), 'utf8')).toBe('hello\n');
  expect(genDir(repo, 'applied')).toEqual([]);
}

describe('genjob keygen and trust', () => {
  it('makes the missing directories of --out (mode 0700), as for ~/.config/genjob/host.key on a fresh host', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const k = await keygen(repo, 'config/genjob/host.key');
    expect(statSync(join(repo.outside, 'config/genjob')).mode & 0o777).toBe(0o700);
    expect(statSync(k.file).mode & 0o777).toBe(0o600);
  });

  it('writes a 0600 key, prints its public key, and pins it in genjob-trust.json at the root', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const k = await keygen(repo, 'host.key');
    expect(statSync(k.file).mode & 0o777).toBe(0o600);

    const again = await gj(repo, ['keygen', '--out', k.file]);
    expect(again.exitCode).toBe(2);
    expect(errorLine(again)).toMatch(/^genjob: EGJ_KEY_EXISTS: .*host\.key: /);

    const empty = await gj(repo, ['trust', 'list']);
    expect(empty.exitCode).toBe(0);
    expect(empty.stdout).toContain('no trusted keys');

    const add = await gj(repo, ['trust', 'add', 'free-box', k.publicKey]);
    expect(add.exitCode).toBe(0);
    expect(add.stdout).toContain(`trusted free-box (keyid ${k.keyid}) in genjob-trust.json`);
    const file = JSON.parse(readFileSync(join(repo.root, 'genjob-trust.json'), 'utf8'));
    expect(file).toEqual({
      schema: 'genjob/trust@1',
      keys: [{ name: 'free-box', key: k.publicKey, added: expect.any(String) }],
    });

    const list = await gj(repo, ['trust', 'list']);
    expect(list.exitCode).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(`^free-box\\t${k.keyid}\\t${k.publicKey.replace(/[+/]/g, '\\$&')}\\tadded `),
    );
    const listJson = await gj(repo, ['trust', 'list', '--json']);
    expect(JSON.parse(String(listJson.stdout)).keys).toEqual([
      { name: 'free-box', key: k.publicKey, keyid: k.keyid, added: expect.any(String) },
    ]);

    const twice = await gj(repo, ['trust', 'add', 'free-box', k.publicKey]);
    expect(twice.exitCode).toBe(0);
    expect(twice.stdout).toContain('already trusted');
  });
});

describe('a worker whose serve signs its receipts', () => {
  it('stores a signed receipt that verify --all accepts, naming the signer, and apply writes', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const k = await keygen(repo, 'host.key');
    expect((await gj(repo, ['trust', 'add', 'free-box', k.publicKey])).exitCode).toBe(0);
    const key = await mintAndWork(repo, k.file);

    const envelope = JSON.parse(readFileSync(receiptFile(repo, key), 'utf8'));
    expect(envelope.payloadType).toBe('application/vnd.genjob.receipt+json');
    expect(envelope.signatures).toEqual([{ keyid: k.keyid, sig: expect.any(String) }]);

    const v = await gj(repo, ['verify', '--all']);
    expect(v.exitCode).toBe(0);
    expect(v.stdout).toBe(`${key.slice(0, 12)} ok: 1 output(s), epoch 1, signed by free-box`);
    const vj = await gj(repo, ['verify', '--all', '--json']);
    expect(vj.exitCode).toBe(0);
    expect(JSON.parse(String(vj.stdout))).toEqual({
      schema: 'genjob/result@1',
      ok: true,
      verified: [{ key, outputs: 1, signer: 'free-box', epoch: 1, state: 'received' }],
      failed: [],
    });

    const a = await gj(repo, ['apply', '--all']);
    expect(a.exitCode).toBe(0);
    expect(readFileSync(join(repo.root, 'a.txt'), 'utf8')).toBe('hello world\n');
  });

  it("journals what was shipped: the bundle's digest, its files, the destination and the time", async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const key = await mintAndWork(repo);
    const shipped = readJournalFile(repo).filter((e) => e.event === 'shipped');
    expect(shipped).toHaveLength(1);
    const e = shipped[0]!;
    expect(e).toMatchObject({ key, epoch: 1, destination: 'local', files: ['job.json', 'files/a.txt'] });
    expect(e.bundle_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(Number.isNaN(Date.parse(e.at))).toBe(false);
    expect(e).not.toHaveProperty('host_key_error');
  });

  it('claims nothing when GENJOB_SIGN_KEY names a key file others can read: the check before the claim refuses, exit 2', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const loose = join(repo.outside, 'loose.key');
    const k = await keygen(repo, 'host.key');
    writeFileSync(loose, readFileSync(k.file), { mode: 0o644 });
    const key = mintedKey(await gj(repo, ['mint', '-m', 'say hello to the world', 'a.txt']));
    const w = await gj(repo, ['work', '--once', '--generator', GENERATOR], {
      env: { GENJOB_SIGN_KEY: loose },
    });
    expect(w.exitCode).toBe(2);
    expect(w.stderr).toContain(
      `genjob: EGJ_KEY_MODE: ${loose}: private key is readable by group or others (mode 644)`,
    );
    expect(genDir(repo, 'receipts')).toEqual([]);
    expect(genDir(repo, 'received')).toEqual([]);
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
  });
});

describe('a receipt that fails the trust check', () => {
  it('unsigned, once a key is trusted: EGJ_SIGNATURE_MISSING, exit 3, nothing written', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const key = await mintAndWork(repo);
    const k = await keygen(repo, 'host.key');
    expect((await gj(repo, ['trust', 'add', 'free-box', k.publicKey])).exitCode).toBe(0);
    await expectRefused(repo, key, 'EGJ_SIGNATURE_MISSING');
  });

  it('signed by an untrusted key that claims the trusted key id: EGJ_SIGNATURE_INVALID, exit 3', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const trusted = await keygen(repo, 'trusted.key');
    const impostor = await keygen(repo, 'impostor.key');
    const key = await mintAndWork(repo, impostor.file);
    // the keyid is outside what is signed: claim the trusted one
    const file = receiptFile(repo, key);
    const envelope = JSON.parse(readFileSync(file, 'utf8'));
    expect(envelope.signatures[0].keyid).toBe(impostor.keyid);
    envelope.signatures[0].keyid = trusted.keyid;
    writeFileSync(file, JSON.stringify(envelope));
    expect((await gj(repo, ['trust', 'add', 'free-box', trusted.publicKey])).exitCode).toBe(0);
    await expectRefused(repo, key, 'EGJ_SIGNATURE_INVALID');
    const v = await gj(repo, ['verify', key]);
    expect(errorLine(v)).toContain(`claimed keyid ${trusted.keyid}`);
  });

  it('with one payload byte changed after signing: exit 3, nothing written', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const k = await keygen(repo, 'host.key');
    expect((await gj(repo, ['trust', 'add', 'free-box', k.publicKey])).exitCode).toBe(0);
    const key = await mintAndWork(repo, k.file);
    expect((await gj(repo, ['verify', key])).exitCode).toBe(0);

    const file = receiptFile(repo, key);
    const envelope = JSON.parse(readFileSync(file, 'utf8'));
    const payload = Buffer.from(envelope.payload, 'base64');
    const at = payload.indexOf('"generate_ms":') + '"generate_ms":'.length;
    payload[at] = payload[at] === 0x39 ? 0x38 : payload[at]! + 1; // one digit, still canonical JSON
    envelope.payload = payload.toString('base64');
    writeFileSync(file, JSON.stringify(envelope));
    await expectRefused(repo, key, 'EGJ_SIGNATURE_INVALID');
  });

  it('unsigned under --require-signature with no trusted key: EGJ_SIGNATURE_MISSING, exit 3', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const key = await mintAndWork(repo);
    await expectRefused(repo, key, 'EGJ_SIGNATURE_MISSING', ['--require-signature']);
    const v = await gj(repo, ['verify', '--all', '--json']);
    expect(v.exitCode).toBe(0);
    expect(JSON.parse(String(v.stdout)).verified[0].signer).toBeNull();
  });

  it('a worker that trusts a key and would start a local serve with none to sign with claims nothing: exit 2', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const k = await keygen(repo, 'host.key');
    expect((await gj(repo, ['trust', 'add', 'free-box', k.publicKey])).exitCode).toBe(0);
    const key = mintedKey(await gj(repo, ['mint', '-m', 'say hello to the world', 'a.txt']));
    const before = snapshot(join(repo.root, '.gen'));
    const w = await gj(repo, ['work', '--drain', '--generator', GENERATOR]);
    expect(w.exitCode).toBe(2);
    expect(errorLine(w)).toBe(
      `genjob: EGJ_UNSIGNED_HOST: ${join(repo.root, 'genjob-trust.json')} pins 1 key(s), so every receipt must be signed, and the local serve has no key to sign with: set GENJOB_SIGN_KEY=FILE for this work (FILE: the private key genjob keygen wrote for a pinned key), or serve.sign_key in ${join(repo.config, 'genjob', 'config.json')} (docs/trust.md); nothing was claimed`,
    );
    expect(snapshot(join(repo.root, '.gen'))).toEqual(before);
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
    // the user's config file names the key the local serve signs with: the job is received
    mkdirSync(join(repo.config, 'genjob'));
    writeFileSync(
      join(repo.config, 'genjob', 'config.json'),
      JSON.stringify({ serve: { sign_key: k.file } }),
    );
    const signed = await gj(repo, ['work', '--drain', '--generator', GENERATOR]);
    expect(signed.stderr).toContain('received ok');
    expect(signed.exitCode).toBe(0);
  });

  it('a worker that trusts a key refuses an unsigned answer: no receipt stored, the raw answer kept in dead/, exit 3', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const k = await keygen(repo, 'host.key');
    expect((await gj(repo, ['trust', 'add', 'free-box', k.publicKey])).exitCode).toBe(0);
    const key = mintedKey(await gj(repo, ['mint', '-m', 'say hello to the world', 'a.txt']));
    // a host whose key cannot be checked before the claim: its serve signs nothing
    const w = await gj(repo, ['work', '--once', '--generator', GENERATOR, '--launch', unsignedServe(repo)]);
    expect(w.exitCode).toBe(3);
    expect(w.stderr).toContain('back in the queue: receipt from launch:env XDG_CACHE_HOME=');
    expect(w.stderr).toContain(
      'receipt is not signed, but 1 key(s) are trusted (see genjob-trust.json); the host must sign its receipts: run its serve with --sign-key FILE or GENJOB_SIGN_KEY=FILE in its environment',
    );
    expect(genDir(repo, 'receipts')).toEqual([]);
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
    const why = genDir(repo, 'dead').filter(
      (n) => n.startsWith(`${key}.receipt.e1.`) && n.endsWith('.why.json'),
    );
    expect(why).toHaveLength(1);
    expect(JSON.parse(readFileSync(join(repo.root, '.gen', 'dead', why[0]!), 'utf8'))).toMatchObject({
      key,
      code: 'EGJ_SIGNATURE_MISSING',
      epoch: 1,
    });
    expect(genDir(repo, 'dead')).toContain(why[0]!.slice(0, -'.why.json'.length));
    expect(readFileSync(join(repo.root, 'a.txt'), 'utf8')).toBe('hello\n');
  });

  it('counts a job requeued and taken again once: "1 job(s) taken" after its attempts ran out', async () => {
    const repo = makeRepo({ 'a.txt': 'hello\n' });
    const k = await keygen(repo, 'host.key');
    expect((await gj(repo, ['trust', 'add', 'free-box', k.publicKey])).exitCode).toBe(0);
    const key = mintedKey(await gj(repo, ['mint', '-m', 'say hello to the world', 'a.txt']));
    const w = await gj(repo, ['work', '--drain', '--generator', GENERATOR, '--launch', unsignedServe(repo)]);
    expect(w.stderr).toContain(`${key.slice(0, 12)} dead-lettered: no usable answer after 3 attempts`);
    expect(String(w.stdout).split('\n')[0]).toBe('1 job(s) taken');
  });
});
