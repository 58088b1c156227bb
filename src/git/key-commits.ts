// Which jobs already have their generated commit: the commits on HEAD's history whose Genjob-Key trailer
// names them, unless a newer one (nearer HEAD) reverted them (a Genjob-Revert trailer, `revert --commit`).
// `apply --commit` of an applied key commits it only when none does; `revert` says when the generated commit
// stays. git's --grep narrows the walk to messages mentioning a trailer; the trailers are then read the way
// the gate reads them. --topo-order puts every commit before its parents, so the first mention is the newest.
import { git } from './run-git.js';
import { KEY_TRAILER, REVERT_TRAILER } from './trailers.js';

export interface KeyCommit {
  commit: string;
  /** `generated`: carries Genjob-Key; `revert`: carries Genjob-Revert. */
  kind: 'generated' | 'revert';
}

const FORMAT = [
  '%H',
  `%(trailers:key=${KEY_TRAILER},valueonly,separator=%x01)`,
  `%(trailers:key=${REVERT_TRAILER},valueonly,separator=%x01)`,
].join('%x1f');

/** key → the newest commit on HEAD's history that generated or reverted it, for the keys in `wanted`. */
export async function newestKeyCommits(
  root: string,
  wanted: ReadonlySet<string>,
): Promise<Map<string, KeyCommit>> {
  const found = new Map<string, KeyCommit>();
  if (wanted.size === 0) return found;
  // an unborn branch has no history (1); outside a repository (128) there is none either
  const head = await git(root, ['rev-parse', '-q', '--verify', 'HEAD^{commit}'], { okCodes: [1, 128] });
  if (head.code !== 0) return found;
  const one = wanted.size === 1 ? [...wanted][0] : '';
  const grep = `^(${KEY_TRAILER}|${REVERT_TRAILER}): ${one}`;
  const log = await git(root, [
    'log',
    '-z',
    '-E',
    '--topo-order',
    `--grep=${grep}`,
    `--format=${FORMAT}`,
    'HEAD',
    '--',
  ]);
  const values = (s: string | undefined) =>
    (s ?? '')
      .split('\x01')
      .map((v) => v.trim())
      .filter((v) => v !== '');
  for (const record of log.stdout.toString('utf8').split('\0')) {
    if (record.trim() === '') continue;
    const [commit, keys, reverts] = record.replace(/^\n/, '').split('\x1f');
    for (const key of values(reverts))
      if (wanted.has(key) && !found.has(key)) found.set(key, { commit: commit!, kind: 'revert' });
    for (const key of values(keys))
      if (wanted.has(key) && !found.has(key)) found.set(key, { commit: commit!, kind: 'generated' });
  }
  return found;
}

/** key → the newest commit on HEAD's history carrying `Genjob-Key: key`, when no newer commit reverted it. */
export async function commitsCarryingKeys(
  root: string,
  wanted: ReadonlySet<string>,
): Promise<Map<string, string>> {
  const newest = await newestKeyCommits(root, wanted);
  return new Map(
    [...newest].flatMap(([key, c]) => (c.kind === 'generated' ? [[key, c.commit] as const] : [])),
  );
}
