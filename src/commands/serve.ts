// genjob serve: the generator host's side, speaking the framed protocol on stdin/stdout until
// stdin closes. Run by `work` (a local child, or over ssh). It keeps going after the worker
// disappears mid-job (SIGHUP ignored, EPIPE tolerated) so a generation that started is finished
// and cached, and the worker's next attempt fetches it instead of generating again.
import { canonicalBytes } from '../core/canonical-json.js';
import type { Receipt } from '../core/receipt.js';
import { defaultCacheDir, ResultCache } from '../remote/result-cache.js';
import { serveSession } from '../remote/serve-session.js';

export interface ServeOptions {
  generator?: string;
  cacheDir?: string;
  signKey?: string;
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
  const cache = new ResultCache(o.cacheDir ?? process.env.GENJOB_CACHE_DIR ?? defaultCacheDir());
  try {
    await serveSession(process.stdin, process.stdout, {
      cache,
      pinnedGenerator: o.generator ?? process.env.GENJOB_GENERATOR ?? null,
      encodeReceipt,
    });
  } finally {
    // a session that ended on an error (an answer that could not be written) must end the process, so the
    // worker sees its stdout close at once; an open stdin would keep serve alive until the request deadline
    process.stdin.destroy();
  }
}
