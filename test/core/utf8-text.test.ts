// Text or binary, as a diff and the review page decide it: NUL bytes and invalid UTF-8 are binary; text
// is decoded whole, a leading byte-order mark kept.
import { describe, expect, it } from 'vitest';
import { utf8Text } from '../../src/core/utf8-text.js';

describe('utf8Text', () => {
  it('decodes UTF-8 text, a leading byte-order mark kept', () => {
    expect(utf8Text(Buffer.from('héllo ✓\n'))).toBe('héllo ✓\n');
    expect(utf8Text(Buffer.from('\ufeffx\n'))).toBe('\ufeffx\n');
  });

  it('says a NUL byte or invalid UTF-8 is no text', () => {
    expect(utf8Text(Buffer.from([0x61, 0]))).toBeUndefined();
    expect(utf8Text(Buffer.from([0xff]))).toBeUndefined();
    expect(utf8Text(Buffer.from([0xe9, 0x0a]))).toBeUndefined();
  });
});
