// npm run bench: every stage of genjob next to its physical floor, measured in the same run,
// alternating genjob and baseline, several runs each (medians). Prints a table and writes
// bench/results.json. Never part of the test suite; exits 0 unless the bench itself crashes.
//   node bench/run.mjs [--quick] [--only STAGE[,STAGE...]] [--runs N] [--keep]
// Stages: mint-big, mint-small, mint-code, cold-version, cold-status, work-local, ship-big, ship-small,
// second-job, verify, apply, memory, git-push, git-push-again, show-journal, check (bench/stages-check.mjs),
// report (bench/stages-report.mjs), the scale stages of bench/stages-scale.mjs: drain-deep, status-deep, pool; and gate-run (bench/stages-runs.mjs).
// See docs/performance.md for what each measures and why.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  cpSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  codeFiles,
  makeJob,
  queueJob,
  randomFile,
  receivedJob,
  sha256,
  smallFiles,
  textBytes,
} from './fixtures.mjs';
import { foreignCores, foreignSnapshot } from './foreign-cpu.mjs';
import { startSshd } from './sshd.mjs';
import { checkStages } from './stages-check.mjs';
import { journalStages } from './stages-journal.mjs';
import { reportStages } from './stages-report.mjs';
import { RUN_STAGES, runStages } from './stages-runs.mjs';
import { SCALE_STAGES, scaleStages } from './stages-scale.mjs';

/** Every journal event of a repo: each process writes its own segment under .gen/journal.d/. */
function journalEvents(root) {
  const dir = join(root, '.gen', 'journal.d');
  return readdirSync(dir)
    .flatMap((n) => readFileSync(join(dir, n), 'utf8').trim().split('\n'))
    .map((l) => JSON.parse(l));
}

const MiB = 1024 * 1024;
const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, '..');

// ---------- options ----------
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const value = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const QUICK = flag('--quick');
const KEEP = flag('--keep');
const ONLY = value('--only')?.split(',');
/** Every pair (genjob, baseline) is measured at least this many times, alternating, after a warm-up. */
const MIN_PAIRS = 5;
const RUNS = Math.max(MIN_PAIRS, Number(value('--runs') ?? MIN_PAIRS));
const SIZES = QUICK
  ? {
      bigMint: 64 * MiB,
      smallCount: 200,
      statusJobs: 100,
      workJobs: 50,
      shipBig: 20 * MiB,
      shipSmall: 200,
      verifyFiles: 1,
      applyFiles: 100,
      pushJobs: 200,
      memBytes: 256 * MiB,
    }
  : {
      bigMint: 512 * MiB,
      smallCount: 2000,
      statusJobs: 1000,
      workJobs: 500,
      shipBig: 200 * MiB,
      shipSmall: 2000,
      verifyFiles: 8,
      applyFiles: 1000,
      pushJobs: 1000,
      memBytes: 1024 * MiB,
    };

const STAGES = [
  'mint-big',
  'mint-small',
  'mint-code',
  'cold-version',
  'cold-status',
  'work-local',
  'work-sandbox',
  'ship-big',
  'ship-small',
  'second-job',
  'verify',
  'apply',
  'memory',
  'git-push',
  'git-push-again',
  ...SCALE_STAGES,
  'show-journal',
  'check',
  ...RUN_STAGES,
  'report',
];
if (ONLY)
  for (const s of ONLY)
    if (!STAGES.includes(s)) {
      process.stderr.write(`bench: unknown stage ${s} (known: ${STAGES.join(', ')})\n`);
      process.exit(2);
    }
const wanted = (s) => !ONLY || ONLY.includes(s);
/** Stages that need the bench's sshd (started once, on first use). */
const SSH_STAGES = ['ship-big', 'ship-small', 'second-job'];

// ---------- scratch and a private copy of the built CLI ----------
const TMP = mkdtempSync(join(os.tmpdir(), 'gjb-'));
// run as root, serve and check run their sandboxes as nobody, which must reach the repositories and
// scripts the stages make here
if (process.getuid?.() === 0) chmodSync(TMP, 0o755);
// Other people rebuild dist/ while we run: snapshot bin/, dist/ and package.json once.
const APP = join(TMP, 'app');
for (const p of ['bin', 'dist', 'package.json']) cpSync(join(repoRoot, p), join(APP, p), { recursive: true });
const GENJOB = join(APP, 'bin', 'genjob.js');
const NODE = process.execPath;

function cleanup() {
  if (!KEEP) rmSync(TMP, { recursive: true, force: true });
}
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

// ---------- measuring ----------
function run(cmd, args, opts = {}) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 * MiB, ...opts });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.error) throw r.error;
  if (r.status !== 0 && !opts.allowFail) {
    throw new Error(
      `${cmd} ${args.join(' ').slice(0, 200)} exited ${r.status ?? r.signal}: ${String(r.stderr).slice(-800)}`,
    );
  }
  return { ms, stdout: String(r.stdout), stderr: String(r.stderr), status: r.status };
}
const genjob = (args, opts) => run(NODE, [GENJOB, ...args], opts);
const sh = (script, opts) => run('sh', ['-c', script], opts);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Alternate genjob and baseline `runs` times (never fewer than MIN_PAIRS) after one discarded warm-up
 * of each (page cache, disk cache, first-run costs); genjob goes first in even pairs, the baseline in
 * odd ones. `prepare(i)` runs untimed before each pair. Returns the median ms of each side and the
 * ratio genjob/baseline of every pair: a pair is measured back to back, under the same load.
 */
function alternate({ runs = RUNS, warmup = true, prepare, genjob: g, baseline: b }) {
  const gs = [];
  const bs = [];
  const total = Math.max(MIN_PAIRS, runs) + (warmup ? 1 : 0);
  for (let i = 0; i < total; i++) {
    const ctx = prepare?.(i);
    const order = i % 2 === 0 ? [g, b] : [b, g];
    const times = order.map((f) => f(ctx, i));
    const [gt, bt] = i % 2 === 0 ? times : times.reverse();
    if (warmup && i === 0) continue;
    gs.push(gt);
    bs.push(bt);
  }
  return pairs(gs, bs);
}

/** The medians of two sides measured in pairs, and each pair's ratio genjob/baseline. */
function pairs(gs, bs) {
  return {
    genjob: median(gs),
    baseline: median(bs),
    genjobRuns: gs,
    baselineRuns: bs,
    ratios: gs.map((g, i) => g / bs[i]),
  };
}

const results = [];
/**
 * One row of the table. `ratios` (each pair's ratio) give the row its ratio (their median) and its
 * minimum; a row without pairs gives `ratio` itself (or genjob/baseline). `met` overrides the test
 * "ratio ≤ target" for targets of another shape. The stage loop adds the load and the verdict.
 */
function record(stage, { genjob: g, baseline: b, unit = 'ms', ratio, ratios, target, met, note }) {
  const r = ratio ?? (ratios?.length ? median(ratios) : b ? g / b : null);
  const row = {
    stage,
    genjob: round(g),
    baseline: b === null ? null : round(b),
    unit,
    ratio: r === null ? null : Math.round(r * 100) / 100,
    ...(ratios?.length
      ? {
          ratio_min: Math.round(Math.min(...ratios) * 100) / 100,
          pair_ratios: ratios.map((x) => Math.round(x * 1000) / 1000),
        }
      : {}),
    target,
    met: met ?? (r !== null && r <= target),
    ...(note ? { note } : {}),
  };
  results.push(row);
  process.stderr.write(`bench: ${fmtRow(row)}\n`);
}
const round = (x) => (x >= 100 ? Math.round(x) : Math.round(x * 100) / 100);

/** The 1-, 5- and 15-minute load averages, rounded. */
const loadNow = () => os.loadavg().map((x) => Math.round(x * 100) / 100);
const CORES = os.cpus().length;

/** Other processes using more than a quarter of the cores on average during a stage make it "loaded". */
const FOREIGN_LIMIT = CORES / 4;

/**
 * A row measured while other processes took more than FOREIGN_LIMIT cores on average
 * (bench/foreign-cpu.mjs) is "loaded": its numbers are kept, but it neither meets nor misses its
 * target. Otherwise its verdict is what `met` says. The load average is recorded beside it, but it
 * cannot judge: the ssh stages keep more processes busy than there are cores on their own.
 */
function verdictOf(row, foreign) {
  if (row.error) return 'error';
  if (foreign > FOREIGN_LIMIT) return 'loaded';
  return row.met ? 'met' : 'missed';
}

function fmtRow(r) {
  const t = typeof r.target === 'string' ? r.target : `≤ ${r.target}`;
  const min = r.ratio_min === undefined ? '' : ` (min ${r.ratio_min})`;
  return `${r.stage}: genjob ${r.genjob} ${r.unit}, baseline ${r.baseline ?? '—'}${r.baseline === null ? '' : ` ${r.unit}`}, ratio ${r.ratio ?? '—'}${min}, target ${t}, ${r.met ? 'met' : 'NOT met'}${r.note ? ` (${r.note})` : ''}`;
}

function freshRepo(name) {
  const root = join(TMP, name);
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, '.git'), { recursive: true });
  genjob(['init', '--root', root]); // genjob itself lays out .gen/ (status no longer writes anything)
  return root;
}

// ---------- self-check: our job files are byte-identical to genjob mint's ----------
function selfCheck() {
  const root = freshRepo('selfcheck');
  const files = smallFiles(root, 3, 100);
  const r = genjob(['mint', '--json', '-m', 'self check', ...files.map((f) => f.path)], { cwd: root });
  const { key } = JSON.parse(r.stdout);
  const made = makeJob(
    'self check',
    files.map((f) => ({ path: f.path, sha256: f.sha256 })),
  );
  const real = readFileSync(join(root, '.gen', 'queue', `${key}.json`));
  if (made.key !== key || !real.equals(made.bytes))
    throw new Error('bench fixtures: job bytes differ from genjob mint; fix bench/fixtures.mjs');
  rmSync(root, { recursive: true, force: true });
}

/**
 * One mint of `files` against Node's own start-up plus openssl hashing them; removes `root` after. Each
 * run mints into an empty queue (the job of the run before is removed, untimed): mint reads every live
 * job to warn about paths two jobs allow, and a queue that grew by one job of the same 2,000 paths a run
 * made each run slower than the one before, so the median said how many runs the stage made.
 */
function mintMany(root, files, stage, what) {
  const queue = join(root, '.gen', 'queue');
  const m = alternate({
    prepare: () => {
      for (const name of readdirSync(queue)) rmSync(join(queue, name), { force: true });
    },
    genjob: (_, i) => genjob(['mint', '-m', `${stage}, run ${i}`, ...files], { cwd: root }).ms,
    // openssl alone is below what any Node program can take
    baseline: () =>
      run(NODE, ['-e', '0']).ms + run('openssl', ['dgst', '-sha256', ...files], { cwd: root }).ms,
  });
  record(stage, {
    ...m,
    target: 1.5,
    note: `${what}; baseline = \`node -e 0\` + \`openssl dgst\` of the files`,
  });
  rmSync(root, { recursive: true, force: true });
}

// ---------- stages ----------
const stages = {
  'mint-big'() {
    const root = freshRepo('mint-big');
    randomFile(join(root, 'big.bin'), SIZES.bigMint);
    const m = alternate({
      genjob: (_, i) => genjob(['mint', '-m', `hash the big file, run ${i}`, 'big.bin'], { cwd: root }).ms,
      baseline: () => run('openssl', ['dgst', '-sha256', join(root, 'big.bin')]).ms,
    });
    record('mint, one big input', { ...m, target: 1.3, note: `${SIZES.bigMint / MiB} MiB random` });
    rmSync(root, { recursive: true, force: true });
  },

  'mint-small'() {
    const root = freshRepo('mint-small');
    const files = smallFiles(root, SIZES.smallCount, 4096).map((f) => f.path);
    mintMany(root, files, 'mint, many small inputs', `${SIZES.smallCount} × 4 KiB text`);
  },

  // the same count and size as mint-small, but source code whose words wake some secret rules (and
  // secretlint, in one file in twenty), where mint-small's random text wakes almost none
  'mint-code'() {
    const root = freshRepo('mint-code');
    const files = codeFiles(root, SIZES.smallCount, 4096);
    mintMany(
      root,
      files,
      'mint, many small source files',
      `${SIZES.smallCount} × 4 KiB of code with scanner keywords`,
    );
  },

  'cold-version'() {
    const m = alternate({
      runs: RUNS * 2,
      genjob: () => genjob(['--version']).ms,
      baseline: () => run(NODE, ['-e', '0']).ms,
    });
    record('cold start: --version', { ...m, target: 1.5 });
  },

  'cold-status'() {
    const root = freshRepo('cold-status');
    const input = smallFiles(root, 1, 1000)[0];
    for (let i = 0; i < SIZES.statusJobs; i++)
      queueJob(root, makeJob(`queued job ${i}\nsecond line`, [{ path: input.path, sha256: input.sha256 }]));
    const out = genjob(['status'], { cwd: root }).stdout;
    if (!out.startsWith(`queue ${SIZES.statusJobs} `)) throw new Error(`status saw: ${out.slice(0, 80)}`);
    const m = alternate({
      runs: RUNS * 2,
      genjob: () => genjob(['status'], { cwd: root }).ms,
      baseline: () => run(NODE, ['-e', '0']).ms,
    });
    record('cold start: status', { ...m, target: 2.5, note: `${SIZES.statusJobs} queued jobs` });
    rmSync(root, { recursive: true, force: true });
  },

  'work-local'() {
    const n = SIZES.workJobs;
    const m = alternate({
      warmup: false,
      prepare: (i) => {
        const root = freshRepo(`work-${i}`);
        const input = smallFiles(root, 1, 4096)[0];
        for (let j = 0; j < n; j++)
          queueJob(root, makeJob(`no-op job ${j} of run ${i}`, [{ path: input.path, sha256: input.sha256 }]));
        return root;
      },
      genjob: (root) => {
        const env = { ...process.env, XDG_CACHE_HOME: join(root, 'cache') };
        const ms = genjob(['work', '--drain', '--generator', 'true', '--quiet'], { cwd: root, env }).ms;
        const got = readdirSync(join(root, '.gen', 'receipts')).length;
        if (got !== n) throw new Error(`work-local: ${got} receipts for ${n} jobs`);
        rmSync(root, { recursive: true, force: true });
        return ms;
      },
      baseline: () => sh(`i=0; while [ $i -lt ${n} ]; do "${NODE}" -e 0; i=$((i+1)); done`).ms,
    });
    const jobsPerS = (n * 1000) / m.genjob;
    const runsPerS = (n * 1000) / m.baseline;
    record('work: claim + local generate + receipt', {
      genjob: jobsPerS,
      baseline: runsPerS,
      unit: 'jobs/s',
      ratio: runsPerS / jobsPerS,
      target: 1.5,
      note: `${n} jobs, generator \`true\`; baseline = ${n} \`node -e 0\` runs`,
    });
  },

  // the cost of confining each generator run (bubblewrap) against running it unconfined
  'work-sandbox'() {
    const n = SIZES.workJobs;
    const drain = (root, extra) => {
      const env = { ...process.env, XDG_CACHE_HOME: join(root, 'cache') };
      const ms = genjob(['work', '--drain', '--generator', 'true', '--quiet', ...extra], {
        cwd: root,
        env,
      }).ms;
      const got = readdirSync(join(root, '.gen', 'receipts')).length;
      if (got !== n) throw new Error(`work-sandbox: ${got} receipts for ${n} jobs`);
      rmSync(root, { recursive: true, force: true });
      return ms;
    };
    const fresh = (i, tag) => {
      const root = freshRepo(`sandbox-${tag}-${i}`);
      const input = smallFiles(root, 1, 4096)[0];
      for (let j = 0; j < n; j++)
        queueJob(
          root,
          makeJob(`no-op job ${j} of ${tag} run ${i}`, [{ path: input.path, sha256: input.sha256 }]),
        );
      return root;
    };
    const m = alternate({
      warmup: false,
      prepare: (i) => ({ confined: fresh(i, 'on'), unconfined: fresh(i, 'off') }),
      genjob: (ctx) => drain(ctx.confined, []),
      baseline: (ctx) => drain(ctx.unconfined, ['--no-sandbox']),
    });
    const perJob = m.genjob / n;
    const perJobBare = m.baseline / n;
    const added = perJob - perJobBare;
    record('work with sandbox vs work --no-sandbox', {
      genjob: perJob,
      baseline: perJobBare,
      unit: 'ms/job',
      target: 20,
      met: added < 20,
      note: `${n} jobs, generator \`true\`; bubblewrap adds ${round(added)} ms per job (target < 20 ms)`,
    });
  },

  async 'ship-big'(ssh) {
    const root = freshRepo('ship-big');
    const per = Math.min(50 * MiB, SIZES.shipBig);
    const inputs = [];
    for (let off = 0, i = 0; off < SIZES.shipBig; off += per, i++) {
      const path = `data/part${i}.bin`;
      inputs.push({ path, sha256: randomFile(join(root, path), Math.min(per, SIZES.shipBig - off)) });
    }
    shipStage(
      ssh,
      root,
      inputs,
      'ship over ssh: big files',
      `${SIZES.shipBig / MiB} MiB in ${inputs.length} files`,
    );
  },

  async 'ship-small'(ssh) {
    const root = freshRepo('ship-small');
    const inputs = smallFiles(root, SIZES.shipSmall, 4096).map(({ path, sha256: s }) => ({
      path,
      sha256: s,
    }));
    shipStage(ssh, root, inputs, 'ship over ssh: small files', `${SIZES.shipSmall} × 4 KiB`);
  },

  async 'second-job'(ssh) {
    const firsts = [];
    const seconds = [];
    for (let i = 0; i < RUNS + 1; i++) {
      const root = freshRepo(`second-${i}`);
      const input = smallFiles(root, 1, 4096)[0];
      const keys = [0, 1].map((j) => {
        const made = makeJob(`job ${j} of run ${i}`, [{ path: input.path, sha256: input.sha256 }]);
        queueJob(root, made);
        return made.key;
      });
      genjob(['work', '--drain', ...sshArgs(ssh, i), '--generator', 'true', '--quiet'], { cwd: root });
      const events = journalEvents(root);
      const span = (key) => {
        const at = (ev) => Date.parse(events.find((e) => e.key === key && e.event === ev).at);
        return { start: at('claimed'), ms: at('received') - at('claimed') };
      };
      const [a, b] = keys.map(span).sort((x, y) => x.start - y.start);
      if (i > 0) {
        firsts.push(a.ms);
        seconds.push(b.ms);
      }
      rmSync(root, { recursive: true, force: true });
    }
    // its floor, in the same run: bubblewrap running `true` with the argv genjob gave it, plus one
    // round trip on an open ssh session
    const { argv, filter } = captureBwrapArgv(ssh);
    const floors = [];
    const trips = await sessionRoundTrips(ssh, RUNS * 2);
    for (let i = 0; i < RUNS * 2; i++) {
      const fd3 = openSync(filter, 'r'); // bwrap reads the filter to its end: a fresh descriptor each run
      try {
        floors.push(run('bwrap', argv, { stdio: ['ignore', 'pipe', 'pipe', fd3] }).ms);
      } finally {
        closeSync(fd3);
      }
    }
    const floor = median(floors) + median(trips);
    record('second job to the same host', {
      genjob: median(seconds),
      baseline: floor,
      target: 1.5,
      note: `claim → receipt of job 2 in one drain (journal times; job 1 took ${round(median(firsts))} ms); baseline = bwrap running \`true\` with genjob's argv (${round(median(floors))} ms) + one round trip on the ssh session (${round(median(trips))} ms)`,
    });
  },

  verify() {
    const root = freshRepo('verify');
    const per = 64 * MiB; // a job's max_file_bytes: 512 MiB of outputs is 8 files
    const made = makeJob(
      'verify bench',
      Array.from({ length: SIZES.verifyFiles }, (_, i) => ({ path: `gen/out${i}.bin`, sha256: null })),
    );
    const outputs = made.job.inputs.map((i) => {
      const src = join(TMP, 'verify-src', i.path);
      return { path: i.path, src, sha256: randomFile(src, per), bytes: per };
    });
    receivedJob(
      root,
      made,
      outputs.map(({ path, sha256: s, bytes }) => ({ path, sha256: s, bytes })),
      (file, o) => linkSync(outputs.find((x) => x.path === o.path).src, file),
    );
    const files = outputs.map((o) => join(root, '.gen', 'out', made.key, o.path));
    const m = alternate({
      genjob: () => genjob(['verify', made.key], { cwd: root }).ms,
      baseline: () => run('openssl', ['dgst', '-sha256', ...files]).ms,
    });
    record('verify', {
      ...m,
      target: 1.3,
      note: `${(per * SIZES.verifyFiles) / MiB} MiB in ${SIZES.verifyFiles} outputs`,
    });
    rmSync(root, { recursive: true, force: true });
    rmSync(join(TMP, 'verify-src'), { recursive: true, force: true });
  },

  apply() {
    const n = SIZES.applyFiles;
    const m = alternate({
      prepare: (i) => {
        const root = freshRepo(`apply-${i}`);
        const files = smallFiles(root, n, 4096);
        const made = makeJob(
          `apply bench ${i}`,
          files.map((f) => ({ path: f.path, sha256: f.sha256 })),
        );
        const news = new Map(files.map((f) => [f.path, textBytes(4096)]));
        receivedJob(
          root,
          made,
          files.map((f) => ({ path: f.path, sha256: sha256(news.get(f.path)), bytes: 4096 })),
          (file, o) => writeFileSync(file, news.get(o.path)),
        );
        // the baseline's own copy of the tree and of the new bytes
        const base = join(TMP, `apply-base-${i}`);
        rmSync(base, { recursive: true, force: true });
        for (const f of files) {
          mkdirSync(dirname(join(base, 'tree', f.path)), { recursive: true });
          writeFileSync(join(base, 'tree', f.path), f.data);
          mkdirSync(dirname(join(base, 'new', f.path)), { recursive: true });
          writeFileSync(join(base, 'new', f.path), news.get(f.path));
        }
        writeFileSync(join(base, 'list'), `${files.map((f) => f.path).join('\n')}\n`);
        return { root, key: made.key, base };
      },
      genjob: ({ root, key }) => {
        const ms = genjob(['apply', key], { cwd: root }).ms;
        rmSync(root, { recursive: true, force: true });
        return ms;
      },
      baseline: ({ base }) => {
        const ms = sh(
          'while read f; do cp "new/$f" "tree/$f.tmp" && mv "tree/$f.tmp" "tree/$f"; done < list',
          { cwd: base },
        ).ms;
        rmSync(base, { recursive: true, force: true });
        return ms;
      },
    });
    record('apply', { ...m, target: 1.5, note: `${n} files of 4 KiB` });
  },

  memory() {
    const root = freshRepo('memory');
    const big = join(root, 'big.bin');
    const digest = randomFile(big, SIZES.memBytes);
    const rss = (args) => {
      const r = run('/usr/bin/time', ['-f', 'GJB_MAXRSS %M', NODE, GENJOB, ...args], { cwd: root });
      return Number(/GJB_MAXRSS (\d+)/.exec(r.stderr)[1]) / 1024;
    };
    const mintRss = [];
    for (let i = 0; i < 3; i++) mintRss.push(rss(['mint', '-m', `memory ${i}`, 'big.bin']));
    const made = makeJob('memory verify', [{ path: 'gen/big.bin', sha256: null }]);
    receivedJob(root, made, [{ path: 'gen/big.bin', sha256: digest, bytes: SIZES.memBytes }], (file) =>
      linkSync(big, file),
    );
    const verifyRss = [];
    for (let i = 0; i < 3; i++) verifyRss.push(rss(['verify', made.key]));
    const nodeRss = run('/usr/bin/time', ['-f', 'GJB_MAXRSS %M', NODE, '-e', '0']).stderr;
    const note = `${SIZES.memBytes / MiB} MiB file; \`node -e 0\` alone: ${Math.round(Number(/GJB_MAXRSS (\d+)/.exec(nodeRss)[1]) / 1024)} MiB`;
    const mx = (xs) => Math.max(...xs);
    record('memory: mint peak RSS', {
      genjob: mx(mintRss),
      baseline: null,
      unit: 'MiB',
      ratio: null,
      target: '< 150 MiB',
      met: mx(mintRss) < 150,
      note,
    });
    record('memory: verify peak RSS', {
      genjob: mx(verifyRss),
      baseline: null,
      unit: 'MiB',
      ratio: null,
      target: '< 150 MiB',
      met: mx(verifyRss) < 150,
      note,
    });
    rmSync(root, { recursive: true, force: true });
  },
};

// ---------- material in git ----------
/**
 * Two repositories holding the same bytes: `gj` with SIZES.pushJobs received jobs in .gen/ (job, receipt,
 * one 2 KiB output each), `plain` with those bytes as plain files in one commit. Pushes go to fresh bare
 * repositories over file://.
 */
function pushRepos() {
  const base = join(TMP, 'git-push');
  rmSync(base, { recursive: true, force: true });
  mkdirSync(base, { recursive: true });
  const gj = join(base, 'gj');
  const plain = join(base, 'plain');
  // no automatic gc: after the commit below git estimates its loose objects by sampling one fan-out
  // directory and, past 6,700, packs them in a detached process; whether it did decided whether the
  // baseline pushed 6,000 loose objects (~1-2.5 s) or reused one pack (~0.16 s), and a gc still running
  // took CPU from the pairs being timed
  for (const r of [gj, plain])
    sh(
      `git init -q '${r}' && git -C '${r}' config gc.auto 0 && git -C '${r}' commit -q --allow-empty -m seed`,
    );
  genjob(['init', '--root', gj]); // lays out .gen/ (status only looks)
  for (let i = 0; i < SIZES.pushJobs; i++) {
    const path = `gen/f${i}.txt`;
    const made = makeJob(`push bench job ${i}`, [{ path, sha256: null }]);
    const data = textBytes(2048);
    receivedJob(gj, made, [{ path, sha256: sha256(data), bytes: data.length }], (file) =>
      writeFileSync(file, data),
    );
    const dir = join(plain, made.key);
    mkdirSync(join(dir, 'out', 'gen'), { recursive: true });
    writeFileSync(join(dir, 'job.json'), made.bytes);
    cpSync(join(gj, '.gen', 'receipts', `${made.key}.json`), join(dir, 'receipt.json'));
    writeFileSync(join(dir, 'out', path), data);
  }
  sh(`git -C '${plain}' add -A && git -C '${plain}' commit -q -m 'the same bytes as plain files'`);
  let n = 0;
  const bare = () => {
    const b = join(base, `remote-${n++}.git`);
    sh(`git init -q --bare '${b}'`);
    return `file://${b}`;
  };
  return { base, gj, plain, bare };
}

const gitEnvBench = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bench',
  GIT_AUTHOR_EMAIL: 'bench@example.com',
  GIT_COMMITTER_NAME: 'bench',
  GIT_COMMITTER_EMAIL: 'bench@example.com',
};

Object.assign(stages, {
  'git-push'() {
    const { base, gj, plain, bare } = pushRepos();
    const m = alternate({
      // each pair: fresh remotes, and push's local cache of built refs dropped, so it builds every object again
      prepare: () => {
        rmSync(join(gj, '.git', 'refs', 'genjob'), { recursive: true, force: true });
        return { g: bare(), b: bare() };
      },
      genjob: (ctx) => {
        const r = genjob(['push', '--json', ctx.g], { cwd: gj, env: gitEnvBench });
        if (JSON.parse(r.stdout).created.length !== SIZES.pushJobs)
          throw new Error('git-push: not every key landed');
        return r.ms;
      },
      baseline: (ctx) =>
        run('git', ['push', '-q', ctx.b, 'HEAD:refs/heads/main'], { cwd: plain, env: gitEnvBench }).ms,
    });
    record('genjob push, first time', {
      ...m,
      target: 1.5,
      note: `${SIZES.pushJobs} received jobs vs git push of the same bytes in one commit`,
    });
    rmSync(base, { recursive: true, force: true });
  },

  'git-push-again'() {
    const { base, gj, bare } = pushRepos();
    const g = bare();
    genjob(['push', g], { cwd: gj, env: gitEnvBench });
    // `git push` with nothing new takes a few ms, less than Node's own start-up: the floor of any Node CLI
    // doing this is to start node and ask the remote once for the key refs
    const m = alternate({
      runs: RUNS * 2,
      genjob: () => {
        const r = genjob(['push', '--json', g], { cwd: gj, env: gitEnvBench });
        if (JSON.parse(r.stdout).created.length !== 0) throw new Error('git-push-again: sent something');
        return r.ms;
      },
      baseline: () =>
        sh(`'${NODE}' -e 0 && git ls-remote '${g}' 'refs/genjob/keys/*' >/dev/null`, {
          cwd: gj,
          env: gitEnvBench,
        }).ms,
    });
    record('genjob push, nothing new', {
      ...m,
      target: 1.2,
      note: `${SIZES.pushJobs} keys already on the remote; baseline = \`node -e 0\`, then \`git ls-remote\` of the key refs`,
    });
    rmSync(base, { recursive: true, force: true });
  },
});

Object.assign(
  stages,
  scaleStages({
    QUICK,
    TMP,
    NODE,
    GENJOB,
    run,
    genjob,
    alternate,
    record,
    freshRepo,
    median,
    round,
    MIN_PAIRS,
  }),
  journalStages({
    alternate,
    record,
    genjob,
    run,
    freshRepo,
    NODE,
    events: QUICK ? 100_000 : 1_000_000,
  }),
  checkStages({ alternate, record, genjob, run, TMP }),
  runStages({ QUICK, NODE, GENJOB, genjob, alternate, record, freshRepo, round }),
  reportStages({ record, genjob, freshRepo, median, runs: RUNS, jobs: QUICK ? 200 : 1000 }),
);

// ---------- ssh helpers ----------
/**
 * The argv genjob serve gives bubblewrap for a generator `true`: one job run with a `bwrap` first on
 * the remote PATH that writes its arguments down, then runs the real one. The per-run directories it
 * binds are gone by then; they are made again (empty) so the argv runs as it did.
 */
function captureBwrapArgv(ssh) {
  const real = spawnSync('sh', ['-c', 'command -v bwrap']).stdout.toString().trim();
  const shim = join(TMP, 'bwrap-shim');
  // written by the shim, which runs as serve's sandbox user when serve runs as root
  const log = join(shim, 'bwrap-argv');
  // the seccomp filter genjob hands bwrap on fd 3 (--seccomp 3), kept to hand it again
  const filter = join(shim, 'bwrap-filter');
  mkdirSync(shim, { recursive: true });
  chmodSync(shim, 0o777);
  writeFileSync(
    join(shim, 'bwrap'),
    [
      '#!/bin/sh',
      `for a in "$@"; do printf '%s\\0' "$a"; done > '${log}'`,
      `if cat <&3 > '${filter}' 2>/dev/null; then exec '${real}' "$@" 3<'${filter}'; fi`,
      `exec '${real}' "$@"`,
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  const root = freshRepo('second-argv');
  const input = smallFiles(root, 1, 4096)[0];
  queueJob(root, makeJob('capture the bwrap argv', [{ path: input.path, sha256: input.sha256 }]));
  const args = sshArgs(ssh, 'argv');
  args[args.indexOf('--remote-cmd') + 1] =
    `env PATH=${shim}:${process.env.PATH} ${args[args.indexOf('--remote-cmd') + 1]}`;
  genjob(['work', '--drain', ...args, '--generator', 'true', '--quiet'], { cwd: root });
  rmSync(root, { recursive: true, force: true });
  const argv = readFileSync(log, 'utf8').split('\0').slice(0, -1);
  for (let i = 0; i + 2 < argv.length; i++) {
    if (!['--bind', '--ro-bind', '--bind-try', '--ro-bind-try'].includes(argv[i])) continue;
    const src = argv[i + 1];
    if (spawnSync('test', ['-e', src]).status === 0) continue;
    if (/\.[a-z]+$/.test(src)) {
      mkdirSync(dirname(src), { recursive: true });
      writeFileSync(src, '{}');
    } else mkdirSync(src, { recursive: true });
  }
  return { argv, filter };
}

/** `n` round trips of one line on an open ssh session (the first, which opens it, not counted). */
async function sessionRoundTrips(ssh, n) {
  const child = spawn('ssh', ['-F', ssh.sshConfigFile, ssh.alias, 'cat'], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const lines = child.stdout[Symbol.asyncIterator]();
  const trip = async () => {
    const t0 = process.hrtime.bigint();
    child.stdin.write('x\n');
    await lines.next();
    return Number(process.hrtime.bigint() - t0) / 1e6;
  };
  await trip();
  const ms = [];
  for (let i = 0; i < n; i++) ms.push(await trip());
  child.stdin.end();
  await new Promise((r) => child.once('close', r));
  return ms;
}

function sshArgs(ssh, i) {
  return [
    '--host',
    ssh.alias,
    '--ssh-config',
    ssh.sshConfigFile,
    '--remote-cmd',
    `${NODE} ${GENJOB} serve --session --cache-dir ${join(TMP, `rcache-${i}`)}`,
  ];
}

function shipStage(ssh, root, inputs, label, note) {
  const listFile = join(TMP, 'ship-list');
  writeFileSync(listFile, `${inputs.map((i) => i.path).join('\n')}\n`);
  const m = alternate({
    prepare: (i) => {
      queueJob(root, makeJob(`ship run ${i}`, inputs));
      return i;
    },
    genjob: (i) => {
      const ms = genjob(['work', '--once', ...sshArgs(ssh, i), '--generator', 'true', '--quiet'], {
        cwd: root,
      }).ms;
      if (readdirSync(join(root, '.gen', 'received')).length !== i + 1)
        throw new Error(`${label}: job ${i} was not received`);
      return ms;
    },
    baseline: (i) => {
      const dir = join(TMP, `ship-dest-${i}`);
      const ms = sh(
        `tar cf - -T '${listFile}' | ssh -F '${ssh.sshConfigFile}' ${ssh.alias} 'mkdir -p ${dir} && tar xf - -C ${dir}'`,
        { cwd: root },
      ).ms;
      rmSync(dir, { recursive: true, force: true });
      return ms;
    },
  });
  process.stderr.write(
    `bench: ${label} runs: genjob ${m.genjobRuns.map(Math.round)} baseline ${m.baselineRuns.map(Math.round)}\n`,
  );
  record(label, { ...m, target: 1.3, note });
  rmSync(root, { recursive: true, force: true });
}

// ---------- main ----------
function machine() {
  const cpu = os.cpus()[0]?.model ?? 'unknown';
  const disk = spawnSync('sh', ['-c', 'df -hT /tmp | tail -1 | awk \'{print $1" "$2" "$3}\''])
    .stdout?.toString()
    .trim();
  return {
    nproc: os.cpus().length,
    cpu,
    memory_gib: Math.round(os.totalmem() / 1024 ** 3),
    node: process.version,
    disk,
    kernel: os.release(),
  };
}

async function main() {
  const started = Date.now();
  const loadAtStart = loadNow();
  process.stderr.write(
    `bench: ${QUICK ? 'quick' : 'full'} run, ${RUNS} pairs per stage, load ${loadAtStart.join(' ')} on ${CORES} cores, scratch ${TMP}\n`,
  );
  selfCheck();
  let ssh;
  try {
    for (const name of STAGES) {
      if (!wanted(name)) continue;
      process.stderr.write(`bench: ${name} ...\n`);
      const first = results.length;
      const before = loadNow();
      const othersBefore = foreignSnapshot(TMP);
      try {
        const needsSsh = SSH_STAGES.includes(name);
        if (needsSsh && !ssh) ssh = await startSshd();
        await stages[name](ssh);
      } catch (err) {
        process.stderr.write(`bench: ${name} failed: ${err.stack}\n`);
        results.push({
          stage: name,
          genjob: null,
          baseline: null,
          unit: null,
          ratio: null,
          target: null,
          met: false,
          error: String(err.message).slice(0, 500),
        });
      }
      const after = loadNow();
      const foreign = Math.round(foreignCores(othersBefore, foreignSnapshot(TMP)) * 100) / 100;
      for (const row of results.slice(first)) {
        row.load = { before, after, foreign_cores: foreign };
        row.verdict = verdictOf(row, foreign);
      }
    }
  } finally {
    await ssh?.stop();
    cleanup();
  }
  const out = join(here, 'results.json');
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
  const seconds = Math.round((Date.now() - started) / 1000);
  writeFileSync(
    join(here, 'machine.json'),
    `${JSON.stringify({ ...machine(), quick: QUICK, pairs: RUNS, load_at_start: loadAtStart, load_at_end: loadNow(), seconds }, null, 2)}\n`,
  );
  printTable();
  const count = (v) => results.filter((r) => r.verdict === v).length;
  process.stdout.write(
    `\n${count('met')} of ${results.length} targets met, ${count('missed')} missed, ${count('loaded')} measured while other processes took over ${FOREIGN_LIMIT} cores (no verdict), ${count('error')} failed; ${seconds} s; wrote ${out}\n`,
  );
}

function printTable() {
  const head = ['stage', 'genjob', 'baseline', 'unit', 'ratio', 'min', 'target', 'load', 'others', 'verdict'];
  const rows = results.map((r) => [
    r.stage,
    r.genjob ?? 'error',
    r.baseline ?? '—',
    r.unit ?? '',
    r.ratio ?? '—',
    r.ratio_min ?? '—',
    r.target === null ? '' : typeof r.target === 'string' ? r.target : `≤ ${r.target}`,
    r.load ? `${r.load.before[0]}→${r.load.after[0]}` : '',
    r.load ? r.load.foreign_cores : '',
    r.error ? `error: ${r.error.slice(0, 60)}` : r.verdict,
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => `| ${cells.map((c, i) => String(c).padEnd(w[i])).join(' | ')} |`;
  process.stdout.write(`${[line(head), line(w.map((n) => '-'.repeat(n))), ...rows.map(line)].join('\n')}\n`);
}

await main();
