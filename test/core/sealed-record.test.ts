// A sealed record is followed only when its seal is the secret's, for its own domain and name, over
// exactly its contents.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sealRecord, unsealRecord } from '../../src/core/sealed-record.js';

const secret = randomBytes(32);
const record = { schema: 'x@1', key: 'k', generator: 'g', serve_args: ['--a'] };

describe('sealed records', () => {
  it('opens what it sealed, through a JSON round trip and with its keys in another order', () => {
    const sealed = JSON.parse(JSON.stringify(sealRecord(secret, 'd', 'k', record))) as Record<
      string,
      unknown
    >;
    expect(unsealRecord(secret, 'd', 'k', sealed)).toEqual(record);
    const reordered = Object.fromEntries(Object.entries(sealed).reverse());
    expect(unsealRecord(secret, 'd', 'k', reordered)).toEqual(record);
  });

  it('refuses a changed field, an added one, another name, domain or secret, no seal, and no secret', () => {
    const sealed = sealRecord(secret, 'd', 'k', record);
    expect(unsealRecord(secret, 'd', 'k', { ...sealed, generator: 'h' })).toBeUndefined();
    expect(
      unsealRecord(secret, 'd', 'k', { ...sealed, serve_args: ['--a', '--no-sandbox'] }),
    ).toBeUndefined();
    expect(unsealRecord(secret, 'd', 'k', { ...sealed, extra: 1 })).toBeUndefined();
    expect(unsealRecord(secret, 'd', 'k2', sealed)).toBeUndefined();
    expect(unsealRecord(secret, 'd2', 'k', sealed)).toBeUndefined();
    expect(unsealRecord(randomBytes(32), 'd', 'k', sealed)).toBeUndefined();
    expect(unsealRecord(secret, 'd', 'k', record)).toBeUndefined();
    expect(unsealRecord(secret, 'd', 'k', { ...record, seal: 1 })).toBeUndefined();
    expect(unsealRecord(null, 'd', 'k', sealed)).toBeUndefined();
    for (const v of [null, [], 'x', 3]) expect(unsealRecord(secret, 'd', 'k', v)).toBeUndefined();
  });
});
