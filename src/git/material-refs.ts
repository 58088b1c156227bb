// The layout of verification material in git (docs/formats.md "Material in git"): one ref per key,
//   refs/genjob/keys/<key> → a parentless commit (fixed author, committer and date 0, so the same
//   material is the same commit on every machine) whose tree is job.json, receipt.json, out/<path>...
// One ref per key means two machines pushing different keys never touch the same ref, and a ref once
// created is never moved by genjob (a push that would move it is a conflict, never a force).
export const KEY_REFS = 'refs/genjob/keys/';
/** Where `genjob pull` mirrors the remote's key refs for the merge gate (outside refs/genjob/). */
export const PULLED_REFS = 'refs/genjob-pulled/keys/';

/**
 * The kinds of material pull mirrors, one namespace each: refs/genjob/<kind>/* on the remote into
 * refs/genjob-pulled/<kind>/* here (forced and pruned: a copy of the remote, never pushed back).
 */
export const PULLED_KINDS: readonly string[] = ['keys', 'checks'];

export function pulledRefspec(kind: string): string {
  return `+refs/genjob/${kind}/*:${pulledRefs(kind)}*`;
}

/** The namespace pull mirrors the remote's refs/genjob/<kind>/ into. */
export function pulledRefs(kind: string): string {
  return `refs/genjob-pulled/${kind}/`;
}

export const JOB_ENTRY = 'job.json';
export const RECEIPT_ENTRY = 'receipt.json';
export const OUT_DIR = 'out/';

export const MATERIAL_IDENT = 'genjob <genjob@localhost> 0 +0000';

const KEY = /^[0-9a-f]{64}$/;

export function keyRef(key: string): string {
  return `${KEY_REFS}${key}`;
}

/** The key a ref under `prefix` names, or null when the rest of its name is not exactly one key. */
export function keyOfRef(ref: string, prefix: string): string | null {
  if (!ref.startsWith(prefix)) return null;
  const rest = ref.slice(prefix.length);
  return KEY.test(rest) ? rest : null;
}

/** The subject of a material commit: names the key and the receipt's digest, so a cheap for-each-ref can tell what a ref holds. */
export function materialSubject(key: string, receiptSha256: string): string {
  return `genjob ${key} receipt sha256:${receiptSha256}`;
}
