// `verify/apply --require-sandbox` refuses a receipt whose generator ran unconfined: sandbox kind
// "none", or no sandbox field at all (a receipt made before the field existed). bwrap and builtin pass.
import { describe, expect, it } from 'vitest';
import { RejectedError } from '../../src/core/errors.js';
import type { Receipt } from '../../src/core/receipt.js';
import { requireSandbox } from '../../src/verify/require-sandbox.js';

const receipt = (sandbox: Receipt['sandbox']) => ({ sandbox }) as Receipt;

function refusal(r: Receipt): RejectedError {
  try {
    requireSandbox(r, '.gen/receipts/abc.json');
  } catch (err) {
    expect(err).toBeInstanceOf(RejectedError);
    return err as RejectedError;
  }
  throw new Error('the receipt passed');
}

describe('requireSandbox', () => {
  it('passes a receipt whose generator ran under bubblewrap, with or without network', () => {
    expect(() => requireSandbox(receipt({ kind: 'bwrap', network: false }), 'r.json')).not.toThrow();
    expect(() => requireSandbox(receipt({ kind: 'bwrap', network: true }), 'r.json')).not.toThrow();
  });

  it('passes a builtin receipt (no generator code ran)', () => {
    expect(() => requireSandbox(receipt({ kind: 'builtin', network: true }), 'r.json')).not.toThrow();
  });

  it('refuses a --no-sandbox receipt with EGJ_UNCONFINED (exit 3), naming the file', () => {
    const err = refusal(receipt({ kind: 'none', network: true }));
    expect(err.code).toBe('EGJ_UNCONFINED');
    expect(err.exitCode).toBe(3);
    expect(err.file).toBe('.gen/receipts/abc.json');
    expect(err.message).toBe(
      '.gen/receipts/abc.json: the generator ran unconfined (sandbox kind is "none"); --require-sandbox refuses it',
    );
  });

  it('refuses a receipt that does not say how its generator ran', () => {
    const err = refusal(receipt(undefined));
    expect(err.code).toBe('EGJ_UNCONFINED');
    expect(err.message).toBe(
      '.gen/receipts/abc.json: the generator ran unconfined (the receipt does not say how the generator ran); --require-sandbox refuses it',
    );
  });
});
