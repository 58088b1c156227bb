// The decoder module is imported inside the test rather than at the top of the file: if building its
// strict UTF-8 decoder threw when the module loads (say, an encoding label it does not know), a static
// import would fail the whole file before any test exists, and a test runner may count that as no test.
import { describe, expect, it } from 'vitest';

describe('the receipt decoder module', () => {
  it('loads, and its decoder reads UTF-8 strictly: a BOM or an invalid byte is refused, not repaired', async () => {
    const { decodeSignedReceipt, NO_TRUST } = await import('../../src/core/receipt-envelope.js');
    const refusal = (bytes: Buffer) => {
      try {
        decodeSignedReceipt(bytes, 'r.json', NO_TRUST);
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(refusal(Buffer.from('\ufeff{}'))).toMatch(/^r\.json: receipt is not JSON \(/);
    expect(refusal(Buffer.from([0x22, 0xff, 0x22]))).toBe(
      'r.json: receipt is not JSON (The encoded data was not valid for encoding utf-8)',
    );
    expect(refusal(Buffer.from('{}'))).toMatch(/^r\.json: receipt breaks its schema at schema: /);
  });
});
