// Which jobs already have their generated commit: the commits on HEAD's history whose Genjob-Key trailer
// names them. `apply --commit` of an applied key commits it only when none does. git's --grep narrows
// the walk to messages mentioning the trailer; the trailer itself is then read the way the gate reads it.
import { git } from './run-git.js';
import { KEY_TRAILER, parseTrailerLog, TRAILER_FORMAT } from './trailers.js';

/** key → the newest commit on HEAD's history carrying `Genjob-Key: key`, for the keys in `wanted`. */
export async function commitsCarryingKeys(
  root: string,
  wanted: ReadonlySet<string>,
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (wanted.size === 0) return found;
  const head = await git(root, ['rev-parse', '-q', '--verify', 'HEAD^{commit}'], { okCodes: [1] });
  if (head.code !== 0) return found; // an unborn branch has no history
  const grep = wanted.size === 1 ? `^${KEY_TRAILER}: ${[...wanted][0]}` : `^${KEY_TRAILER}: `;
  const log = await git(root, ['log', '-z', `--grep=${grep}`, `--format=${TRAILER_FORMAT}`, 'HEAD', '--']);
  for (const c of parseTrailerLog(log.stdout.toString('utf8')))
    for (const key of c.keys) if (wanted.has(key) && !found.has(key)) found.set(key, c.commit);
  return found;
}
