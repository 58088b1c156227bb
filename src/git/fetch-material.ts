// Fetch a remote's refs/genjob/<kind>/* into refs/genjob-pulled/<kind>/* for `genjob pull`, trusting none
// of what it sends. git checks every object (fetch.fsckObjects, above any config file) and keeps them in
// one pack (never loose objects, whose number nothing bounds); no file a fetch writes may pass what is
// left of --max-bytes (RLIMIT_FSIZE); every git command the pull runs is killed, with all it started, when
// --timeout has passed since the pull began. git moves no ref unless the pack arrived whole and passed its
// checks; what a refused or stopped fetch left in objects/pack/ is removed.
//
// One malformed object must not stop every pull (anyone who can push one ref to the shared remote would
// stop every gate), so a fetch of every ref that git's checks refuse is narrowed down: the refs the remote
// lists are fetched by halves, each half with the same checks, again and again, into a quarantine (a bare
// repository in the git directory, borrowing this one's objects); a single ref still refused is skipped
// with git's words as its rule. b bad refs among n cost at most 2b fetches per halving, so O(b log n)
// fetches, all under the one --timeout and the one --max-bytes of the pull. Once narrowed, one local
// fetch from the quarantine, with the same checks and --prune, sets this repository's refs exactly as a
// clean fetch of the good refs would (a skipped ref is pruned: no object of it is kept); a pull stopped
// before then leaves them as they were, and the quarantine goes either way.
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GitFailedError, GitTimedOutError, IoError, RejectedError } from '../core/errors.js';
import { readdirOrEmpty } from '../store/durable.js';
import { nodeFs } from '../store/fs-port.js';
import { pidAlive } from '../store/process-identity.js';
import { PULLED_KINDS, PULLED_REFS, pulledRefs, pulledRefspec } from './material-refs.js';
import { listKeyRefs, type PulledRef } from './read-material.js';
import { git, gitText } from './run-git.js';

/** How long one pull may take in all, and the most its fetches may write in all (their packs). */
export interface FetchBounds {
  timeoutMs: number;
  maxBytes: number;
}

/** A remote ref pull did not mirror: named as the remote names it, with the rule it broke. */
export interface SkippedRef {
  ref: string;
  rule: string;
}

export interface Fetched {
  /** The key refs mirrored (refs/genjob-pulled/keys/*). */
  refs: PulledRef[];
  /** The remote's refs git's checks refused, each by itself; none of their objects was kept. */
  skipped: SkippedRef[];
}

/** git's words when its strict checks (fetch.fsckObjects) refused an object of the pack (index-pack). */
const FSCK_REFUSED = /fsck error in pack(?:ed)? objects?|^error: object [0-9a-f]+: \w+:/m;
/** The line of them that names the object and the check it failed. */
const FSCK_OBJECT = /^error: object [0-9a-f]+: \w+:.*$/m;
/** A ref the remote listed and no longer has (deleted between the listing and its fetch). */
const REF_GONE = /couldn't find remote ref/;
/** A process killed for writing past RLIMIT_FSIZE (SIGXFSZ is 25 on Linux), or the shell's words for it. */
const FILE_TOO_LARGE = /died of signal 25\b|File size limit exceeded/;
/**
 * As `git -c` gives them (above any config file): strict object checks, and every object in one pack
 * (git 2.39 already indexes a pack it checks instead of unpacking it into loose objects, whose number no
 * file-size bound limits; unpackLimit=1 says so rather than rely on it).
 */
const STRICT_FETCH = {
  GIT_CONFIG_COUNT: '2',
  GIT_CONFIG_KEY_0: 'fetch.fsckObjects',
  GIT_CONFIG_VALUE_0: 'true',
  GIT_CONFIG_KEY_1: 'transfer.unpackLimit',
  GIT_CONFIG_VALUE_1: '1',
};
/** What index-pack writes while a pack comes in, renamed into place only once the pack is whole and checked. */
const TMP_PACK = /^tmp_(?:pack|idx|rev)_/;
/** A pack index-pack put in place. */
const PACK = /^pack-[0-9a-f]+\.pack$/;
/**
 * The remote ref names the narrowing fetches by name: genjob's own (a key, a key and a digest) and any
 * other of plain components, none that git's refspec syntax or its ref rules would read otherwise. Pull
 * uses no other name (it would skip the ref as naming no key), so one refused here loses nothing.
 */
const FETCHABLE = /^refs\/genjob\/(?:keys|checks)\/[A-Za-z0-9_-]+(?:[./][A-Za-z0-9_-]+)*$/;
const LOCK_COMPONENT = /\.lock(?:\/|$)/;

/** A quarantine's name in the git directory: the prefix, the pid of its pull, and a random part. */
const QUARANTINE = 'genjob-pull-';
const QUARANTINE_NAME = /^genjob-pull-(\d+)-[A-Za-z0-9]{6}$/;

/** What is left of the pull's bounds: its deadline, and the bytes its fetches may still write. */
interface Budget {
  readonly remote: string;
  readonly bounds: FetchBounds;
  readonly deadline: number;
  bytesLeft: number;
}

/**
 * Mirror the remote's refs/genjob/<kind>/* into refs/genjob-pulled/<kind>/* (forced, pruned), every kind in
 * one fetch, under the bounds; a ref whose objects git's checks refuse is skipped by itself (above).
 * Returns the key refs mirrored and the refs skipped.
 */
export async function fetchKeyRefs(root: string, remote: string, bounds: FetchBounds): Promise<Fetched> {
  const budget: Budget = {
    remote,
    bounds,
    deadline: Date.now() + bounds.timeoutMs,
    bytesLeft: bounds.maxBytes,
  };
  const whole = await strictFetch(
    root,
    remote,
    { prune: true, refspecs: PULLED_KINDS.map(pulledRefspec) },
    budget,
  );
  const skipped = whole.ok ? [] : await narrowDown(root, budget);
  return { refs: await listKeyRefs(root, PULLED_REFS, PULLED_REFS), skipped };
}

/**
 * The fetch of every ref was refused by git's checks: fetch the refs the remote lists by halves into a
 * quarantine, down to each ref refused by itself, then mirror what passed from there in one local fetch.
 */
async function narrowDown(root: string, budget: Budget): Promise<SkippedRef[]> {
  const [common, objects, config, format] = (
    await gitText(root, [
      'rev-parse',
      '--path-format=absolute',
      '--git-common-dir',
      '--git-path',
      'objects',
      '--git-path',
      'config',
      '--show-object-format',
    ])
  ).split('\n') as [string, string, string, string];
  removeDeadQuarantines(common);
  const prefix = join(common, `${QUARANTINE}${process.pid}-`);
  let quarantine: string;
  try {
    quarantine = mkdtempSync(prefix);
  } catch (err) {
    throw new IoError('mkdtemp', prefix, err);
  }
  try {
    await git(quarantine, ['init', '--quiet', '--bare', `--object-format=${format}`]);
    // this repository's objects are the quarantine's too: what is here already is not sent again
    writeFileSync(join(quarantine, 'objects/info/alternates'), `${objects}\n`);
    // and its config, first (the quarantine's own settings after it win): the remote is named there, with
    // how to reach it (its url, upload-pack, core.sshCommand...)
    const own = join(quarantine, 'config');
    writeFileSync(own, `[include]\n\tpath = ${configString(config)}\n${readFileSync(own, 'utf8')}`);
    const skipped: SkippedRef[] = [];
    const listed: string[] = [];
    for (const name of await remoteRefs(root, budget)) {
      if (FETCHABLE.test(name) && !LOCK_COMPONENT.test(name)) listed.push(name);
      else
        skipped.push({
          ref: name,
          rule: 'not a name pull fetches a ref by (letters, digits, _ and -, with . or / between them)',
        });
    }
    const mirrored = (name: string) => name.replace(/^refs\/genjob\//, 'refs/genjob-pulled/');
    const narrow = async (names: readonly string[]): Promise<void> => {
      // refspecs on stdin: as many as the remote has refs, never too long for a command line
      const stdin = names.map((n) => `+${n}:${mirrored(n)}\n`).join('');
      const r = await strictFetch(quarantine, budget.remote, { prune: false, stdin }, budget);
      if (r.ok) return;
      if (names.length === 1) {
        // gone since the listing: not mirrored, as a fetch after its deletion would not
        if (!r.gone)
          skipped.push({ ref: names[0]!, rule: `git's object checks refused what it points to: ${r.said}` });
        return;
      }
      await byHalves(names);
    };
    const byHalves = async (names: readonly string[]): Promise<void> => {
      const half = Math.ceil(names.length / 2);
      await narrow(names.slice(0, half));
      await narrow(names.slice(half));
    };
    // the fetch of them all was refused already: its halves are where narrowing starts
    if (listed.length > 1) await byHalves(listed);
    else if (listed.length === 1) await narrow(listed);
    // one local fetch sets every ref as a clean fetch of the good ones would, pruning the rest
    const last = await strictFetch(
      root,
      quarantine,
      { prune: true, refspecs: PULLED_KINDS.map((k) => `+${pulledRefs(k)}*:${pulledRefs(k)}*`) },
      // one pack of what the quarantine holds, at most what the narrowing fetched
      { ...budget, bytesLeft: budget.bounds.maxBytes },
    );
    if (!last.ok) throw new Error(`the fetch of what passed git's checks was refused by them: ${last.said}`);
    return skipped.sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
  } finally {
    rmSync(quarantine, { recursive: true, force: true });
  }
}

/**
 * Remove the quarantines of pulls that died before they could (killed, or stopped by a signal, which
 * genjob re-raises): each is named by its pull's pid, and one whose process is gone is left over. A live
 * pull's, of another genjob in this repository, is left alone.
 */
function removeDeadQuarantines(common: string): void {
  for (const name of packFiles(common)) {
    const m = QUARANTINE_NAME.exec(name);
    if (!m || pidAlive(Number(m[1]))) continue;
    rmSync(join(common, name), { recursive: true, force: true });
  }
}

/** The names of the remote's refs under refs/genjob/<kind>/, as it lists them now. */
async function remoteRefs(root: string, budget: Budget): Promise<string[]> {
  const kinds = PULLED_KINDS.map((k) => `refs/genjob/${k}/`);
  const out = await withinTime(budget, (timeoutMs) =>
    gitText(root, ['ls-remote', '--refs', budget.remote, ...kinds.map((k) => `${k}*`)], { timeoutMs }),
  );
  const names = new Set<string>();
  for (const line of out.split('\n')) {
    const name = line.slice(line.indexOf('\t') + 1);
    // ls-remote matches the patterns against the end of a name too
    if (line.includes('\t') && kinds.some((k) => name.startsWith(k))) names.add(name);
  }
  return [...names];
}

/** Run `step` with what is left of the pull's time; a step that runs out of it fails for the whole pull's. */
async function withinTime<T>(budget: Budget, step: (timeoutMs: number) => Promise<T>): Promise<T> {
  const left = budget.deadline - Date.now();
  const whole = (args: readonly string[]) => new GitTimedOutError(args, budget.bounds.timeoutMs);
  if (left <= 0) throw whole(['fetch', '--quiet']);
  try {
    return await step(left);
  } catch (err) {
    throw err instanceof GitTimedOutError ? whole(err.args) : err;
  }
}

type FetchOutcome = { ok: true } | { ok: false; said: string; gone: boolean };

/**
 * `git fetch` into `repo` from `from` under the strict checks and what is left of the budget; refused by
 * the checks (or naming a ref gone from the remote) it answers so, and a pack past the bytes left is
 * EGJ_PULL_TOO_LARGE. The packs it keeps are taken off the bytes left; what it leaves half-written goes.
 */
async function strictFetch(
  repo: string,
  from: string,
  what: { prune: boolean; refspecs: readonly string[] } | { prune: false; stdin: string },
  budget: Budget,
): Promise<FetchOutcome> {
  const packs = join(
    await gitText(repo, ['rev-parse', '--path-format=absolute', '--git-path', 'objects']),
    'pack',
  );
  const before = new Set(packFiles(packs));
  const tooLarge = () =>
    new RejectedError(
      'EGJ_PULL_TOO_LARGE',
      `pull from ${budget.remote}: the remote sent more than ${budget.bounds.maxBytes} bytes (--max-bytes); git was stopped, nothing it fetched was kept and no ref changed`,
    );
  if (budget.bytesLeft <= 0) throw tooLarge();
  try {
    await withinTime(budget, (timeoutMs) =>
      git(
        repo,
        [
          'fetch',
          '--quiet',
          '--no-tags',
          '--no-write-fetch-head',
          '--no-recurse-submodules',
          // a repack of the whole repository has no place under the pack's bound or the fetch's time
          '--no-auto-gc',
          what.prune ? '--prune' : '--no-prune',
          // only the refs named here: never those a refspec of the user's config maps beside them
          // (git's "opportunistic" updates), which could move this clone's own refs/genjob/
          '--refmap=',
          ...('stdin' in what ? ['--stdin', from] : [from, ...what.refspecs]),
        ],
        {
          timeoutMs,
          maxFileBytes: budget.bytesLeft,
          env: STRICT_FETCH,
          ...('stdin' in what ? { input: what.stdin } : {}),
        },
      ),
    );
  } catch (err) {
    let largest = 0;
    for (const name of packFiles(packs)) {
      if (before.has(name) || !TMP_PACK.test(name)) continue;
      const file = join(packs, name);
      largest = Math.max(largest, sizeOf(file));
      rmSync(file, { force: true });
    }
    if (!(err instanceof GitFailedError)) throw err;
    if (largest >= budget.bytesLeft || FILE_TOO_LARGE.test(err.stderr)) throw tooLarge();
    if (FSCK_REFUSED.test(err.stderr))
      return {
        ok: false,
        said: FSCK_OBJECT.exec(err.stderr)?.[0]?.slice(0, 300) ?? err.message,
        gone: false,
      };
    if (REF_GONE.test(err.stderr)) return { ok: false, said: err.message, gone: true };
    throw err;
  }
  for (const name of packFiles(packs))
    if (!before.has(name) && PACK.test(name)) budget.bytesLeft -= sizeOf(join(packs, name));
  return { ok: true };
}

/** `text` as a quoted value of a git config file. */
function configString(text: string): string {
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`).replace(/\n/g, '\\n')}"`;
}

/** The names of the entries of `dir` (none when it does not exist yet). */
const packFiles = (dir: string): string[] => readdirOrEmpty({ fs: nodeFs }, dir);

function sizeOf(file: string): number {
  try {
    return lstatSync(file).size;
  } catch {
    return 0;
  }
}
