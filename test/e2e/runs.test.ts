// Runs through the built CLI: a 40-job fan-out sealed as a run (the same mint again a no-op, another
// expansion exit 4, a new revision with NAME@2, nothing matching exit 2), worked and gated; --read
// shipped to the generator, hashed into the key and refused as an output (by the host, and by verify
// when a forged receipt names it); jobs that never produced a result counted against the rate; apply
// over a run going on past an aborted job; apply --gated and a gate record made stale (by a retry, or a
// receipt that stopped verifying: refused before anything is written); --wait and --timeout; two workers
// of one run, one claiming a job the other listed; the commands that take --run and many keys; and a
// branch's forgeries under .gen/ (a manifest that leaves a job out, a remint link to a job that passed),
// which gate and apply refuse or do not follow: only the user's own sealed mint and remint count.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { verifyPae } from '../../src/core/dsse.js';
import { GATE_PAYLOAD_TYPE } from '../../src/run/gate-record.js';
import { parsePublicKey } from '../../src/trust/keys.js';
import { CLI, genDir, mintKey, readJson, snapshot } from './helpers.js';
import { json, mintRun, mod, runBox } from './run-helpers.js';
import { spawnCli, until } from './worker-helpers.js';

interface Minted {
  run: string;
  sealed: boolean;
  jobs: Array<{ path: string; key: string; minted: boolean }>;
}

describe('a run minted with --each', () => {
  it('mints 40 jobs from a glob over tracked files, seals them, and is sealed against another expansion', async () => {
    const sb = await runBox(40);
    writeFileSync(join(sb.repo, 'mod', 'untracked.py'), '# not in git\n');
    const mint = ['mint', '--each', 'mod/*.py', '-m', 'Type {path} ({stem} in {dir})', '--run', 'r40'];
    const first = json<Minted>(await sb.genjob([...mint, '--json']));
    expect(first.sealed).toBe(true);
    expect(first.jobs.map((j) => j.path)).toEqual(Array.from({ length: 40 }, (_, i) => mod(i)));
    const manifest = readJson<{ keys: string[]; template: { instruction: string } }>(
      join(sb.repo, '.gen', 'runs', 'r40.json'),
    );
    expect(manifest.keys).toEqual(first.jobs.map((j) => j.key));
    expect(manifest.template.instruction).toBe('Type {path} ({stem} in {dir})');
    const job7 = readJson<{ instruction: string; inputs: Array<{ path: string }> }>(
      join(sb.repo, '.gen', 'queue', `${first.jobs[7]!.key}.json`),
    );
    expect(job7).toMatchObject({
      instruction: 'Type mod/m07.py (m07 in mod)',
      inputs: [{ path: 'mod/m07.py' }],
    });

    // the same command again writes nothing
    const queued = genDir(sb, 'queue');
    const bytes = readFileSync(join(sb.repo, '.gen', 'runs', 'r40.json'));
    const again = await sb.genjob(mint);
    expect(again.exitCode, again.stderr).toBe(0);
    // stdout: only the keys, one per job, for a script; what happened goes to stderr
    expect(again.stdout).toBe(first.jobs.map((j) => `${j.key}\n`).join(''));
    expect(again.stderr).toBe(
      `run r40 is already sealed with these 40 jobs: ${join(sb.repo, '.gen', 'runs', 'r40.json')}; nothing was written\n`,
    );
    expect(genDir(sb, 'queue')).toEqual(queued);
    expect(readFileSync(join(sb.repo, '.gen', 'runs', 'r40.json'))).toEqual(bytes);

    // another expansion under the sealed name: exit 4, nothing minted
    const other = await sb.genjob(['mint', '--each', 'mod/*.py', '-m', 'Document {path}', '--run', 'r40']);
    expect(other.exitCode).toBe(4);
    expect(other.stderr).toMatch(
      /^genjob: EGJ_RUN_SEALED: .*r40\.json: run r40 is sealed with another expansion .*--run r40@2\n$/,
    );
    expect(genDir(sb, 'queue')).toEqual(queued);

    // a glob over nothing is a typo: exit 2
    const none = await sb.genjob(['mint', '--each', 'nothing/**/*.py', '-m', 'x {path}', '--run', 'empty']);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(
      /^genjob: EGJ_NO_MATCH: --each "nothing\/\*\*\/\*\.py": matches no file git tracks/,
    );
    expect(existsSync(join(sb.repo, '.gen', 'runs', 'empty.json'))).toBe(false);

    // open while queued; worked, it closes at 40/40
    const open = await sb.genjob(['gate', '--run', 'r40']);
    expect(open.exitCode).toBe(75);
    expect(open.stdout).toMatch(
      /^gate r40: open, waiting for 40 of 40 job\(s\):\n {2}[0-9a-f]{12} {2}queued: no worker has taken it yet\n/,
    );
    const worked = await sb.genjob(['work', '--run', 'r40', '--concurrency', '2', '--quiet', ...sb.gen]);
    expect(worked.exitCode, worked.stderr).toBe(0);
    const gate = await sb.genjob(['gate', '--run', 'r40']);
    expect(gate.exitCode, gate.stderr).toBe(0);
    expect(gate.stdout).toMatch(
      /^gate r40: met: 40\/40 = 100\.0% passed \(min 100\.0%; 0 failed\)\ngate record 1: \.gen\/runs\/r40\.gates\/1\.json/,
    );

    // a new revision under the same name; `--run r40` now means it
    const rev2 = json<Minted>(
      await sb.genjob(['mint', '--each', 'mod/m0*.py', '-m', 'Document {path}', '--run', 'r40@2', '--json']),
    );
    expect([rev2.run, rev2.jobs.length]).toEqual(['r40@2', 10]);
    expect((await sb.genjob(['gate', '--run', 'r40'])).stdout).toMatch(
      /^gate r40@2: open, waiting for 10 of 10/,
    );
    expect((await sb.genjob(['gate', '--run', 'r40@1'])).exitCode).toBe(0);
  });
});

describe('--read', () => {
  it('ships the file for context, hashes it into the key, and stales the result when it changes', async () => {
    const sb = await runBox(2);
    const plain = json<{ key: string }>(await sb.genjob(['mint', '--json', '-m', 'Use the types', mod(0)]));
    const withRead = json<{ key: string; reads: unknown }>(
      await sb.genjob(['mint', '--json', '-m', 'Use the types', '--read', 'types.py', mod(0)]),
    );
    expect(withRead.key).not.toBe(plain.key);
    expect(withRead.reads).toEqual([{ path: 'types.py', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect((await sb.genjob(['show', withRead.key])).stdout).toContain(
      `\ninputs    ${mod(0)}\nreads     types.py\n`,
    );
    expect((await sb.genjob(['drop', plain.key])).exitCode).toBe(0);
    sb.setGen({ catReads: true });
    expect((await sb.genjob(['work', '--drain', '--quiet', ...sb.gen])).exitCode).toBe(0);
    // the read file changed after the job was worked: its result is stale, nothing is written
    writeFileSync(join(sb.repo, 'types.py'), 'Number = float\n');
    const stale = await sb.genjob(['apply', withRead.key]);
    expect(stale.exitCode).toBe(4);
    expect(stale.stderr).toMatch(/^genjob: EGJ_STALE: types\.py: the repository changed under the job/);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe('# module 0\n');
    writeFileSync(join(sb.repo, 'types.py'), 'Number = int\n');
    expect((await sb.genjob(['apply', withRead.key])).exitCode).toBe(0);
    // the generator saw the read file's bytes; the read file itself is untouched
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe(
      '# module 0\n# done: Use the types\nNumber = int\n',
    );
    expect(readFileSync(join(sb.repo, 'types.py'), 'utf8')).toBe('Number = int\n');
  });

  it('is refused as an output: a generator that changes it gets a rejected receipt (tamper)', async () => {
    const sb = await runBox(1);
    const { key } = json<{ key: string }>(
      await sb.genjob(['mint', '--json', '-m', 'x', '--read', 'types.py', mod(0)]),
    );
    sb.setGen({ writeRead: true });
    expect((await sb.genjob(['work', '--drain', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const v = await sb.genjob(['verify', key]);
    expect(v.exitCode).toBe(3);
    expect(v.stderr).toMatch(
      /EGJ_STATUS_NOT_OK: .*rejected: changed "types\.py", which the job ships read-only \(--read\): it is never an output/,
    );
    expect(readFileSync(join(sb.repo, 'types.py'), 'utf8')).toBe('Number = int\n');
  });

  it('is refused by verify when a forged receipt names it as an output (forged)', async () => {
    const sb = await runBox(1);
    const { key } = json<{ key: string }>(
      await sb.genjob(['mint', '--json', '-m', 'x', '--read', 'types.py', mod(0)]),
    );
    expect((await sb.genjob(['work', '--drain', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const file = join(sb.repo, '.gen', 'receipts', `${key}.json`);
    const receipt = readJson<{ outputs: Array<{ path: string; sha256: string; bytes: number }> }>(file);
    receipt.outputs.push({
      path: 'types.py',
      sha256: receipt.outputs[0]!.sha256,
      bytes: receipt.outputs[0]!.bytes,
    });
    writeFileSync(file, JSON.stringify(receipt));
    const v = await sb.genjob(['verify', key]);
    expect(v.exitCode).toBe(3);
    expect(v.stderr).toMatch(/^genjob: EGJ_PATH_OUTSIDE_CONTRACT: .*types\.py/);
    expect((await sb.genjob(['apply', key])).exitCode).toBe(3);
    expect(readFileSync(join(sb.repo, 'types.py'), 'utf8')).toBe('Number = int\n');
  });
});

describe('the rate of a run', () => {
  it('counts jobs that never produced a result against it (two cancelled of five)', async () => {
    const sb = await runBox(5);
    const jobs = await mintRun(sb, 'five');
    const cancel = await sb.genjob([
      'cancel',
      jobs[1]!.key.slice(0, 12),
      jobs[3]!.key.slice(0, 12),
      '--reason',
      'not needed',
    ]);
    expect(cancel.exitCode, cancel.stderr).toBe(0);
    expect(cancel.stdout.split('\n').filter((l) => l.includes('cancelled (was queue)'))).toHaveLength(2);
    expect((await sb.genjob(['work', '--run', 'five', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const gate = await sb.genjob(['gate', '--run', 'five', '--json']);
    expect(gate.exitCode).toBe(3);
    expect(JSON.parse(gate.stdout)).toMatchObject({
      state: 'closed',
      verdict: 'not-met',
      passed: 3,
      total: 5,
      rate: '3/5 = 60.0%',
      failed: [
        { key: jobs[1]!.key, why: 'dead: EGJ_CANCELLED' },
        { key: jobs[3]!.key, why: 'dead: EGJ_CANCELLED' },
      ],
    });
    const lenient = await sb.genjob(['gate', '--run', 'five', '--min-pass', '60%']);
    expect(lenient.exitCode).toBe(0);
    expect(lenient.stdout).toMatch(/^gate five: met: 3\/5 = 60\.0% passed \(min 60\.0%; 2 failed\)\n/);
    expect((await sb.genjob(['gate', '--run', 'five', '--max-fail', '1'])).exitCode).toBe(3);
    // each record with the seal of the gate that decided it
    expect(readdirSync(join(sb.repo, '.gen', 'runs', 'five.gates')).sort()).toEqual([
      '1.json',
      '1.seal',
      '2.json',
      '2.seal',
      '3.json',
      '3.seal',
    ]);
    // the same decision again writes nothing new
    expect((await sb.genjob(['gate', '--run', 'five', '--max-fail', '1'])).stdout).toContain(
      'unchanged since it was written',
    );
    expect(readdirSync(join(sb.repo, '.gen', 'runs', 'five.gates'))).toHaveLength(6);
    // giving up on the run: its received jobs go to dead/, the two cancelled ones are skipped
    const dropped = json<{ done: Array<{ key: string }>; skipped: number }>(
      await sb.genjob(['drop', '--run', 'five', '--json']),
    );
    expect([dropped.done.map((d) => d.key).sort(), dropped.skipped]).toEqual([
      [jobs[0]!.key, jobs[2]!.key, jobs[4]!.key].sort(),
      2,
    ]);
  });
});

describe('two paths that expand to one job', () => {
  it('make one job of the run: minted once, counted once by the gate, applied once', async () => {
    const sb = await runBox(2);
    // both modules name the pair: mod/m00.py and mod/m01.py give the same work order, types.py another
    const list = join(sb.base, 'pair.txt');
    writeFileSync(list, 'mod/m00.py\nmod/m01.py\ntypes.py\n');
    const mint = ['mint', '--each-file', list, '-m', 'Pair edit in {dir}', '--run', 'pair'];
    const also = ['--also', 'mod/m00.py', '--also', 'mod/m01.py'];
    const r = await sb.genjob([...mint, ...also, '--json']);
    const minted = json<Minted & { jobs: Array<{ same_as?: string }> }>(r);
    const [first, second, third] = minted.jobs;
    expect(second!.key).toBe(first!.key);
    expect(second).toMatchObject({ minted: false, same_as: first!.path });
    expect(third!.key).not.toBe(first!.key);
    const manifest = readJson(join(sb.repo, '.gen', 'runs', 'pair.json')) as { keys: string[] };
    expect(manifest.keys).toEqual([first!.key, third!.key]);
    // the same command again: the run is sealed with exactly these jobs
    const again = await sb.genjob([...mint, ...also]);
    expect(again.stderr).toContain('already sealed');
    // one key per job: the job two paths give is printed once
    expect(again.stdout).toBe(`${first!.key}\n${third!.key}\n`);
    // the pair's job fails, the other passes: 1 of 2 jobs (it was 1 of 3, the pair counted twice)
    sb.setGen({ fail: ['in mod'] });
    expect((await sb.genjob(['work', '--run', 'pair', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const gate = await sb.genjob(['gate', '--run', 'pair', '--min-pass', '0.5', '--json']);
    expect(gate.exitCode, gate.stdout).toBe(0);
    expect(JSON.parse(gate.stdout)).toMatchObject({ passed: 1, total: 2, rate: '1/2 = 50.0%' });
    const applied = await sb.genjob(['apply', '--run', 'pair', '--gated']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(readFileSync(join(sb.repo, 'types.py'), 'utf8')).toContain('# done: Pair edit in .');
  });
});

describe('two workers of one run', () => {
  it('share it: a job the other takes between listing the run and the first claim is skipped, not an error', async () => {
    const sb = await runBox(3);
    const jobs = await mintRun(sb, 'two');
    // a `bwrap` first on PATH that holds the sandbox probe (`bwrap … -- true`), which a worker runs
    // after listing the run's queued jobs and before its first claim, until the test says go
    const real = (await execa('sh', ['-c', 'command -v bwrap'])).stdout.trim();
    const bin = join(sb.base, 'slow-probe');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'bwrap'),
      `#!/bin/sh\nfor a; do last=$a; done\nif [ "$last" = true ]; then : > ${sb.base}/probing; while [ ! -e ${sb.base}/go ]; do sleep 0.05; done; fi\nexec ${real} "$@"\n`,
    );
    chmodSync(join(bin, 'bwrap'), 0o755);
    const late = spawnCli(sb.repo, ['work', '--run', 'two', '--quiet', '--json', ...sb.gen], {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
    });
    await until('the worker to probe its sandbox', () => existsSync(join(sb.base, 'probing')), 60_000);
    // meanwhile another worker takes the run's first job and delivers it
    const first = await sb.genjob(['work', jobs[0]!.key.slice(0, 12), '--quiet', ...sb.gen]);
    expect(first.exitCode, first.stderr).toBe(0);
    writeFileSync(join(sb.base, 'go'), '');
    const { exitCode, stdout, stderr } = await late;
    const r = json<{ outcomes: Array<{ key: string; outcome: string }> }>({
      exitCode,
      stdout: String(stdout),
      stderr: String(stderr),
    });
    expect(r.outcomes.map((o) => [o.key, o.outcome])).toEqual([
      [jobs[1]!.key, 'received'],
      [jobs[2]!.key, 'received'],
    ]);
  });
});

describe('a run whose material gc pruned', () => {
  it('keeps its decided gate: applied jobs pruned and a reminted one followed still decide met, unchanged', async () => {
    const sb = await runBox(3);
    const jobs = await mintRun(sb, 'kept');
    expect((await sb.genjob(['work', '--run', 'kept', '--quiet', ...sb.gen])).exitCode).toBe(0);
    // m02 changed in the tree: its job is stale, and its successor stands for it in the run
    writeFileSync(join(sb.repo, mod(2)), '# module 2, edited\n');
    expect((await sb.genjob(['remint', jobs[2]!.key])).exitCode).toBe(0);
    expect((await sb.genjob(['work', '--run', 'kept', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const met = await sb.genjob(['gate', '--run', 'kept']);
    expect(met.exitCode, met.stdout).toBe(0);
    expect((await sb.genjob(['apply', '--run', 'kept', '--gated'])).exitCode).toBe(0);
    expect((await sb.genjob(['gc', '--older-than', '0s'])).exitCode).toBe(0);
    expect(existsSync(join(sb.repo, '.gen', 'applied', `${jobs[0]!.key}.json`))).toBe(false);
    // the evidence is gone; the user's record judged these very jobs, and it stands (it said 75 for good:
    // every pruned job "not in the store", the remint's link pruned with the old job's dead letter)
    const again = await sb.genjob(['gate', '--run', 'kept']);
    expect(again.exitCode, again.stdout).toBe(0);
    expect(again.stdout).toMatch(/^gate kept: met: 3\/3 = 100\.0% passed/);
    expect(again.stdout).toContain('gate record 1: ');
    expect(again.stdout).toContain('unchanged since it was written');
    expect((await sb.genjob(['status', '--run', 'kept'])).stdout).not.toContain(jobs[2]!.key.slice(0, 12));
  });

  it('keeps a NOT met gate NOT met once a dropped job is pruned; forged: a record no gate of the user sealed is not taken', async () => {
    const sb = await runBox(2);
    const jobs = await mintRun(sb, 'lost');
    expect((await sb.genjob(['drop', jobs[1]!.key])).exitCode).toBe(0);
    expect((await sb.genjob(['work', '--run', 'lost', '--quiet', ...sb.gen])).exitCode).toBe(0);
    expect((await sb.genjob(['gate', '--run', 'lost'])).exitCode).toBe(3);
    expect((await sb.genjob(['gc', '--older-than', '0s'])).exitCode).toBe(0);
    expect(existsSync(join(sb.repo, '.gen', 'tombstones', `${jobs[1]!.key}.json`))).toBe(true);
    const after = await sb.genjob(['gate', '--run', 'lost']);
    expect(after.exitCode, after.stdout).toBe(3);
    expect(after.stdout).toMatch(/^gate lost: NOT met: 1\/2 = 50\.0% passed/);
    expect(after.stdout).toContain('unchanged since it was written');
    // a branch adds record 2, unsealed, judging the pruned job passed: the gate takes none of it
    const gates = join(sb.repo, '.gen', 'runs', 'lost.gates');
    const record = readJson(join(gates, '1.json')) as { keys: Array<{ pass: boolean; why?: string }> };
    for (const k of record.keys) {
      k.pass = true;
      delete k.why;
    }
    writeFileSync(
      join(gates, '2.json'),
      JSON.stringify({ ...record, verdict: 'met', passed: 2, rate: '2/2 = 100.0%' }),
    );
    const forged = await sb.genjob(['gate', '--run', 'lost', '--json']);
    expect(forged.exitCode, forged.stdout).toBe(3);
    expect(JSON.parse(forged.stdout)).toMatchObject({ verdict: 'not-met', passed: 1, total: 2 });
  });
});

describe('acting on a run', () => {
  it('applies every job of a run but an aborted one, exits 3 naming it, and retries only that one', async () => {
    const sb = await runBox(3);
    const jobs = await mintRun(sb, 'three');
    sb.setGen({ fail: ['m01'] });
    expect((await sb.genjob(['work', '--run', 'three', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const status = await sb.genjob(['status', '--run', 'three']);
    expect(status.stdout).toMatch(
      /^run three: 3 job\(s\) \(\.gen\/runs\/three\.json\)\nqueue 0 {2}running 0 {2}received 3 \(ok 2, aborted 1, rejected 0\)/,
    );

    const applied = await sb.genjob(['apply', '--run', 'three']);
    expect(applied.exitCode).toBe(3);
    const bad = jobs[1]!.key.slice(0, 12);
    expect(applied.stdout).toContain(`${bad} not applied (EGJ_STATUS_NOT_OK)\n`);
    expect(applied.stdout).toMatch(
      new RegExp(`\n1 of 3 job\\(s\\) not applied: ${bad} \\(EGJ_STATUS_NOT_OK\\)\n$`),
    );
    expect(applied.stderr).toMatch(/^genjob: EGJ_STATUS_NOT_OK: [^\n]*asked to fail\n$/);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe('# module 0\n# done: Edit m00\n');
    expect(readFileSync(join(sb.repo, mod(1)), 'utf8')).toBe('# module 1\n');
    expect(readFileSync(join(sb.repo, mod(2)), 'utf8')).toBe('# module 2\n# done: Edit m02\n');

    const verify = await sb.genjob(['verify', '--run', 'three', '--stop-on-first']);
    expect(verify.exitCode).toBe(3);
    expect(verify.stdout).toContain(
      `${bad} FAILED: EGJ_STATUS_NOT_OK\nstopped at the first failure (--stop-on-first); 1 job(s) not tried\n`,
    );

    // retry --run takes the run's failures only
    sb.setGen({});
    const retried = json<{ done: Array<{ key: string }>; skipped: number }>(
      await sb.genjob(['retry', '--run', 'three', '--json']),
    );
    expect([retried.done.map((d) => d.key), retried.skipped]).toEqual([[jobs[1]!.key], 2]);
    expect(
      (await sb.genjob(['work', '--run', 'three', '--quiet', '--retry-aborted', ...sb.gen])).exitCode,
    ).toBe(0);
    const again = await sb.genjob(['apply', '--all', '--run', 'three']);
    expect(again.exitCode, again.stderr).toBe(0);
    expect(readFileSync(join(sb.repo, mod(1)), 'utf8')).toBe('# module 1\n# done: Edit m01\n');
  });

  it('applies with --gated exactly what the closed gate accepted, and refuses a stale gate record', async () => {
    const sb = await runBox(3);
    const jobs = await mintRun(sb, 'g');
    sb.setGen({ fail: ['m02'] });
    expect((await sb.genjob(['work', '--run', 'g', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const none = await sb.genjob(['apply', '--run', 'g', '--gated']);
    expect([none.exitCode, none.stderr]).toEqual([
      3,
      expect.stringMatching(/^genjob: EGJ_GATE_MISSING: .*run g has no closed gate/),
    ]);
    expect((await sb.genjob(['gate', '--run', 'g'])).exitCode).toBe(3); // 2/3 under 100%
    const notMet = await sb.genjob(['apply', '--run', 'g', '--gated']);
    expect([notMet.exitCode, notMet.stderr]).toEqual([
      3,
      expect.stringMatching(/^genjob: EGJ_GATE_NOT_MET: .*\(2\/3 = 66\.6%\); nothing was applied/),
    ]);
    expect((await sb.genjob(['gate', '--run', 'g', '--min-pass', '0.6'])).exitCode).toBe(0);

    // a retry after closing: the record no longer names what is there
    expect((await sb.genjob(['retry', jobs[2]!.key])).exitCode).toBe(0);
    const stale = await sb.genjob(['apply', '--run', 'g', '--gated']);
    expect([stale.exitCode, stale.stderr]).toEqual([
      4,
      expect.stringMatching(/^genjob: EGJ_GATE_STALE: .*gate record 2 of run g is stale/),
    ]);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe('# module 0\n');
    expect((await sb.genjob(['gate', '--run', 'g'])).stdout).toMatch(
      /gate record 2 is stale: receipts or checks changed since it closed/,
    );
    expect((await sb.genjob(['drop', jobs[2]!.key])).exitCode).toBe(0);
    expect((await sb.genjob(['gate', '--run', 'g', '--min-pass', '0.6'])).exitCode).toBe(0);
    const gated = json<{ results: Array<{ key: string; status: string }> }>(
      await sb.genjob(['apply', '--run', 'g', '--gated', '--json']),
    );
    expect(gated.results.map((r) => [r.key, r.status])).toEqual([
      [jobs[0]!.key, 'applied'],
      [jobs[1]!.key, 'applied'],
    ]);
    expect(readFileSync(join(sb.repo, mod(2)), 'utf8')).toBe('# module 2\n');
  });

  it("acts only on a gate record the user's gate decided: not one from a branch or another machine", async () => {
    const sb = await runBox(3);
    await mintRun(sb, 'b');
    sb.setGen({ fail: ['m02'] });
    expect((await sb.genjob(['work', '--run', 'b', '--quiet', ...sb.gen])).exitCode).toBe(0);
    expect((await sb.genjob(['gate', '--run', 'b'])).exitCode).toBe(3); // 2/3 under 100%
    const gates = join(sb.repo, '.gen', 'runs', 'b.gates');
    const before = snapshot(sb.repo);
    const gated = async (code: string) => {
      const r = await sb.genjob(['apply', '--run', 'b', '--gated']);
      expect([r.exitCode, r.stderr]).toEqual([3, expect.stringMatching(new RegExp(`^genjob: ${code}: `))]);
      expect(snapshot(sb.repo)).toEqual(before);
      return r.stderr;
    };
    // a met record decided under a laxer policy by another user's genjob (another secret) over the same
    // run, minted there too, then copied in: the user's run seal kept, the other's record beside it
    const other = { ...process.env, XDG_CACHE_HOME: join(sb.base, 'other-cache') };
    const otherCli = (args: string[]) =>
      execa('node', [CLI, ...args], { cwd: sb.repo, env: other, reject: false });
    const runSeal = join(sb.repo, '.gen', 'runs', 'b.seal');
    const mine = readFileSync(runSeal);
    expect(
      (await otherCli(['mint', '--each', 'mod/*.py', '-m', 'Edit {stem}', '--run', 'b'])).stderr,
    ).toContain('run b sealed as yours (it was there without your seal)');
    const lax = await otherCli(['gate', '--run', 'b', '--min-pass', '0.5']);
    expect(lax.exitCode, lax.stderr).toBe(0);
    writeFileSync(runSeal, mine);
    expect(await gated('EGJ_GATE_UNSEALED')).toMatch(
      /gate record 2 of run b was not decided by your genjob gate/,
    );
    // the record's verdict turned, with the user's own seal of record 1 beside it
    const record = readJson<{ verdict: string }>(join(gates, '1.json'));
    writeFileSync(join(gates, '3.json'), JSON.stringify({ ...record, verdict: 'met' }));
    writeFileSync(join(gates, '3.seal'), readFileSync(join(gates, '1.seal')));
    await gated('EGJ_GATE_UNSEALED');
    // the user's gate decides here: its own record after them, sealed, which apply --gated reads
    const again = await sb.genjob(['gate', '--run', 'b']);
    expect([again.exitCode, again.stdout]).toEqual([3, expect.stringMatching(/\ngate record 4: /)]);
    await gated('EGJ_GATE_NOT_MET');
    expect((await sb.genjob(['gate', '--run', 'b', '--min-pass', '0.5'])).exitCode).toBe(0);
    const applied = await sb.genjob(['apply', '--run', 'b', '--gated']);
    expect(applied.exitCode, applied.stderr).toBe(0);
  });

  it('decides and applies only a run the user minted: not a forged manifest a branch commits to leave a job out', async () => {
    const sb = await runBox(3);
    const jobs = await mintRun(sb, 'm');
    sb.setGen({ fail: ['m02'] });
    expect((await sb.genjob(['work', '--run', 'm', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const runs = join(sb.repo, '.gen', 'runs');
    const file = join(runs, 'm.json');
    const manifest = readJson<{ expansion: unknown[]; keys: string[] }>(file);
    // a branch commits the run's manifest without the job that fails; checking it out puts it in .gen/
    const git = (...args: string[]) => execa('git', args, { cwd: sb.repo });
    await git('checkout', '-q', '-b', 'feature');
    writeFileSync(
      file,
      JSON.stringify({
        ...manifest,
        expansion: manifest.expansion.slice(0, 2),
        keys: manifest.keys.slice(0, 2),
      }),
    );
    await git('add', '-f', '.gen/runs/m.json');
    await git('-c', 'user.name=x', '-c', 'user.email=x@example.com', 'commit', '-qm', 'a run that passes');
    const before = snapshot(sb.repo);
    const runsBefore = readdirSync(runs).sort();
    for (const args of [
      ['gate', '--run', 'm'],
      ['gate', '--run', 'm', '--min-pass', '0.5'],
      ['apply', '--run', 'm', '--gated'],
      ['apply', '--run', 'm'],
    ]) {
      const r = await sb.genjob(args);
      expect([r.exitCode, r.stderr]).toEqual([
        3,
        expect.stringMatching(/^genjob: EGJ_RUN_UNSEALED: \S+m\.json: run m was not minted by your genjob /),
      ]);
      expect(snapshot(sb.repo)).toEqual(before);
      expect(readdirSync(runs).sort()).toEqual(runsBefore); // no gate record, no seal
    }
    // the user's own mint over this tree expands to the three jobs: another run, never sealed as theirs
    const again = await sb.genjob(['mint', '--each', 'mod/*.py', '-m', 'Edit {stem}', '--run', 'm']);
    expect([again.exitCode, again.stderr]).toEqual([
      4,
      expect.stringMatching(/EGJ_RUN_SEALED: .*2 job\(s\) there, 3 now/),
    ]);
    expect((await sb.genjob(['gate', '--run', 'm'])).exitCode).toBe(3);

    // the manifest the user minted, back without its seal (as from another machine): the same mint seals
    // it, mints nothing, and the gate decides over the three jobs
    writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
    rmSync(join(runs, 'm.seal'));
    expect((await sb.genjob(['gate', '--run', 'm'])).stderr).toMatch(/EGJ_RUN_UNSEALED/);
    const adopted = json<{ sealed: boolean; adopted?: boolean; minted: number }>(
      await sb.genjob(['mint', '--each', 'mod/*.py', '-m', 'Edit {stem}', '--run', 'm', '--json']),
    );
    expect(adopted).toMatchObject({ sealed: false, adopted: true, minted: 0 });
    const same = json<{ sealed: boolean; adopted?: boolean }>(
      await sb.genjob(['mint', '--each', 'mod/*.py', '-m', 'Edit {stem}', '--run', 'm', '--json']),
    );
    expect([same.sealed, same.adopted]).toEqual([false, undefined]);
    const decided = await sb.genjob(['gate', '--run', 'm', '--json']);
    expect(json<{ passed: number; total: number }>(decided, 3)).toMatchObject({ passed: 2, total: 3 });
    expect(jobs).toHaveLength(3);

    // without a cache directory for the secret, nothing can be sealed or checked: EGJ_IO, nothing written
    const noCache = { env: { XDG_CACHE_HOME: join(sb.base, 'gen.json') } }; // a file, not a directory
    const gen = snapshot(join(sb.repo, '.gen'), []);
    for (const args of [
      ['mint', '--each', 'mod/*.py', '-m', 'Other {stem}', '--run', 'n'],
      ['gate', '--run', 'm'],
      ['apply', '--run', 'm'],
    ]) {
      const r = await sb.genjob(args, noCache);
      expect([r.exitCode, r.stderr]).toEqual([5, expect.stringMatching(/^genjob: EGJ_IO: .*gen\.json/)]);
    }
    expect(snapshot(join(sb.repo, '.gen'), [])).toEqual(gen);
  });

  it("follows a remint only along the user's own links: a forged dead letter a branch adds cannot stand a passing job in for a cancelled one", async () => {
    const sb = await runBox(3);
    const jobs = await mintRun(sb, 'l');
    expect((await sb.genjob(['cancel', jobs[2]!.key])).exitCode).toBe(0);
    expect((await sb.genjob(['work', '--run', 'l', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const notMet = /^gate l: NOT met: 2\/3 = 66\.6% passed/;
    expect((await sb.genjob(['gate', '--run', 'l'])).stdout).toMatch(notMet);
    // a newer dead letter of the cancelled job, as a remint leaves one, naming the job that passed
    const dead = join(sb.repo, '.gen', 'dead');
    const name = `${jobs[2]!.key}.job.9999999999999-aaaaaa`;
    const cancelled = readdirSync(dead).find((f) => f.startsWith(jobs[2]!.key) && !f.endsWith('.why.json'))!;
    writeFileSync(join(dead, name), readFileSync(join(dead, cancelled)));
    const link = {
      key: jobs[2]!.key,
      code: 'EGJ_SUPERSEDED',
      reason: `superseded by ${jobs[0]!.key}`,
      superseded_by: jobs[0]!.key,
    };
    writeFileSync(join(dead, `${name}.why.json`), JSON.stringify(link));
    // a reader follows it (status shows what stands for each key), the gate does not
    const status = await sb.genjob(['status', '--run', 'l', '--json']);
    expect(status.exitCode, status.stderr).toBe(0);
    const before = snapshot(sb.repo);
    const gate = await sb.genjob(['gate', '--run', 'l', '--json']);
    const decided = json<{ passed: number; total: number; failed: Array<{ key: string; why: string }> }>(
      gate,
      3,
    );
    expect([decided.passed, decided.total]).toEqual([2, 3]);
    expect(decided.failed).toMatchObject([{ key: jobs[2]!.key, why: expect.stringMatching(/^dead: /) }]);
    const applied = await sb.genjob(['apply', '--run', 'l', '--gated']);
    expect([applied.exitCode, applied.stderr]).toEqual([3, expect.stringMatching(/EGJ_GATE_NOT_MET/)]);
    expect(snapshot(sb.repo)).toEqual(before);
    // the same link with a seal copied from another remint's dead letter is no link of this pair either
    writeFileSync(join(dead, `${name}.why.json`), JSON.stringify({ ...link, link_seal: 'ab'.repeat(32) }));
    expect((await sb.genjob(['gate', '--run', 'l'])).stdout).toMatch(notMet);
    // nor does apply --run take a job outside the run that a link names
    const other = await mintKey(sb, 'Outside the run', ['types.py']);
    expect((await sb.genjob(['work', other, '--quiet', ...sb.gen])).exitCode).toBe(0);
    writeFileSync(join(dead, `${name}.why.json`), JSON.stringify({ ...link, superseded_by: other }));
    const run = json<{ results: Array<{ key: string }> }>(await sb.genjob(['apply', '--run', 'l', '--json']));
    expect(run.results.map((r) => r.key)).toEqual([jobs[0]!.key, jobs[1]!.key]);
    expect(readFileSync(join(sb.repo, 'types.py'), 'utf8')).toBe('Number = int\n');
  });

  it('takes a met record as stale once a receipt stops verifying, and apply --gated writes nothing', async () => {
    const sb = await runBox(2);
    const jobs = await mintRun(sb, 'v');
    expect((await sb.genjob(['work', '--run', 'v', '--quiet', ...sb.gen])).exitCode).toBe(0);
    expect((await sb.genjob(['gate', '--run', 'v'])).exitCode).toBe(0);
    // the same receipt bytes, but its output edited: it no longer verifies
    const out = join(sb.repo, '.gen', 'out', jobs[0]!.key, jobs[0]!.path);
    const good = readFileSync(out);
    chmodSync(out, 0o644);
    writeFileSync(out, `${good}# edited\n`);
    const before = snapshot(sb.repo);
    const refused = await sb.genjob(['apply', '--run', 'v', '--gated']);
    expect([refused.exitCode, refused.stderr]).toEqual([
      4,
      expect.stringMatching(/^genjob: EGJ_GATE_STALE: .*gate record 1 of run v is stale/),
    ]);
    expect(snapshot(sb.repo)).toEqual(before);
    const notMet = await sb.genjob(['gate', '--run', 'v']);
    expect(notMet.exitCode).toBe(3);
    expect(notMet.stdout).toMatch(/\ngate record 2: [^\n]*\)\n$/); // a new record, not 1 "unchanged"
    // verifying again: a met record once more, which apply --gated takes whole
    writeFileSync(out, good);
    const met = await sb.genjob(['gate', '--run', 'v']);
    expect([met.exitCode, met.stdout]).toEqual([0, expect.stringMatching(/\ngate record 3: /)]);
    const applied = await sb.genjob(['apply', '--run', 'v', '--gated']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe('# module 0\n# done: Edit m00\n');
  });

  it('takes a met record as stale while a dead key of it holds a live lease (same evidence, gate open again)', async () => {
    const sb = await runBox(2);
    const jobs = await mintRun(sb, 'l');
    expect((await sb.genjob(['cancel', jobs[1]!.key, '--reason', 'not needed'])).exitCode).toBe(0);
    expect((await sb.genjob(['work', '--run', 'l', '--quiet', ...sb.gen])).exitCode).toBe(0);
    expect((await sb.genjob(['gate', '--run', 'l', '--min-pass', '50%'])).exitCode).toBe(0);
    // a worker elsewhere holds the dead key: the receipts, dead letters and checks are as the record
    // names them, but the key is not terminal, so the gate would not close now
    const lease = join(sb.repo, '.gen', 'leases', `${jobs[1]!.key}.json`);
    writeFileSync(
      lease,
      JSON.stringify({
        key: jobs[1]!.key,
        epoch: 1,
        worker: { id: 'w-elsewhere', host: 'another-box', pid: 4242 },
        ttl_s: 600,
        claimed_at: new Date().toISOString(),
        destination: 'local',
      }),
    );
    const before = snapshot(sb.repo);
    const refused = await sb.genjob(['apply', '--run', 'l', '--gated']);
    expect([refused.exitCode, refused.stderr]).toEqual([
      4,
      expect.stringMatching(/^genjob: EGJ_GATE_STALE: .*gate record 1 of run l is stale/),
    ]);
    expect(snapshot(sb.repo)).toEqual(before);
    // the lease gone, the same record stands again and apply --gated takes it
    rmSync(lease);
    const applied = await sb.genjob(['apply', '--run', 'l', '--gated']);
    expect(applied.exitCode, applied.stderr).toBe(0);
    expect(readFileSync(join(sb.repo, mod(0)), 'utf8')).toBe('# module 0\n# done: Edit m00\n');
  });

  it('waits with --wait until --timeout, still 75; refuses a --require-check no checker answers to; signs its record', async () => {
    const sb = await runBox(1);
    await mintRun(sb, 'w');
    const waited = await sb.genjob(['gate', '--run', 'w', '--wait', '--timeout', '1s']);
    expect(waited.exitCode).toBe(75);
    expect(waited.stdout).toMatch(/\n\(exit 75: --timeout ended the wait; the gate is still open\)\n$/);
    const checks = await sb.genjob(['gate', '--run', 'w', '--require-check', 'tests']);
    expect([checks.exitCode, checks.stderr]).toEqual([
      2,
      expect.stringMatching(/^genjob: EGJ_CHECKER_UNKNOWN: --require-check tests: .*it declares none/),
    ]);
    expect((await sb.genjob(['gate', '--run', 'w', '--timeout', '1s'])).exitCode).toBe(2);

    expect((await sb.genjob(['work', '--run', 'w', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const keyFile = join(sb.base, 'gate.key');
    const kg = json<{ public_key?: string; publicKey?: string }>(
      await sb.genjob(['keygen', '--out', keyFile, '--json']),
    );
    const pub = parsePublicKey((kg.public_key ?? kg.publicKey)!);
    const signed = json<{ record: { file: string; signed: boolean } }>(
      await sb.genjob(['gate', '--run', 'w', '--json'], { env: { GENJOB_SIGN_KEY: keyFile } }),
    );
    expect(signed.record.signed).toBe(true);
    const env = readJson<{ payloadType: string; payload: string; signatures: Array<{ sig: string }> }>(
      signed.record.file,
    );
    expect(env.payloadType).toBe(GATE_PAYLOAD_TYPE);
    const payload = Buffer.from(env.payload, 'base64');
    expect(verifyPae(GATE_PAYLOAD_TYPE, payload, pub, Buffer.from(env.signatures[0]!.sig, 'base64'))).toBe(
      true,
    );
    expect(JSON.parse(payload.toString())).toMatchObject({ run: 'w', verdict: 'met', passed: 1, total: 1 });
    // cancel --run: every queued job of the run
    await sb.genjob(['mint', '--each', 'mod/*.py', '-m', 'Other {stem}', '--run', 'c']);
    const cancelled = await sb.genjob(['cancel', '--run', 'c']);
    expect(cancelled.exitCode, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toMatch(/^[0-9a-f]{12} cancelled \(was queue\): dead\//);
  });

  it('forged: gate files a branch commits (junk, a number past 2^53) leave an open gate 75 and a closed one deciding', async () => {
    const sb = await runBox(1);
    await mintRun(sb, 'j');
    const gates = join(sb.repo, '.gen', 'runs', 'j.gates');
    mkdirSync(gates);
    writeFileSync(join(gates, '3.json'), 'junk\n');
    writeFileSync(join(gates, '100000000000000000000.json'), 'junk\n');
    const open = await sb.genjob(['gate', '--run', 'j', '--json']);
    expect([open.exitCode, JSON.parse(open.stdout).state], open.stderr).toEqual([75, 'open']);
    expect((await sb.genjob(['work', '--run', 'j', '--quiet', ...sb.gen])).exitCode).toBe(0);
    const closed = json<{ verdict: string; record: { seq: number; fresh: boolean } }>(
      await sb.genjob(['gate', '--run', 'j', '--json']),
    );
    expect(closed).toMatchObject({ verdict: 'met', record: { seq: 4, fresh: true } });
    expect((await sb.genjob(['apply', '--run', 'j', '--gated', '--dry-run'])).exitCode).toBe(0);
  });
});
