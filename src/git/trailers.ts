// The commit message of a generated commit: the instruction's first line, a blank line, then one
// trailer block (git interpret-trailers conventions, so `git log --format=%(trailers)` reads it):
//   Genjob-Key: <key>
//   Genjob-Receipt: sha256:<sha256 of the receipt file's bytes>
//   Genjob-Signer: <name of the pinned key>          (only when the receipt verified against one)
//   Genjob-Check: <checker> sha256:<record digest>   (one per `apply --require-check` checker)
// `revert --commit` writes `Revert "<subject>"` with Genjob-Revert and Genjob-Revert-Receipt instead: the
// same key and receipt under other names, since the merge gate holds every Genjob-Key commit equal to
// its receipt's outputs, and a revert's changes are the opposite.
export const KEY_TRAILER = 'Genjob-Key';
export const RECEIPT_TRAILER = 'Genjob-Receipt';
export const SIGNER_TRAILER = 'Genjob-Signer';
export const CHECK_TRAILER = 'Genjob-Check';
export const REVERT_TRAILER = 'Genjob-Revert';
export const REVERT_RECEIPT_TRAILER = 'Genjob-Revert-Receipt';

const MAX_SUBJECT_CHARS = 200;

/** A generated commit's subject: the instruction's first line (or the key when that is empty). */
function subjectOf(instruction: string, key: string): string {
  const first = instruction.split('\n')[0]!.replace(/\r$/, '').trim().slice(0, MAX_SUBJECT_CHARS);
  return first === '' ? `genjob job ${key.slice(0, 12)}` : first;
}

export function commitMessage(
  instruction: string,
  key: string,
  receiptSha256: string,
  signer: string | null,
  checks: ReadonlyArray<{ name: string; digest: string }> = [],
): string {
  const subject = subjectOf(instruction, key);
  const trailers = [`${KEY_TRAILER}: ${key}`, `${RECEIPT_TRAILER}: sha256:${receiptSha256}`];
  if (signer !== null) trailers.push(`${SIGNER_TRAILER}: ${signer}`);
  for (const c of checks) trailers.push(`${CHECK_TRAILER}: ${c.name} sha256:${c.digest}`);
  return `${subject}\n\n${trailers.join('\n')}\n`;
}

/** The message of a commit that reverts job `key` (and its generated commit, when there is one). */
export function revertMessage(
  instruction: string,
  key: string,
  receiptSha256: string,
  generatedCommit: string | undefined,
): string {
  const subject = subjectOf(instruction, key);
  const body = generatedCommit
    ? `This reverts commit ${generatedCommit}, the generated commit of genjob job ${key.slice(0, 12)}.`
    : `This reverts genjob job ${key.slice(0, 12)}, which was applied without a commit.`;
  const trailers = [`${REVERT_TRAILER}: ${key}`, `${REVERT_RECEIPT_TRAILER}: sha256:${receiptSha256}`];
  return `Revert "${subject}"\n\n${body}\n\n${trailers.join('\n')}\n`;
}

/** The `git log` format that prints a commit's id, parents and the three trailers' values, fields split by \x1f, values by \x01. */
export const TRAILER_FORMAT = [
  '%H',
  '%P',
  `%(trailers:key=${KEY_TRAILER},valueonly,separator=%x01)`,
  `%(trailers:key=${RECEIPT_TRAILER},valueonly,separator=%x01)`,
  `%(trailers:key=${SIGNER_TRAILER},valueonly,separator=%x01)`,
].join('%x1f');

export interface CommitTrailers {
  commit: string;
  parents: string[];
  keys: string[];
  receipts: string[];
  signers: string[];
}

/** Parse `git log -z --format=TRAILER_FORMAT` output. */
export function parseTrailerLog(out: string): CommitTrailers[] {
  const values = (s: string | undefined) =>
    (s ?? '')
      .split('\x01')
      .map((v) => v.trim())
      .filter((v) => v !== '');
  return out
    .split('\0')
    .filter((r) => r.trim() !== '')
    .map((record) => {
      const [commit, parents, keys, receipts, signers] = record.replace(/^\n/, '').split('\x1f');
      return {
        commit: commit!,
        parents: (parents ?? '').split(' ').filter(Boolean),
        keys: values(keys),
        receipts: values(receipts),
        signers: values(signers),
      };
    });
}
