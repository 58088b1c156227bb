// Canonical JSON (RFC 8785 for the values genjob uses): keys sorted by UTF-16 code units,
// no insignificant whitespace. Keys, digests and signatures are computed over these bytes,
// so the same document always hashes the same whatever order its keys were written in. Plain data
// (what jobs, receipts and records are) is written by a direct walk; anything else (toJSON, a
// hole, a lone surrogate, a cycle) by the `canonicalize` package, which the walk matches byte for byte.
import canonicalize from 'canonicalize';

/** Thrown by the walk at a value it leaves to the package. */
const UNUSUAL = Symbol('unusual');
/** Deeper than this is left to the package (which names a cycle where the walk would overflow). */
const MAX_DEPTH = 512;
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * `text` as a canonical document can hold it: each lone UTF-16 surrogate (JSON's `"\ud800"`, or a pair a
 * length cap cut in two) as U+FFFD. For text from outside (a judge's answer, a file a branch commits)
 * that a record repeats: canonical JSON has no form for one.
 */
export function wellFormed(text: string): string {
  return text.replace(/\p{Cs}/gu, '\uFFFD');
}

function str(s: string): string {
  if (LONE_SURROGATE.test(s)) throw UNUSUAL;
  return JSON.stringify(s);
}

/** The package's output for plain data, without its per-character and per-node bookkeeping. */
function walk(v: unknown, depth: number): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return str(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(v)) throw UNUSUAL;
      return JSON.stringify(v);
    case 'object':
      break;
    default:
      throw UNUSUAL;
  }
  if (depth > MAX_DEPTH) throw UNUSUAL;
  const o = v as Record<string, unknown>;
  // without this line a toJSON still reaches the package: a class fails the prototype check below, and an
  // own toJSON is a function, which the walk refuses
  // Stryker disable next-line ConditionalExpression: see above
  if (typeof o.toJSON === 'function') throw UNUSUAL;
  if (Array.isArray(o)) {
    let out = '[';
    for (let i = 0; i < o.length; i++) {
      const x = o[i];
      // a hole or undefined: the package's own rules
      // Stryker disable next-line ConditionalExpression: without it walk(undefined) refuses it all the same
      if (x === undefined) throw UNUSUAL;
      out += i === 0 ? walk(x, depth + 1) : `,${walk(x, depth + 1)}`;
    }
    return `${out}]`;
  }
  const proto = Object.getPrototypeOf(o);
  if (proto !== Object.prototype && proto !== null) throw UNUSUAL;
  let out = '{';
  let first = true;
  for (const key of Object.keys(o).sort()) {
    const x = o[key];
    if (x === undefined) continue; // the package drops it too
    out += `${first ? '' : ','}${str(key)}:${walk(x, depth + 1)}`;
    first = false;
  }
  return `${out}}`;
}

export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = walk(value, 0);
  } catch (err) {
    // Stryker disable next-line ConditionalExpression: the walk throws nothing else (its depth is bounded)
    if (err !== UNUSUAL) throw err;
    text = canonicalize(value);
  }
  if (text === undefined) throw new TypeError('value has no JSON form');
  return text;
}

export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), 'utf8');
}

/** True when `bytes` are exactly the canonical form of what they parse to (refuses duplicate keys, reordering, odd numbers). */
export function isCanonical(bytes: Uint8Array, parsed: unknown): boolean {
  return Buffer.from(bytes).equals(canonicalBytes(parsed));
}
