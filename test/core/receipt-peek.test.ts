import { describe, expect, it } from 'vitest';
import { peekEpoch, peekTokens } from '../../src/core/receipt-peek.js';

const plain = Buffer.from(
  JSON.stringify({ epoch: 3, usage: { prompt_tokens: 10, completion_tokens: 5, requests: 1 } }),
);
const envelope = Buffer.from(
  JSON.stringify({
    payloadType: 'application/vnd.genjob.receipt+json',
    payload: plain.toString('base64'),
    signatures: [],
  }),
);

describe('receipt peeking', () => {
  it.each([
    { form: 'a plain receipt', bytes: plain },
    { form: 'a DSSE envelope', bytes: envelope },
  ])('reads the epoch and tokens of $form', ({ bytes }) => {
    expect(peekEpoch(bytes)).toBe(3);
    expect(peekTokens(bytes)).toBe(15);
  });

  it('counts no tokens for a receipt answered from the host cache', () => {
    const cached = Buffer.from(
      JSON.stringify({ epoch: 2, cached: true, usage: { prompt_tokens: 10, completion_tokens: 5 } }),
    );
    expect(peekTokens(cached)).toBe(0);
    expect(peekEpoch(cached)).toBe(2);
  });

  it.each([
    { form: 'garbage', bytes: Buffer.from('not json') },
    { form: 'a non-integer epoch', bytes: Buffer.from('{"epoch":1.5}') },
    { form: 'negative tokens', bytes: Buffer.from('{"usage":{"prompt_tokens":-5}}') },
  ])('reads $form as zero', ({ bytes }) => {
    expect(peekEpoch(bytes)).toBe(0);
    expect(peekTokens(bytes)).toBe(0);
  });
});
