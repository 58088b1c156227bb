// entryHeader fills the common ustar block by hand; it must be byte for byte what node-tar's Header
// writes for every name and size, plain or not (long, non-ASCII, control characters, huge sizes).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryHeader, nodeTarHeader } from '../../src/transport/tar-header.js';

const sizes = fc.oneof(
  fc.integer({ min: 0, max: 4096 }),
  fc.integer({ min: 0, max: 0o77777777777 }),
  fc.constantFrom(0, 1, 511, 512, 0o7777777777, 0o77777777777, 0o77777777777 + 1, 2 ** 40),
);
const names = fc.oneof(
  fc.stringMatching(/^files\/[a-z0-9._/-]{1,120}$/),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 140 }),
  fc.string({ minLength: 1, maxLength: 110 }),
  fc.constantFrom(
    'a',
    `files/${'x'.repeat(93)}`,
    `files/${'x'.repeat(94)}`,
    `${'y'.repeat(99)}`,
    `${'y'.repeat(100)}`,
  ),
);

describe('entryHeader', () => {
  it('writes the same bytes as node-tar for any name and size', () => {
    fc.assert(
      fc.property(names, sizes, (name, size) => {
        expect(entryHeader(name, size).equals(nodeTarHeader(name, size))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});
