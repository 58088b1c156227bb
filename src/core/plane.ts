// The plane a receipt belongs to: "live" (may be verified and applied) or "shadow:NAME" (a trial run
// of another generator that must never reach the tree). The plane is a receipt field, so it sits
// inside what is hashed and signed; a receipt without the field predates planes and is live.
import { ShadowPlaneError } from './errors.js';
import { peekReceipt } from './receipt-peek.js';

export const LIVE_PLANE = 'live';
export const SHADOW_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
export const PLANE = /^(live|shadow:[a-z0-9][a-z0-9._-]{0,63})$/;

/** The plane of a decoded receipt (absent = live). */
export function planeOf(receipt: { plane?: string | undefined }): string {
  return receipt.plane ?? LIVE_PLANE;
}

/** The plane a receipt file names, read without trusting it; null when unreadable. */
export function peekPlane(bytes: Uint8Array): string | null {
  return payloadPlane(peekReceipt(bytes).payload);
}

/** The plane an untrusted payload (peekReceipt's) names; null when there is none to read. */
export function payloadPlane(payload: Record<string, unknown> | null): string | null {
  try {
    return payload === null ? null : payload.plane === undefined ? LIVE_PLANE : String(payload.plane);
  } catch {
    return null;
  }
}

/** Refuse anything that is not of the live plane (verify, apply, a live worker's commit). */
export function refuseShadow(plane: string | null, file: string): void {
  if (plane !== null && plane !== LIVE_PLANE) throw new ShadowPlaneError(file, plane);
}
