// The user's seal on a gate record (src/run/gate-seal.ts): it holds for the record it was made for, under
// the user's secret, at that run and number, and for nothing else.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { macOf } from '../../src/core/mac.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { gateSealed, sealFile, sealGate } from '../../src/run/gate-seal.js';
import { tempStore } from '../helpers/temp-store.js';

const RUN = { id: 'r' };

function sealedRecord() {
  const store = tempStore('genjob-gate-seal-');
  const dir = join(store.layout.gen, 'runs', 'r.gates');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, '1.json');
  writeFileSync(file, '{"verdict":"met"}');
  const gate = { seq: 1, file, sha256: sha256Hex(readFileSync(file)) };
  const secret = randomBytes(32);
  sealGate(store, RUN, gate, secret);
  return { store, dir, gate, secret };
}

describe('the seal of a gate record', () => {
  it('lies beside the record as <n>.seal and holds for it under the secret that made it', () => {
    const { store, dir, gate, secret } = sealedRecord();
    expect(sealFile(gate)).toBe(join(dir, '1.seal'));
    // the format is kept from one genjob to the next: HMAC-SHA256 of the record's sha256, kind and name apart
    expect(readFileSync(join(dir, '1.seal'), 'utf8')).toBe(
      `${macOf(secret, 'genjob-gate-record-v1', 'r/1', gate.sha256)}\n`,
    );
    expect(sealFile({ file: '/a.json/runs/r.gates/1.json' })).toBe('/a.json/runs/r.gates/1.seal');
    expect(gateSealed(store, RUN, gate, secret)).toBe(true);
  });

  it.each([
    ['another secret (another user)', () => ({})],
    ['other record bytes', () => ({ sha256: 'e'.repeat(64) })],
    ['another number (the record and seal moved)', () => ({ seq: 2 })],
    ['another run', () => ({ run: { id: 's' } })],
  ])('does not hold for %s', (what, change) => {
    const { store, gate, secret } = sealedRecord();
    const c = change() as { sha256?: string; seq?: number; run?: { id: string } };
    const key = what.startsWith('another secret') ? randomBytes(32) : secret;
    expect(gateSealed(store, c.run ?? RUN, { ...gate, ...c }, key)).toBe(false);
  });

  it('is none when absent, not hex, too big, or not a file', () => {
    const { store, dir, gate, secret } = sealedRecord();
    const seal = join(dir, '1.seal');
    renameSync(seal, join(dir, 'kept'));
    expect(gateSealed(store, RUN, gate, secret)).toBe(false);
    writeFileSync(seal, 'not a seal\n');
    expect(gateSealed(store, RUN, gate, secret)).toBe(false);
    const real = readFileSync(join(dir, 'kept'));
    writeFileSync(seal, Buffer.concat([real, Buffer.alloc(2048, 0x20)]));
    expect(gateSealed(store, RUN, gate, secret)).toBe(false);
    writeFileSync(seal, real);
    expect(gateSealed(store, RUN, gate, secret)).toBe(true);
    renameSync(seal, join(dir, 'real'));
    mkdirSync(seal);
    expect(gateSealed(store, RUN, gate, secret)).toBe(false);
  });
});
