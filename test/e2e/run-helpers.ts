// Helpers for the end-to-end tests of runs: a sandbox repository with N tracked modules (`mod/mNN.py`,
// in git's index so --each sees them), and a node generator whose behaviour a JSON file beside it sets
// between `work` invocations: fail (exit 1) or block (until a release file) when the instruction names
// one of the listed words, change a file the job only reads, or copy what it reads into its output.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { makeSandbox, type Sandbox } from './helpers.js';

export interface GenConfig {
  /** Exit 1 when the instruction contains one of these. */
  fail?: string[];
  /** Wait for `<base>/release` when the instruction contains one of these (after writing `<base>/started-<key>`). */
  block?: string[];
  /** Change the job's first read file (a contract breach the host must refuse). */
  writeRead?: boolean;
  /** Append the bytes of every read file to the output (shows they were shipped). */
  catReads?: boolean;
}

const GENERATOR = (
  base: string,
) => `import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
const cfg = JSON.parse(readFileSync(${JSON.stringify(join(base, 'gen.json'))}, 'utf8'));
const job = JSON.parse(readFileSync(process.env.GENJOB_JOB, 'utf8'));
const text = process.env.GENJOB_INSTRUCTION;
const has = (words) => (words ?? []).some((w) => text.includes(w));
if (has(cfg.fail)) { process.stderr.write('asked to fail\\n'); process.exit(1); }
if (has(cfg.block)) {
  writeFileSync(${JSON.stringify(join(base, 'started-'))} + process.env.GENJOB_KEY, '');
  while (!existsSync(${JSON.stringify(join(base, 'release'))})) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
}
for (const input of job.inputs) {
  const extra = cfg.catReads ? (job.reads ?? []).map((r) => readFileSync(r.path, 'utf8')).join('') : '';
  if (input.sha256 === null) writeFileSync(input.path, '# created: ' + text + '\\n' + extra);
  else appendFileSync(input.path, '# done: ' + text + '\\n' + extra);
}
if (cfg.writeRead) appendFileSync(job.reads[0].path, 'changed by the generator\\n');
`;

export interface RunBox extends Sandbox {
  /** `--generator node <base>/gen.mjs` */
  gen: string[];
  setGen(cfg: GenConfig): void;
}

/** The toy repository plus `n` modules mod/m00.py…, all in git's index; the run generator beside it. */
export async function runBox(n: number): Promise<RunBox> {
  const sb = await makeSandbox();
  mkdirSync(join(sb.repo, 'mod'));
  for (let i = 0; i < n; i++)
    writeFileSync(join(sb.repo, 'mod', `m${String(i).padStart(2, '0')}.py`), `# module ${i}\n`);
  writeFileSync(join(sb.repo, 'types.py'), 'Number = int\n');
  await execa('git', ['add', '-A'], { cwd: sb.repo });
  writeFileSync(join(sb.base, 'gen.mjs'), GENERATOR(sb.base));
  const setGen = (cfg: GenConfig) => writeFileSync(join(sb.base, 'gen.json'), JSON.stringify(cfg));
  setGen({});
  return { ...sb, gen: ['--generator', `node ${join(sb.base, 'gen.mjs')}`], setGen };
}

export function mod(i: number): string {
  return `mod/m${String(i).padStart(2, '0')}.py`;
}

/** The JSON result of a CLI run that must exit `code`. */
export function json<T = Record<string, unknown>>(
  r: { exitCode: number | undefined; stdout: string; stderr: string },
  code = 0,
): T {
  if (r.exitCode !== code) throw new Error(`exited ${r.exitCode}, expected ${code}: ${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout) as T;
}

/** `mint --each GLOB -m 'Edit {stem}' --run RUN`: the jobs minted, in the run's order. */
export async function mintRun(
  sb: Sandbox,
  run: string,
  glob = 'mod/*.py',
): Promise<Array<{ path: string; key: string }>> {
  return json<{ jobs: Array<{ path: string; key: string }> }>(
    await sb.genjob(['mint', '--each', glob, '-m', 'Edit {stem}', '--run', run, '--json']),
  ).jobs;
}
