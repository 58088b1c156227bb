// The hooks `genjob hook install` writes. Both run the merge gate with this very CLI (absolute paths:
// hooks are per clone, never committed). pre-push: pull the remote's material, then check the commits
// each pushed ref adds (a new branch: every commit not on the remote's branches, as `git ls-remote` lists
// them, under the policy of where it leaves their history). pre-merge-commit: check the commits a merge
// brings in, under HEAD's policy; git runs it only when it makes a merge commit, never on a fast-forward
// (so `hook install` sets merge.ff=false with it).
// The last line is the sha256 of every byte above it: a hook is genjob's, to rewrite, only while its
// bytes are exactly what genjob wrote; a hand-merged check breaks the sum and is never lost silently.
import { sha256Hex } from '../core/sha256.js';
import { shellQuote } from '../core/shell-quote.js';

export const HOOK_MARKER = '# genjob hook:';
const SUM_LINE = /\n# genjob hook sha256:([0-9a-f]{64})\n$/;

export type HookName = 'pre-push' | 'pre-merge-commit';

function body(name: HookName, node: string, cli: string): string {
  const head = [
    '#!/bin/sh',
    `${HOOK_MARKER} ${name}, written by \`genjob hook install\`; edited, it is yours (install again with --force to replace it).`,
    '# Every commit with a Genjob-Key trailer must be exactly the outputs of a verified receipt.',
    `genjob() { ${shellQuote(node)} ${shellQuote(cli)} "$@"; }`,
  ];
  if (name === 'pre-merge-commit')
    return [
      ...head,
      '# git names the commits being merged in GITHEAD_<id> variables (MERGE_HEAD is written only after this hook)',
      "heads=$(env | sed -n 's/^GITHEAD_\\([0-9a-f]\\{40,64\\}\\)=.*/\\1/p' | tr '\\n' ' ')",
      '[ -n "$heads" ] || heads=$(git rev-parse -q --verify MERGE_HEAD) || {',
      "  echo 'genjob hook: cannot tell which commits this merge brings in; not merging (git merge --no-verify skips the gate)' >&2",
      '  exit 1',
      '}',
      'genjob verify --commits "$heads --not HEAD" --trust-ref HEAD',
      '',
    ].join('\n');
  return [
    ...head,
    'remote="$1"',
    'genjob pull "$remote" </dev/null || exit $?',
    'while read -r local_ref local_sha remote_ref remote_sha; do',
    '  case "$local_sha" in *[!0]*) ;; *) continue ;; esac   # a deletion',
    '  case "$remote_ref" in refs/genjob/*) continue ;; esac',
    '  case "$remote_sha" in',
    '    *[!0]*) set -- "$remote_sha..$local_sha" ;;',
    '    *) # a new branch: what the remote lacks, under the policy of where it leaves what the remote has.',
    '       # Asked of the remote itself: $remote may be a URL, or a name whose remote-tracking refs are missing.',
    '       # Only a remote with no branch at all leaves the branch its own policy.',
    '       heads=$(git ls-remote --heads "$remote" </dev/null) || exit $?',
    '       if [ -z "$heads" ]; then',
    '         set -- "$local_sha" --trust-ref "$local_sha"',
    '       else',
    "         theirs=$(printf '%s\\n' \"$heads\" | cut -f1 | tr '\\n' ' ')",
    '         base=$(git merge-base "$local_sha" $theirs 2>/dev/null) || {',
    '           echo "genjob hook: $local_ref shares no history here with what $remote has (git fetch $remote first; a branch unrelated to all of them is pushed unchecked only by git push --no-verify); not pushing" >&2',
    '           exit 1',
    '         }',
    '         set -- "$local_sha --not $theirs" --trust-ref "$base"',
    '       fi ;;',
    '  esac',
    '  genjob verify --commits "$@" </dev/null || exit $?',
    'done',
    '',
  ].join('\n');
}

export function hookScript(name: HookName, node: string, cli: string): string {
  const text = body(name, node, cli);
  return `${text}# genjob hook sha256:${sha256Hex(Buffer.from(text, 'utf8'))}\n`;
}

/** True when `text` is a hook exactly as genjob wrote it: its last line is the sha256 of the bytes above. */
export function isGenjobHook(text: string): boolean {
  const m = SUM_LINE.exec(text);
  return m !== null && sha256Hex(Buffer.from(text.slice(0, m.index + 1), 'utf8')) === m[1];
}
