// genjob serve: the generator host's side, speaking the framed protocol on stdin/stdout until
// stdin closes. Run by `work` (a local child, or over ssh). It keeps going after the worker
// disappears mid-job (SIGHUP ignored, EPIPE tolerated) so a generation that started is finished
// and cached, and the worker's next attempt fetches it instead of generating again.
// The sandbox policy is serve's own: its flags and environment decide on this host.
import { resolve } from 'node:path';
import { defaultCacheDir, resultCacheDir } from '../core/cache-dir.js';
import { canonicalBytes } from '../core/canonical-json.js';
import { envValue } from '../core/env-value.js';
import { UsageError } from '../core/errors.js';
import type { Receipt } from '../core/receipt.js';
import { ResultCache } from '../remote/result-cache.js';
import { serveSession } from '../remote/serve-session.js';
import { userRunsDir } from '../sandbox/sandbox-user.js';
import { sandboxPolicy } from '../sandbox/serve-policy.js';
import { ProtocolError } from '../transport/protocol.js';

export interface ServeOptions {
  generator?: string;
  cacheDir?: string;
  signKey?: string;
  generatorEnv?: string[];
  generatorNetwork?: boolean;
  generatorBind?: string[];
  generatorBindRw?: string[];
  /** commander's --no-sandbox: false when given. */
  sandbox?: boolean;
  /** --sandbox-user: who generators run as when serve runs as root (default nobody). */
  sandboxUser?: string;
  gcOlderThan?: string;
  /** --worker-repo: the repository of the worker that started this serve on its own machine. */
  workerRepo?: string;
  /** --check-generator[=command]: true when given without a command (the pinned one is checked). */
  checkGenerator?: string | true;
}

/** The worker's repository as a generator must not see it (a directory git does not know: itself). */
async function workerRepoDirs(root: string): Promise<string[]> {
  try {
    return await (await import('../git/repository-dirs.js')).repositoryDirs(root);
  } catch {
    return [resolve(root)];
  }
}

export async function serve(o: ServeOptions): Promise<void> {
  process.on('SIGHUP', () => {});
  process.stdout.on('error', () => {}); // the worker went away; answers are lost, the cache is not
  let encodeReceipt = (r: Receipt) => canonicalBytes(r);
  // the local transport starts serve as a child inheriting the worker's environment, so the key
  // can come from there (GENJOB_SIGN_KEY) as well as from --sign-key (see docs/trust.md)
  const signKey = o.signKey ?? (process.env.GENJOB_SIGN_KEY || undefined);
  if (signKey) {
    const { loadPrivateKey, keyIdOf } = await import('../trust/keys.js');
    const { signReceipt } = await import('../core/receipt-envelope.js');
    const key = loadPrivateKey(signKey);
    const keyid = keyIdOf(key);
    encodeReceipt = (r) => signReceipt(r, key, keyid);
  }
  const cache = new ResultCache(resultCacheDir(o.cacheDir));
  // the key is a secret, not only hidden: no exposed path may even hold it (see sandbox/exposure.ts)
  const policy = {
    ...sandboxPolicy(
      o,
      process.env,
      // and the user's own cache directory, whose secret seals their report and setup caches
      [...new Set([resolve(cache.dir), resolve(cache.workDir), resolve(defaultCacheDir())])],
      signKey ? [resolve(signKey)] : [],
    ),
    // a repository under /opt or /usr/src would show through the system directories: its .gen/ (other
    // jobs' outputs, receipts), files mint refused to ship (.env), .git/; from a linked worktree, the
    // main checkout and the common git directory too
    masked: o.workerRepo === undefined ? [] : await workerRepoDirs(o.workerRepo),
  };
  // served as root, runs are made where the sandbox user reaches them (sandbox-user.ts): the work directory
  // when it may, else a directory of TMPDIR, hidden like the work directory from every other run, even
  // through an exposed path that holds it (/tmp)
  const runsDir = policy.user && userRunsDir(policy.user, { preferred: cache.workDir });
  if (runsDir !== undefined && runsDir !== cache.workDir) policy.hidden = [...policy.hidden, runsDir];
  if (o.gcOlderThan) {
    // retention: prune before serving; an entry another session is generating is skipped
    const { parseDuration } = await import('../core/duration.js');
    const { pruneCache } = await import('../remote/cache-prune.js');
    await pruneCache(cache, parseDuration(o.gcOlderThan, '--gc-older-than'));
  }
  try {
    await serveSession(process.stdin, process.stdout, {
      cache,
      pinnedGenerator: pinnedGenerator(o.generator, process.env.GENJOB_GENERATOR),
      encodeReceipt,
      policy,
      ...(runsDir === undefined ? {} : { runsDir }),
      ...(o.checkGenerator === undefined
        ? {}
        : { check: { generator: o.checkGenerator === true ? null : o.checkGenerator } }),
    });
  } catch (err) {
    // the worker's stream broke off (it was killed, or the remote command cut it): not a bug of serve
    if (!(err instanceof ProtocolError)) throw err;
    process.stderr.write(`genjob serve: the session broke: ${err.message}\n`);
    process.exitCode = 1;
  } finally {
    // a session that ended on an error (an answer that could not be written) must end the process, so the
    // worker sees its stdout close at once; an open stdin would keep serve alive until the request deadline
    process.stdin.destroy();
  }
}

/**
 * The generator this host runs whatever a request names: --generator, else GENJOB_GENERATOR (set but empty
 * reads as unset, as an environment file's `GENJOB_GENERATOR=` means). A blank --generator is refused:
 * every job would run an empty command and come back ok with nothing changed.
 */
function pinnedGenerator(flag: string | undefined, env: string | undefined): string | null {
  if (flag !== undefined && flag.trim() === '')
    throw new UsageError('EGJ_USAGE', '--generator: the generator command is empty');
  return flag ?? envValue(env) ?? null;
}
