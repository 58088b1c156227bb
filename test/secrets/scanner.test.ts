import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CARRY_BYTES,
  createSecretScanner,
  type ScanOptions,
  scanSecretText,
  TOO_MANY_CANDIDATES,
} from '../../src/secrets/scanner.js';
import { BLOCK_BYTES } from '../../src/secrets/text-sniff.js';
import { corpusValue as v } from './corpus-values.js';

const GH = 'secretlint github: GITHUB_TOKEN';
const PEM = 'secretlint privatekey: PrivateKey';

/** Scan `bytes` pushed in pieces of `chunk` bytes. */
async function scan(bytes: Buffer | string, chunk = 1 << 20, options: ScanOptions = {}) {
  const b = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  const s = createSecretScanner(options);
  for (let at = 0; at < b.length; at += chunk) s.push(b.subarray(at, at + chunk));
  return s.end();
}

const lines = (n: number, text = 'const a = 1; // ordinary code') => `${`${text}\n`.repeat(n)}`;

describe('createSecretScanner', () => {
  it("finds credentials by secretlint's rules and genjob's own, each at its line", async () => {
    const text = `a\n${v('ghp')}\nb\nAuthorization: Bearer ${v('jwt-hs256')}\n`;
    expect((await scan(text)).findings).toEqual([
      { line: 2, rule: GH },
      { line: 4, rule: 'jwt' },
    ]);
  });

  it("lists secretlint's finding first when both find one on a line", async () => {
    const text = `x\naws_secret_access_key = ${v('aws-secret')}\n`;
    expect((await scan(text)).findings.map((f) => f.rule)).toEqual([
      'secretlint aws: AWSSecretAccessKey',
      'aws-secret-key',
    ]);
  });

  it('finds a credential split across two chunks, at every cut', async () => {
    const text = `one\ntwo\nthree ${v('ghp')} four ${v('google-api')}\nfive\n`;
    for (let cut = 1; cut < text.length; cut++) {
      const s = createSecretScanner();
      s.push(Buffer.from(text.slice(0, cut)));
      s.push(Buffer.from(text.slice(cut)));
      expect((await s.end()).findings, `cut at ${cut}`).toEqual([
        { line: 3, rule: GH },
        { line: 3, rule: 'google-api-key' },
      ]);
    }
  });

  it('finds a PEM key whose BEGIN line ends one chunk and whose END line is in the next', async () => {
    const key = v('rsa-pkcs1');
    const text = `${lines(3000)}${key}${lines(10)}`;
    const begin = text.indexOf('-----BEGIN');
    for (const chunk of [begin + 40, begin + 400, begin + key.length - 30]) {
      // genjob's own private-key rule finds it too
      expect((await scan(text, chunk)).findings, `chunk ${chunk}`).toEqual([
        { line: 3001, rule: PEM },
        { line: 3001, rule: 'private-key' },
      ]);
    }
  });

  it('finds a credential read in many small chunks after the one with its keyword', async () => {
    const text = `${lines(20)}token = ${v('ghp')}\n${lines(5)}`;
    for (const chunk of [3, 5, 11])
      expect((await scan(text, chunk)).findings).toEqual([{ line: 21, rule: GH }]);
  });

  it('counts lines through many chunks of text and finds what follows the first 8,000 bytes', async () => {
    const text = `${lines(110_000)}token = ${v('ghp')}\n`;
    expect(text.length).toBeGreaterThan(3 * 1024 * 1024);
    for (const chunk of [4096, 64 * 1024, 1 << 20])
      expect((await scan(text, chunk)).findings).toEqual([{ line: 110_001, rule: GH }]);
  });

  it('keeps no more than its carry between chunks: a credential past the carry is found once, at its line', async () => {
    const text = `${v('ghp')}\n${'x'.repeat(CARRY_BYTES + 10)}\n${v('ghp')}\n`;
    expect((await scan(text, CARRY_BYTES)).findings).toEqual([
      { line: 1, rule: GH },
      { line: 3, rule: GH },
    ]);
  });

  it.each([
    { name: 'UTF-16LE with a BOM', bom: [0xff, 0xfe], swap: false },
    { name: 'UTF-16LE without a BOM', bom: [], swap: false },
    { name: 'UTF-16BE with a BOM', bom: [0xfe, 0xff], swap: true },
    { name: 'UTF-16BE without a BOM', bom: [], swap: true },
  ])('reads $name, cut at odd bytes too', async ({ bom, swap }) => {
    const body = Buffer.from(
      `{\r\n  "Token": "${v('ghp')}",\r\n  "Level": "Information"\r\n}\r\n`,
      'utf16le',
    );
    const bytes = Buffer.concat([Buffer.from(bom), swap ? body.swap16() : body]);
    for (const chunk of [7, 64, 1 << 20])
      expect((await scan(bytes, chunk)).findings).toEqual([{ line: 2, rule: GH }]);
  });

  it('reads on past a stray NUL, and past NUL padding at the start', async () => {
    for (const head of ['\0', '\0\0\0\0\n', 'session\0start\n']) {
      const r = await scan(`${head}token ${v('ghp')}\n`);
      expect(r.findings.map((f) => f.rule)).toEqual([GH]);
      expect(r.binary).toBe(false);
    }
  });

  it('skips random bytes as binary', async () => {
    const r = await scan(
      Buffer.concat([randomBytes(3 * BLOCK_BYTES), Buffer.from(`${v('ghp')}`)]).subarray(0, 3 * BLOCK_BYTES),
    );
    expect(r).toEqual({ findings: [], binary: true });
  });

  it('scans text after a binary block; names no line after a binary chunk it did not count', async () => {
    const bytes = Buffer.concat([randomBytes(BLOCK_BYTES), Buffer.from(`\n${lines(100)}key ${v('ghp')}\n`)]);
    expect(await scan(bytes, BLOCK_BYTES)).toEqual({ findings: [{ rule: GH }], binary: false });
    // in one chunk the newlines are all at hand: the line is exact
    let line = 1;
    for (const b of bytes.subarray(0, bytes.indexOf('key ghp_'))) if (b === 10) line++;
    expect(await scan(bytes)).toEqual({ findings: [{ line, rule: GH }], binary: false });
  });

  it('trusts the size it is told only for line numbers: a file that grew is still scanned', async () => {
    const first = Buffer.from(lines(10));
    const s = createSecretScanner({ size: first.length });
    s.push(first);
    s.push(Buffer.from(`more ${v('ghp')}\n`));
    expect((await s.end()).findings).toEqual([{ rule: GH }]);
  });

  it('copies what it keeps: the caller may overwrite its buffer after each push', async () => {
    const text = Buffer.from(`${lines(50)}${v('rsa-pkcs1')}${lines(50)}`);
    const buf = Buffer.alloc(1000);
    const s = createSecretScanner();
    for (let at = 0; at < text.length; at += buf.length) {
      const n = text.copy(buf, 0, at, at + buf.length);
      s.push(buf.subarray(0, n));
      buf.fill(0x41);
    }
    expect((await s.end()).findings).toEqual([
      { line: 51, rule: PEM },
      { line: 51, rule: 'private-key' },
    ]);
  });

  it('refuses a file with more flagged text than it will hold, when none of it is a credential', async () => {
    // placeholders pass the prefilter (keyword and gate) and are dropped by the rule
    const flagged = `${'ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n'.repeat(50)}`;
    const r = await scan(flagged.repeat(40), flagged.length, { maxPendingChars: 10 * flagged.length });
    expect(r.findings).toEqual([{ rule: TOO_MANY_CANDIDATES }]);
    // held: each chunk with the carry of the one before
    expect(
      (await scan(flagged.repeat(3), flagged.length, { maxPendingChars: 10 * flagged.length })).findings,
    ).toEqual([]);
  });

  it('never puts the matched text in a finding', async () => {
    const token = v('ghp');
    expect(JSON.stringify(await scan(`x ${token}`))).not.toContain(token.slice(4));
  });

  it('passes ordinary text and an empty file', async () => {
    expect(await scan(lines(1000))).toEqual({ findings: [], binary: false });
    expect(await scan('')).toEqual({ findings: [], binary: false });
  });
});

describe('scanSecretText', () => {
  it('scans a string (the instruction) as UTF-8', async () => {
    expect(await scanSecretText(`rotate the key\nold one: ${v('aws-key-id')}`)).toEqual([
      { line: 2, rule: 'secretlint aws: AWSAccessKeyID' },
    ]);
  });

  it('looks at a file name where a rule needs one', async () => {
    const sa = `{"private_key_id": "1", "private_key": "${v('pkcs8-json')}"}`;
    expect((await scanSecretText(sa, 'sa.json')).map((f) => f.rule)).toContain(
      'secretlint gcp: PrivateKeyJSON',
    );
    expect((await scanSecretText(sa, 'sa.txt')).map((f) => f.rule)).not.toContain(
      'secretlint gcp: PrivateKeyJSON',
    );
  });
});
