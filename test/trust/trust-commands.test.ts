import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runKeygen } from '../../src/commands/keygen.js';
import { runTrustAdd, runTrustList, runTrustRemove } from '../../src/commands/trust.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'genjob-trustcmd-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('keygen and trust commands', () => {
  it('prints the public key as the first line of keygen, and that line is accepted by trust add', async () => {
    const out = join(dir, 'host.key');
    const gen = await runKeygen({ out, json: false });
    const firstLine = gen.human.split('\n')[0]!;
    expect(firstLine).toMatch(/^ed25519:/);
    expect(gen.human).toContain(`keyid ${gen.json.keyid}`);
    expect(gen.json).toEqual({ ok: true, publicKey: firstLine, keyid: gen.json.keyid, privateKeyFile: out });
    expect(statSync(out).mode & 0o777).toBe(0o600);

    const add = await runTrustAdd(dir, 'free-box', firstLine);
    expect(add).toMatchObject({
      exitCode: 0,
      json: { added: true, name: 'free-box', keyid: gen.json.keyid },
    });
    expect((await runTrustAdd(dir, 'free-box', firstLine)).human).toContain('already trusted');

    const list = await runTrustList(dir);
    expect(list.human).toBe(
      `free-box\t${gen.json.keyid}\t${firstLine}\tadded ${(list.json.keys as Array<{ added: string }>)[0]!.added}\n`,
    );

    const rm = await runTrustRemove(dir, 'free-box');
    expect(rm.json).toEqual({ removed: 'free-box', key: firstLine, keyid: gen.json.keyid });
    expect((await runTrustList(dir)).json).toEqual({ keys: [] });
  });

  it('says plainly when no key is trusted', async () => {
    expect((await runTrustList(dir)).human).toContain('no trusted keys');
  });
});
