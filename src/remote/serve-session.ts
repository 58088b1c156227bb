// `genjob serve`: answer run/fetch requests on stdin/stdout until stdin closes (one process can
// serve a whole drain). A run extracts the bundle into a fresh private workspace, checks it
// against the job, generates once per (key, generator) under the entry lock, diffs the workspace
// and caches the result; every answer is a fresh receipt carrying the requester's epoch. A
// `cancel` sent while a run generates kills its generator, and that run is answered, not cached. A
// generator command the shell could not start is refused (EGJ_GENERATOR_CONFIG), not cached either.
import { chmod, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import type { Writable } from 'node:stream';
import { canonicalBytes } from '../core/canonical-json.js';
import { asIoError, GenjobError, IoError, ioErrorAt } from '../core/errors.js';
import { allowedPaths, type Job } from '../core/job.js';
import type { Receipt } from '../core/receipt.js';
import { probeBwrap, requireBwrap } from '../sandbox/bwrap-probe.js';
import type { SandboxPolicy } from '../sandbox/policy.js';
import { giveTree } from '../sandbox/sandbox-user.js';
import { nodeFs } from '../store/fs-port.js';
import {
  BodyAbortedError,
  FrameReader,
  FrameWriter,
  type Header,
  PROTOCOL,
  ProtocolError,
  unclosable,
} from '../transport/protocol.js';
import type { Extracted } from '../transport/safe-extract.js';
import { VERSION } from '../version.js';
import { refuseInDoubt, takeTurn } from './generation-turn.js';
import {
  BUILTIN_PREFIX,
  checkGenerator,
  chooseGenerator,
  generatorConfigProblem,
} from './generator-check.js';
import type { CachedResult, ResultCache } from './result-cache.js';
import { watchForCancel } from './serve-cancel.js';
import type { ServeRequest } from './serve-requests.js';
import { knownFiles } from './workspace-diff.js';

export const MAX_BUNDLE_BYTES = 8 * 1024 * 1024 * 1024;

/**
 * What answering a request takes and the hello does not: the schemas (zod), the extractor and the tar
 * writer, the generator runner (execa), ~1 MB of code. It is loaded once, started right after the hello
 * is out, so the host answers the hello sooner and loads this while the worker claims and spools.
 */
async function loadRequestCode() {
  const [requests, jobSchema, receipt, extract, pack, gen] = await Promise.all([
    import('./serve-requests.js'),
    import('../core/job-schema.js'),
    import('../core/receipt.js'),
    import('../transport/safe-extract.js'),
    import('../transport/tar-pack.js'),
    import('./generate.js'),
  ]);
  return {
    checkRequest: requests.checkRequest,
    parseJob: jobSchema.parseJob,
    RECEIPT_SCHEMA: receipt.RECEIPT_SCHEMA,
    safeExtract: extract.safeExtract,
    packTar: pack.packTar,
    generate: gen.generate,
    GeneratorNotStartedError: gen.GeneratorNotStartedError,
  } as const;
}
type RequestCode = Awaited<ReturnType<typeof loadRequestCode>>;
let requestCode: Promise<RequestCode> | undefined;
const requestCodeLoaded = () => {
  requestCode ??= loadRequestCode();
  return requestCode;
};

export interface ServeConfig {
  cache: ResultCache;
  /** A generator fixed by the host (`serve --generator`); requests naming another are refused. */
  pinnedGenerator: string | null;
  /** Turns a receipt into the bytes to send (e.g. a signed envelope). */
  encodeReceipt: (receipt: Receipt) => Buffer;
  hostId?: string;
  /** How generator commands are confined on this host. */
  policy: SandboxPolicy;
  /**
   * Where each run's directory is made when a sandbox user runs the generator (a serve run as root: one
   * that user reaches, sandbox-user.ts userRunsDir); the cache's work directory otherwise.
   */
  runsDir?: string;
  /**
   * `serve --check-generator`: the hello says whether this generator (null: the pinned one) would run.
   * The pre-claim check rides on the hello because it then needs nothing from the worker: a remote
   * command that buffers what the worker sends (`head -c N | genjob serve`) cannot stall it.
   */
  check?: { generator: string | null };
}

class RefusedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function serveSession(
  input: AsyncIterable<Uint8Array>,
  output: Writable,
  cfg: ServeConfig,
): Promise<void> {
  await cfg.cache.init();
  const reader = new FrameReader(input, MAX_BUNDLE_BYTES);
  const writer = new FrameWriter(output);
  const host = cfg.hostId ?? hostname();
  const check =
    cfg.check && (await checkGenerator(cfg.pinnedGenerator, cfg.check.generator, process.env, cfg.policy));
  await writer.message({
    type: 'hello',
    protocol: PROTOCOL,
    version: VERSION,
    host,
    ...(check ? { check } : {}),
  });
  requestCodeLoaded().catch(() => {}); // a failure to load shows where a request awaits it
  // a header read while a generation ran (see serve-cancel.ts) is the next one to answer
  const incoming: Incoming = { next: undefined };
  for (;;) {
    const header = await (incoming.next ?? reader.readHeader());
    incoming.next = undefined;
    if (header === null) return;
    const body = reader.body();
    if (header.type === 'cancel') {
      // it came after the answer it meant to stop (the worker reads that answer): nothing to do
      await reader.drain(body);
      continue;
    }
    try {
      await answer(header, body, reader, writer, cfg, host, incoming);
    } catch (caught) {
      // a broken stream cannot be answered; an aborted body leaves it in sync
      if (caught instanceof ProtocolError && !(caught instanceof BodyAbortedError)) throw caught;
      await reader.drain(body);
      // a system error is the host's environment failing (EGJ_IO naming the call), never a bug of serve
      const err = asIoError(caught);
      const code = err instanceof RefusedError || err instanceof GenjobError ? err.code : 'EGJ_SERVE_FAILED';
      await writer.message({ type: 'error', code, message: (err as Error).message });
    }
  }
}

/** Where the session loop finds a header already read for it. */
interface Incoming {
  next: Promise<Header | null> | undefined;
}

async function answer(
  header: Header,
  body: AsyncGenerator<Buffer>,
  reader: FrameReader,
  writer: FrameWriter,
  cfg: ServeConfig,
  host: string,
  incoming: Incoming,
): Promise<void> {
  const code = await requestCodeLoaded();
  const parsed = code.checkRequest(header);
  if (!parsed.ok) throw new RefusedError('EGJ_BAD_REQUEST', `bad request: ${parsed.issue.message}`);
  const req = parsed.data;
  const deadline = Date.now() + req.timeout_ms; // a wait for another serve's generation ends by then
  const choice = chooseGenerator(cfg.pinnedGenerator, req.generator);
  if (!choice.ok) throw new RefusedError(choice.code, choice.message);
  const { generator } = choice;
  const name = cfg.cache.entryName(req.key, generator, req.job_digest, req.plane ?? 'live', req.fresh);
  // an aborted generation is kept like any other (no double spend on redelivery), unless the
  // worker asked for a deliberate retry of aborted jobs (`work --retry-aborted`), or of this
  // aborted or rejected job (`genjob retry KEY`)
  const usable = (r: CachedResult | undefined) =>
    r && !(req.retry_aborted && r.status === 'aborted') && !(req.regenerate && r.status !== 'ok')
      ? r
      : undefined;
  if (req.type === 'fetch') {
    await reader.drain(body);
    const cached = usable(await cfg.cache.read(name));
    if (!cached) return writer.message({ type: 'none', key: req.key });
    return respond(code, writer, cfg, cfg.cache.entryDir(name), cached, req, host, true);
  }
  const cached = usable(await cfg.cache.read(name));
  if (cached) {
    await reader.drain(body);
    return respond(code, writer, cfg, cfg.cache.entryDir(name), cached, req, host, true);
  }
  // a generator that cannot run produces no result to cache: refuse before reading the bundle
  const problem = await generatorConfigProblem(generator, process.env, cfg.policy);
  if (problem !== null) throw new RefusedError('EGJ_GENERATOR_CONFIG', problem);
  const builtin = generator.startsWith(BUILTIN_PREFIX);
  const confined = cfg.policy.kind === 'bwrap' && !builtin;
  // a command run as the sandbox user (serve runs as root) runs in a directory that user reaches and owns
  const user = builtin ? undefined : cfg.policy.user;
  // bubblewrap's probe (asked once per process) starts now and runs while the bundle comes in
  if (confined) void probeBwrap(user);
  const scratch = await cfg.cache.scratch(user && cfg.runsDir);
  try {
    const { job, ws, files } = await receiveBundle(code, body, reader, scratch, req);
    // before the fence (knownFiles): a chown moves each file's ctime, which then still precedes it
    if (user) giveTree(scratch, user);
    const release = await takeTurn(cfg.cache, name, deadline);
    try {
      const result = usable(await cfg.cache.read(name));
      if (result) return await respond(code, writer, cfg, cfg.cache.entryDir(name), result, req, host, true);
      await cfg.cache.discard(name); // an aborted (or, retried on purpose, rejected) entry
      await refuseInDoubt(cfg.cache, name, req.retry_aborted === true || req.regenerate === true);
      await cfg.cache.clearStarted(name);
      // no sandbox, no generation: refused before anything is recorded as started
      if (confined) await requireBwrap(`genjob serve on ${host}`, user);
      const jobFile = join(scratch, 'job.json');
      await writeFile(jobFile, canonicalBytes(job)).catch((err: unknown) => {
        throw ioErrorAt(jobFile, err); // its close's error names no file
      });
      // root's, bound read-only, and readable by the sandbox user whatever serve's umask (027, 077)
      if (user)
        await chmod(jobFile, 0o644).catch((err: unknown) => {
          throw ioErrorAt(jobFile, err);
        });
      // the extraction hashed every file: the diff re-hashes only those touched since
      const known = knownFiles(ws, files, join(scratch, 'extracted.fence'));
      const built = await cfg.cache.tmpDir();
      try {
        await cfg.cache.markStarted(name); // outbox: recorded before the generator starts
        // the worker may cancel while this runs (genjob cancel KEY): the generator is killed
        const cancel = watchForCancel(reader);
        incoming.next = cancel.next;
        const fresh = await code
          .generate({
            job,
            jobDigest: req.job_digest,
            generator,
            ws,
            scratch,
            built,
            timeoutMs: req.timeout_ms,
            policy: cfg.policy,
            known,
            signal: cancel.signal,
          })
          .catch(async (err: unknown) => {
            // a command that could not start is a refusal, as if it had been found before: nothing in doubt
            if (err instanceof code.GeneratorNotStartedError) await cfg.cache.clearStarted(name);
            throw err;
          });
        if (cancel.signal.aborted && fresh.status === 'aborted') {
          // answered, never cached: a cancelled job retried later must generate again
          await cfg.cache.clearStarted(name);
          process.stderr.write(
            `genjob serve: ${req.key.slice(0, 12)} cancelled by the worker; nothing cached\n`,
          );
          return await respond(code, writer, cfg, built, fresh, req, host, false);
        }
        let ours: boolean;
        try {
          ours = await cfg.cache.commit(name, built);
        } catch (err) {
          // the result is in hand: deliver it from where it was built and say it could not be kept
          const cacheError = `the host could not store this result in its cache: ${(err as Error).message}`;
          process.stderr.write(`genjob serve: ${cacheError}\n`);
          return await respond(code, writer, cfg, built, fresh, req, host, false, cacheError);
        }
        // kept: a started record left behind is harmless (the entry answers first) and swept with it
        await cfg.cache.clearStarted(name).catch((err: unknown) => {
          process.stderr.write(`genjob serve: ${(err as Error).message} (the result is cached)\n`);
        });
        // ours: answered as built, not read back and hashed again (respond checks each file against its
        // digest as it sends it); an entry a racing delivery stored first is read, and answered instead
        const kept = ours ? fresh : await cfg.cache.read(name);
        if (kept === undefined)
          throw new RefusedError(
            'EGJ_CACHE_TAMPERED',
            `${cfg.cache.entryDir(name)}: set aside right after it was stored`,
          );
        return await respond(code, writer, cfg, cfg.cache.entryDir(name), kept, req, host, false);
      } finally {
        await rm(built, { recursive: true, force: true });
      }
    } finally {
      await release();
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Extract the bundle and check it is exactly the job's inputs; the body is always read to its end. */
async function receiveBundle(
  code: RequestCode,
  body: AsyncGenerator<Buffer>,
  reader: FrameReader,
  scratch: string,
  req: ServeRequest,
): Promise<{ job: Job; ws: string; files: Extracted['files'] }> {
  let job: Job | undefined;
  let extracted: Extracted;
  try {
    extracted = await code.safeExtract(unclosable(body), {
      stagingParent: scratch,
      prefix: 'files/',
      inMemory: { 'job.json': 4 * 1024 * 1024 },
      maxEntries: 10_001,
      maxFileBytes: 4 * 1024 * 1024 * 1024,
      maxTotalBytes: MAX_BUNDLE_BYTES,
      sync: false, // a scratch workspace, removed after the request: durability buys nothing here
      allowed: (mem) => {
        const bytes = mem.get('job.json');
        if (!bytes) throw new RefusedError('EGJ_BUNDLE_NO_JOB', 'bundle has no job.json before its files');
        const parsed = code.parseJob(bytes, 'bundle job.json');
        if (parsed.job.key !== req.key || parsed.digest !== req.job_digest) {
          throw new RefusedError(
            'EGJ_BUNDLE_MISMATCH',
            'bundle job.json does not match the requested key and digest',
          );
        }
        job = parsed.job;
        // the files to change and the ones shipped for context only (diffWorkspace refuses a change to those)
        return new Set([...allowedPaths(job), ...(job.reads ?? []).map((r) => r.path)]);
      },
    });
  } finally {
    await reader.drain(body);
  }
  if (!job) {
    const bytes = extracted.inMemory.get('job.json');
    if (!bytes) throw new RefusedError('EGJ_BUNDLE_NO_JOB', 'bundle has no job.json');
    job = code.parseJob(bytes, 'bundle job.json').job;
  }
  const got = new Map(extracted.files.map((f) => [f.path, f.sha256]));
  for (const input of [...job.inputs, ...(job.reads ?? [])]) {
    if (got.get(input.path) !== (input.sha256 ?? undefined)) {
      throw new RefusedError(
        'EGJ_BUNDLE_MISMATCH',
        `bundle file ${JSON.stringify(input.path)} does not match the job's digest`,
      );
    }
  }
  // a file to create gets its parent directories, so `echo > new/dir/f` works as on the repo
  for (const input of job.inputs) {
    if (input.sha256 === null)
      nodeFs.mkdirSync(join(extracted.dir, dirname(input.path)), { recursive: true });
  }
  return { job, ws: extracted.dir, files: extracted.files };
}

async function respond(
  code: RequestCode,
  writer: FrameWriter,
  cfg: ServeConfig,
  entryDir: string,
  result: CachedResult,
  req: ServeRequest,
  host: string,
  cached: boolean,
  cacheError?: string,
): Promise<void> {
  const receipt: Receipt = {
    schema: code.RECEIPT_SCHEMA,
    key: req.key,
    job_digest: req.job_digest,
    epoch: req.epoch,
    status: result.status,
    outputs: result.outputs,
    reason: result.reason,
    worker: { id: req.worker_id, host },
    generator: result.generator,
    timings: result.timings,
    cached,
    ...(result.usage ? { usage: result.usage } : {}),
    ...(result.sandbox ? { sandbox: result.sandbox } : {}),
    plane: req.plane ?? 'live',
  };
  const receiptBytes = cfg.encodeReceipt(receipt);
  await writer.header({
    type: 'result',
    receipt_bytes: receiptBytes.length,
    ...(cacheError ? { cache_error: cacheError.slice(0, 1000) } : {}),
  });
  await writer.chunk(receiptBytes);
  const files = join(entryDir, 'files');
  try {
    await code.packTar(
      result.outputs.map((o) => ({
        name: `files/${o.path}`,
        file: join(files, o.path),
        expectSha256: o.sha256,
      })),
      (chunk) => writer.chunk(chunk),
    );
  } catch (err) {
    // the header is out: end the body as aborted so the worker treats the answer as unusable
    const io = asIoError(err);
    const why =
      io instanceof IoError
        ? `EGJ_IO: ${io.message}`
        : `cache entry ${entryDir} is damaged: ${(err as Error).message}`;
    process.stderr.write(`genjob serve: ${why}\n`);
    await writer.abort();
    return;
  }
  await writer.end();
}
