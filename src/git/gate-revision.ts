// The revisions the merge gate is given (both ends of its range, --trust-ref), pinned to commit ids before
// git reads them, so that the branch under review cannot choose what they mean. Git looks a short name
// up as refs/NAME, refs/tags/NAME, refs/heads/NAME, refs/remotes/NAME, refs/remotes/NAME/HEAD, in that
// order, the first that exists winning (refs.c), and a short hex string as a ref before an object id. A
// clone fetches tags, so a tag named `origin/main` pushed with the branch would win over
// refs/remotes/origin/main and make the branch its own base. A name that more than one ref (or a ref and
// an abbreviated object id) could mean is refused, as is a REMOTE/BRANCH name that resolves to something
// other than the remote's branch (that branch was not fetched, and another ref stands in its place).
// HEAD, full ref names (refs/…) and full object ids mean one thing each; ~N and ^N suffixes apply to
// the pinned commit.
import { readFileSync } from 'node:fs';
import { UsageError } from '../core/errors.js';
import { git, gitText } from './run-git.js';

/** Git's lookups of a short name, after NAME itself (a file in the git directory), in its order. */
const DWIM_RULES = ['refs/%s', 'refs/tags/%s', 'refs/heads/%s', 'refs/remotes/%s', 'refs/remotes/%s/HEAD'];

/** `rev` as its name and what follows it (~N, ^N, ^{…}, ^!, ^@); refuses the forms the gate does not take. */
export function splitRevision(rev: string, what: string): { name: string; suffix: string } {
  const i = rev.search(/[~^:]|@\{/);
  const name = i < 0 ? rev : rev.slice(0, i);
  const suffix = i < 0 ? '' : rev.slice(i);
  if (suffix.startsWith(':') || suffix.startsWith('@{'))
    throw new UsageError(
      'EGJ_USAGE',
      `${what}: ${JSON.stringify(rev)}: give a ref name, HEAD or a commit id, optionally followed by ~N or ^N (not @{…} or :… forms)`,
    );
  return { name, suffix };
}

const noCommit = (what: string, rev: string) =>
  new UsageError('EGJ_USAGE', `${what}: ${JSON.stringify(rev)} names no commit`);

/** The commit `rev` names (git's reading of it), or null. */
async function commitId(root: string, rev: string): Promise<string | null> {
  const r = await git(root, ['rev-parse', '-q', '--verify', '--end-of-options', `${rev}^{commit}`], {
    okCodes: [1, 128],
  });
  const oid = r.stdout.toString('utf8').trim();
  return r.code === 0 && oid !== '' ? oid : null;
}

/** The refs among `full` that exist, in the order given. */
async function existingRefs(root: string, full: readonly string[]): Promise<string[]> {
  const r = await git(root, ['for-each-ref', '--format=%(refname)', ...full]);
  const have = new Set(r.stdout.toString('utf8').split('\n'));
  return full.filter((f) => have.has(f));
}

/** True when the git directory holds a ref file NAME (FETCH_HEAD, ORIG_HEAD…), which git tries first. */
async function rootRef(root: string, name: string): Promise<boolean> {
  if (name.includes('/') || name.startsWith('-') || name.startsWith('.')) return false;
  const path = await gitText(root, ['rev-parse', '--path-format=absolute', '--git-path', name]);
  try {
    return /^(?:[0-9a-f]{40}|[0-9a-f]{64}|ref: refs\/)/.test(readFileSync(path, 'utf8'));
  } catch {
    return false;
  }
}

function ambiguous(what: string, name: string, meanings: readonly string[]): UsageError {
  return new UsageError(
    'EGJ_USAGE',
    `${what}: ${JSON.stringify(name)} is ambiguous here: it could mean ${meanings.join(' or ')}; write the one you mean in full (refs/…), or give a full commit id`,
  );
}

/** The commit the name part of a revision stands for, refusing a name that could stand for more than one. */
async function nameCommit(root: string, name: string, rev: string, what: string): Promise<string> {
  // a character no ref name holds: nothing to look up (and no glob for for-each-ref)
  if (name === '' || /[\0- \x7f*?[\\]/.test(name)) throw noCommit(what, rev);
  if (name === 'HEAD' || name === '@') return (await commitId(root, 'HEAD')) ?? throwIt(noCommit(what, rev));
  // a full object id is one (git reads it so before any ref of that name): nothing to look up, which
  // keeps a pre-push hook's `--not <id>…` of every branch of the remote cheap
  if ((name.length === 40 || name.length === 64) && /^[0-9a-f]+$/.test(name))
    if (name.length === ((await objectFormat(root)) === 'sha256' ? 64 : 40)) return name;
  if (name.startsWith('refs/')) {
    // only that ref: where it is missing, git would go on to refs/tags/refs/… and the like
    if ((await existingRefs(root, [name])).length === 0) throw noCommit(what, rev);
    return (await commitId(root, name)) ?? throwIt(noCommit(what, rev));
  }
  const refs = await existingRefs(
    root,
    DWIM_RULES.map((r) => r.replace('%s', name)),
  );
  const meanings = [...refs];
  if (/^[0-9a-f]{4,}$/.test(name)) {
    const objects = await git(root, ['rev-parse', `--disambiguate=${name}`], { okCodes: [128] });
    if (objects.stdout.toString('utf8').trim() !== '') meanings.push(`the object id starting with ${name}`);
  }
  if (await rootRef(root, name)) meanings.unshift(`${name} (in the git directory)`);
  if (meanings.length > 1) throw ambiguous(what, name, meanings);
  const commit = (await commitId(root, name)) ?? throwIt(noCommit(what, rev));
  const only = refs[0];
  // git's reading must be that ref's (a file in the git directory it reads first is no other meaning)
  if (only !== undefined && (await commitId(root, only)) !== commit)
    throw ambiguous(what, name, [`${name} (in the git directory)`, only]);
  if (only !== undefined && !only.startsWith('refs/remotes/')) {
    // REMOTE/BRANCH (or REMOTE) standing for a tag or a branch: the remote's own ref is missing here
    const remotes = (await gitText(root, ['remote'])).split('\n').filter((r) => r !== '');
    const remote = remotes.find((r) => name === r || name.startsWith(`${r}/`));
    if (remote !== undefined)
      throw new UsageError(
        'EGJ_USAGE',
        `${what}: ${JSON.stringify(name)} means ${only} here, not a branch of the remote ${remote} (refs/remotes/${name === remote ? `${name}/HEAD` : name} is missing: fetch it); write the one you mean in full (refs/…), or give a full commit id`,
      );
  }
  return commit;
}

const formats = new Map<string, Promise<string>>();

/** The hash the repository names its objects by (sha1, sha256), asked of git once per root. */
function objectFormat(root: string): Promise<string> {
  let f = formats.get(root);
  if (f === undefined) {
    f = gitText(root, ['rev-parse', '--show-object-format']);
    formats.set(root, f);
  }
  return f;
}

function throwIt(err: Error): never {
  throw err;
}

/**
 * `rev` with its name pinned to the commit id it stands for (`<id>~2` for `origin/main~2`), for git to
 * read with nothing left to look up. EGJ_USAGE when the name is ambiguous or names no commit (a full
 * object id is kept as it is: whoever reads the result finds out whether it is a commit).
 */
export async function pinRevision(root: string, rev: string, what: string): Promise<string> {
  const { name, suffix } = splitRevision(rev, what);
  return `${await nameCommit(root, name, rev, what)}${suffix}`;
}

/**
 * The rev-list arguments of a range (validated by the caller) with every revision pinned: each side of
 * A..B and A...B (an empty side stays empty: HEAD), ^A, A; options (--not, --remotes=…) kept.
 */
export async function pinRangeArgs(root: string, args: readonly string[]): Promise<string[]> {
  const pinned: string[] = [];
  for (const a of args) {
    if (a.startsWith('-')) {
      pinned.push(a);
      continue;
    }
    const sep = a.includes('...') ? '...' : a.includes('..') ? '..' : null;
    if (sep !== null) {
      const i = a.indexOf(sep);
      const side = async (s: string) => (s === '' ? '' : await pinRevision(root, s, '--commits'));
      pinned.push(`${await side(a.slice(0, i))}${sep}${await side(a.slice(i + sep.length))}`);
    } else if (a.startsWith('^')) pinned.push(`^${await pinRevision(root, a.slice(1), '--commits')}`);
    else pinned.push(await pinRevision(root, a, '--commits'));
  }
  return pinned;
}
