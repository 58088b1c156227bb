// The plane rules: which names a shadow plane may have, which plane a receipt file names before it is
// trusted, and the refusal verify and apply give anything that is not live.
import { describe, expect, it } from 'vitest';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { ShadowPlaneError } from '../../src/core/errors.js';
import { LIVE_PLANE, PLANE, peekPlane, planeOf, refuseShadow, SHADOW_NAME } from '../../src/core/plane.js';

const FILE = '.gen/results/k/receipt.json';
const longest = `a${'b'.repeat(63)}`; // 64 characters, the limit

const goodNames = ['a', '0', 'z9', longest, 'gpt-5.mini_v2', '9lives', 'a.', 'a-', 'a_'];
const badNames = [
  '', // at least one character
  `${longest}c`, // 65 characters
  '.hidden', // must start with a letter or digit
  '-x',
  '_x',
  'Upper',
  'aB',
  'a/b', // never a path
  'a b',
  'x\n', // no trailing newline slips past the end anchor
  'ok!',
  'é',
];

describe('shadow plane names', () => {
  it.each(goodNames)('accepts %j', (name) => {
    expect(SHADOW_NAME.test(name)).toBe(true);
    expect(PLANE.test(`shadow:${name}`)).toBe(true);
  });

  it.each(badNames)('refuses %j', (name) => {
    expect(SHADOW_NAME.test(name)).toBe(false);
    expect(PLANE.test(`shadow:${name}`)).toBe(false);
  });

  it('refuses a bad name after a good prefix and a good name after a bad prefix (both ends anchored)', () => {
    expect(SHADOW_NAME.test('ok/..')).toBe(false);
    expect(SHADOW_NAME.test('../ok')).toBe(false);
    expect(SHADOW_NAME.test('X.ok')).toBe(false);
  });
});

describe('the plane field', () => {
  it.each(['live', 'shadow:a', `shadow:${longest}`])('accepts %j', (plane) => {
    expect(PLANE.test(plane)).toBe(true);
  });

  it.each([
    '',
    'Live',
    'live ',
    ' live',
    'livex',
    'xlive',
    'shadow:',
    'shadow',
    'shadow:A',
    'shadowx',
    'xshadow:a',
    'shadow:a/b',
    'live\n',
    'shadow:a\n',
  ])('refuses %j', (plane) => {
    expect(PLANE.test(plane)).toBe(false);
  });

  it('reads a receipt without the field as live: it was made before planes existed', () => {
    expect(LIVE_PLANE).toBe('live');
    expect(planeOf({})).toBe('live');
    expect(planeOf({ plane: undefined })).toBe('live');
    expect(planeOf({ plane: 'shadow:b' })).toBe('shadow:b');
  });
});

describe('peekPlane (reads the plane without trusting the file)', () => {
  const envelope = (payload: object) =>
    canonicalBytes({
      payload: canonicalBytes(payload).toString('base64'),
      payloadType: 'application/vnd.genjob.receipt+json',
      signatures: [],
    });

  it('names the plane of a plain receipt and of a receipt inside an envelope', () => {
    expect(peekPlane(canonicalBytes({ epoch: 1, plane: 'shadow:trial' }))).toBe('shadow:trial');
    expect(peekPlane(envelope({ epoch: 1, plane: 'shadow:trial' }))).toBe('shadow:trial');
  });

  it('calls a receipt without the field live', () => {
    expect(peekPlane(canonicalBytes({ epoch: 1 }))).toBe('live');
    expect(peekPlane(envelope({ epoch: 1 }))).toBe('live');
  });

  it('gives the field as text even when it is not a string, so refuseShadow still refuses it', () => {
    expect(peekPlane(canonicalBytes({ plane: 7 }))).toBe('7');
    expect(peekPlane(canonicalBytes({ plane: null }))).toBe('null');
  });

  it('gives null for a file that is not JSON, or whose envelope payload is not JSON', () => {
    expect(peekPlane(Buffer.from('{"plane":'))).toBeNull();
    expect(
      peekPlane(canonicalBytes({ payload: Buffer.from('nope').toString('base64'), payloadType: 'x' })),
    ).toBeNull();
  });
});

describe('refuseShadow', () => {
  it('lets the live plane and an unreadable plane through (decoding refuses the unreadable file next)', () => {
    expect(() => refuseShadow('live', FILE)).not.toThrow();
    expect(() => refuseShadow(null, FILE)).not.toThrow();
  });

  it('refuses a shadow plane with EGJ_SHADOW (exit 3), naming the file and the plane', () => {
    let caught: unknown;
    try {
      refuseShadow('shadow:trial', FILE);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ShadowPlaneError);
    const err = caught as ShadowPlaneError;
    expect(err.code).toBe('EGJ_SHADOW');
    expect(err.exitCode).toBe(3);
    expect(err.message).toBe(
      `${FILE}: receipt is of plane "shadow:trial"; shadow results are never verified or applied (make one live with genjob promote)`,
    );
  });

  it('refuses any plane that is not exactly live', () => {
    for (const plane of ['', 'Live', 'live ', '7']) {
      expect(() => refuseShadow(plane, FILE)).toThrow(ShadowPlaneError);
    }
  });
});
