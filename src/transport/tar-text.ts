// The text inside a tar stream, decoded strictly: header fields, GNU long names and pax records are
// UTF-8 or the archive is refused (EGJ_ARCHIVE_CORRUPT), never replaced by U+FFFD, so the name we
// check is exactly the name the sender wrote. Pax records must chain their lengths through the body.
import { rejectArchive as reject } from './reject-archive.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** `b` as UTF-8, refusing invalid bytes; `what` names the field in the rejection. */
export function decodeUtf8(b: Uint8Array, what: string): string {
  try {
    return utf8.decode(b);
  } catch (err) {
    return reject('EGJ_ARCHIVE_CORRUPT', undefined, `${what} is not valid UTF-8`, err);
  }
}

/** The NUL-terminated text of a fixed header field, refusing invalid UTF-8. */
export function field(block: Buffer, start: number, end: number, what: string): string {
  const nul = block.indexOf(0, start);
  return decodeUtf8(block.subarray(start, nul >= 0 && nul < end ? nul : end), what);
}

/** Strict pax records: "<len> <key>=<value>\n", lengths chaining exactly through the body. */
export function paxRecords(body: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  let off = 0;
  while (off < body.length) {
    const sp = body.indexOf(0x20, off);
    const lenText = sp < 0 ? '' : body.toString('latin1', off, sp);
    if (!/^[1-9][0-9]{0,7}$/.test(lenText))
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'malformed pax record length');
    const end = off + Number(lenText);
    if (end > body.length || body[end - 1] !== 0x0a)
      reject('EGJ_ARCHIVE_CORRUPT', undefined, 'malformed pax record');
    const rec = decodeUtf8(body.subarray(sp + 1, end - 1), 'a pax record');
    const eq = rec.indexOf('=');
    if (eq <= 0) reject('EGJ_ARCHIVE_CORRUPT', undefined, 'pax record without key=value');
    const key = rec.slice(0, eq);
    if (out.has(key)) reject('EGJ_ARCHIVE_CORRUPT', undefined, `pax key ${JSON.stringify(key)} given twice`);
    out.set(key, rec.slice(eq + 1));
    off = end;
  }
  return out;
}
