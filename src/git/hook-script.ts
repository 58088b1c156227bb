// The hooks `genjob hook install` writes. Both run the merge gate with this very CLI (absolute paths:
// hooks are per clone, never committed). pre-push: pull the remote's material, then check the commits
// each pushed ref adds (a new branch: every commit not on the remote yet). pre-merge-commit: check the
// commits a merge brings in, HEAD..MERGE_HEAD, with the material already here.
export const HOOK_MARKER = '# genjob hook:';

export type HookName = 'pre-push' | 'pre-merge-commit';

function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export function hookScript(name: HookName, node: string, cli: string): string {
  const head = [
    '#!/bin/sh',
    `${HOOK_MARKER} ${name}, written by \`genjob hook install\`; \`genjob hook install --force\` rewrites it.`,
    '# Every commit with a Genjob-Key trailer must be exactly the outputs of a verified receipt.',
    `genjob() { ${shQuote(node)} ${shQuote(cli)} "$@"; }`,
  ];
  if (name === 'pre-merge-commit')
    return [...head, 'exec genjob verify --commits "HEAD..MERGE_HEAD"', ''].join('\n');
  return [
    ...head,
    'remote="$1"',
    'genjob pull "$remote" </dev/null || exit $?',
    'while read -r local_ref local_sha remote_ref remote_sha; do',
    '  case "$local_sha" in *[!0]*) ;; *) continue ;; esac   # a deletion',
    '  case "$remote_ref" in refs/genjob/*) continue ;; esac',
    '  case "$remote_sha" in',
    '    *[!0]*) range="$remote_sha..$local_sha" ;;',
    '    *) range="$local_sha --not --remotes=$remote" ;;',
    '  esac',
    '  genjob verify --commits "$range" </dev/null || exit $?',
    'done',
    '',
  ].join('\n');
}
