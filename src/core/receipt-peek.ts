// Read fields of a receipt WITHOUT trusting it: its epoch, to order two receipts for the same
// key on the worker (the newer epoch stands), and its token usage, for a worker's budget.
// Verify still checks everything. Handles plain receipts and DSSE envelopes; unreadable → 0.
/** A parsed receipt file as its receipt document plus, for a DSSE envelope, the envelope's own fields. Throws on bad JSON. */
export function splitEnvelope(doc: Record<string, unknown>): {
  payload: Record<string, unknown>;
  envelope: { payloadType: string; signatures: unknown } | null;
} {
  if (typeof doc.payload === 'string' && typeof doc.payloadType === 'string') {
    return {
      payload: JSON.parse(Buffer.from(doc.payload, 'base64').toString('utf8')) as Record<string, unknown>,
      envelope: { payloadType: doc.payloadType, signatures: doc.signatures },
    };
  }
  return { payload: doc, envelope: null };
}

function peekPayload(bytes: Uint8Array): Record<string, unknown> {
  // a view on the same memory, not a copy
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  return splitEnvelope(JSON.parse(text) as Record<string, unknown>).payload;
}

/** A receipt file's bytes with its payload parsed untrusted, once for every peek: null when it does not parse. */
export interface PeekedReceipt {
  bytes: Uint8Array;
  payload: Record<string, unknown> | null;
}

export function peekReceipt(bytes: Uint8Array): PeekedReceipt {
  try {
    return { bytes, payload: peekPayload(bytes) ?? null };
  } catch {
    return { bytes, payload: null };
  }
}

export function peekEpoch(bytes: Uint8Array): number {
  try {
    const { epoch } = peekPayload(bytes);
    return Number.isSafeInteger(epoch) ? (epoch as number) : 0;
  } catch {
    return 0;
  }
}

/** Tokens this delivery spent: a receipt answered from the host's cache spent none just now. */
export function peekTokens(bytes: Uint8Array): number {
  try {
    const payload = peekPayload(bytes);
    if (payload.cached === true) return 0;
    const usage = payload.usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | undefined;
    const n = (v: unknown) => (Number.isSafeInteger(v) && (v as number) > 0 ? (v as number) : 0);
    return n(usage?.prompt_tokens) + n(usage?.completion_tokens);
  } catch {
    return 0;
  }
}
