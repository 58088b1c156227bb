// Promotion pins: followed only when this user's promote sealed them for their key, and of the shape a
// pin has; `work` without --generator checks a host with the generator of a queued job's followed pin.
import { randomBytes } from 'node:crypto';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildJob } from '../../src/core/job.js';
import { mintJob } from '../../src/store/mint-job.js';
import {
  anyPromotedGenerator,
  type Promotion,
  pinFile,
  readPromotion,
  writePromotion,
} from '../../src/store/promotion.js';
import { tempStore } from '../helpers/temp-store.js';

const pinOf = (key: string, generator: string): Promotion => ({
  schema: 'genjob/promotion@1',
  key,
  job_digest: 'd'.repeat(64),
  plane: 'shadow:b',
  generator,
  serve_args: ['--generator-bind', '/opt/tools'],
  shadow_receipt_sha256: 'e'.repeat(64),
  at: '2026-12-01T00:00:00.000Z',
});

describe('promotion pins', () => {
  it('reads back a sealed pin for its key only, and refuses one of another shape', () => {
    const store = tempStore('genjob-pin-');
    const secret = randomBytes(32);
    const [a, b] = ['a'.repeat(64), 'b'.repeat(64)];
    expect(readPromotion(store, a, secret)).toBeUndefined();
    writePromotion(store, secret, pinOf(a, 'gen-a'));
    expect(readPromotion(store, a, secret)).toEqual({ record: pinOf(a, 'gen-a') });
    expect(readPromotion(store, a, randomBytes(32))).toEqual({
      ignored: `${pinFile(store, a)}: the promotion pin is not sealed by this user's genjob (committed on a branch, copied from elsewhere, or made by an older genjob)`,
    });
    // moved to another key, seal and all, and with the key changed to match
    copyFileSync(pinFile(store, a), pinFile(store, b));
    expect(readPromotion(store, b, secret)).toEqual({
      ignored: expect.stringContaining('not sealed by this user'),
    });
    const moved = JSON.parse(readFileSync(pinFile(store, a), 'utf8')) as Record<string, unknown>;
    writeFileSync(pinFile(store, b), JSON.stringify({ ...moved, key: b }));
    expect(readPromotion(store, b, secret)).toEqual({
      ignored: expect.stringContaining('not sealed by this user'),
    });
    // sealed, but not a pin for its key or not a pin's shape
    for (const bad of [
      { ...pinOf(b, 'g'), key: a },
      { ...pinOf(b, 'g'), schema: 'genjob/promotion@2' },
      { ...pinOf(b, 'g'), generator: 7 },
      { ...pinOf(b, 'g'), shadow_receipt_sha256: null },
      { ...pinOf(b, 'g'), serve_args: '--no-sandbox' },
      { ...pinOf(b, 'g'), serve_args: [1] },
      { ...pinOf(b, 'g'), serve_args: ['--generator-bind', 1] }, // every flag a string, not some
    ]) {
      writePromotion(store, secret, { ...(bad as Promotion), key: b });
      // writePromotion names the file by the pin's own key: put the forged key back after sealing under b
      const sealed = JSON.parse(readFileSync(pinFile(store, b), 'utf8')) as Record<string, unknown>;
      writeFileSync(pinFile(store, b), JSON.stringify({ ...sealed, key: bad.key }));
      const read = readPromotion(store, b, secret);
      expect(read !== undefined && 'ignored' in read, JSON.stringify(bad)).toBe(true);
    }
  });

  it('names the generator of a queued job whose pin is followed, for the host check of work without --generator', () => {
    const store = tempStore('genjob-pin-');
    const secret = randomBytes(32);
    const queued = mintJob(store, buildJob('q', [{ path: 'f', sha256: null }])).key;
    expect(anyPromotedGenerator(store, secret)).toBeUndefined();
    writePromotion(store, secret, pinOf('c'.repeat(64), 'not-queued')); // its job is nowhere
    expect(anyPromotedGenerator(store, secret)).toBeUndefined();
    writeFileSync(pinFile(store, queued), JSON.stringify(pinOf(queued, 'unsealed')));
    expect(anyPromotedGenerator(store, secret)).toBeUndefined();
    writePromotion(store, secret, pinOf(queued, 'sealed-gen'));
    expect(anyPromotedGenerator(store, secret)).toBe('sealed-gen');
    expect(anyPromotedGenerator(store, randomBytes(32))).toBeUndefined();
    expect(anyPromotedGenerator(store, null)).toBeUndefined();
  });
});
