// Bytes as text, or not text: a file with a NUL byte or invalid UTF-8 is binary, shown as such (a diff
// summarises it, the review page does not draw it); anything else is decoded whole, a leading byte-order
// mark kept (a file that gains or loses one changed, and the mark is one of the hidden characters).

const utf8KeepingBom = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The bytes as text, every character kept (a leading BOM too); undefined for a binary file (a NUL, or not UTF-8). */
export function utf8Text(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try {
    return utf8KeepingBom.decode(bytes);
  } catch {
    return undefined;
  }
}
