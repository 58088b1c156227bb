// HMAC-SHA256 under a secret, kept apart by a domain (what kind of thing is sealed) and a name (which
// one): the seal of the host's cache entries and of everything the user's genjob keeps where others
// can write (the report and setup caches, promotion pins, shadow run records).
import { createHmac, timingSafeEqual } from 'node:crypto';

/** HMAC-SHA256 (hex) under `secret` of `data` kept under `name`, in the kind `domain`. */
export function macOf(secret: Buffer, domain: string, name: string, data: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${domain}\0${name}\0`).update(data).digest('hex');
}

/** Whether `mac` is `data`'s under `name` in `domain` (compared in constant time). */
export function macHolds(
  secret: Buffer,
  domain: string,
  name: string,
  data: string | Uint8Array,
  mac: string,
): boolean {
  const want = Buffer.from(macOf(secret, domain, name, data), 'hex');
  const got = Buffer.from(mac.trim(), 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}
