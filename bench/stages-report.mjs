// Bench stage report: `genjob report` of 1,000 received jobs (each a one-line change of its own small
// file), written into a fresh directory (target < 10 s), then again into the same directory after one
// job's receipt changed: only that job's page and the index are written (target ≤ 0.2× the first).
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonical, makeJob, receivedJob, sha256, smallFiles } from './fixtures.mjs';

/** The stage, given run.mjs's measuring helpers. */
export function reportStages({ record, genjob, freshRepo, median, runs, jobs }) {
  return {
    report() {
      const root = freshRepo('report');
      const keys = [];
      for (const f of smallFiles(root, jobs, 2048)) {
        const made = makeJob(`Edit ${f.path}`, [{ path: f.path, sha256: f.sha256 }]);
        const after = Buffer.concat([f.data, Buffer.from('one more line\n')]);
        receivedJob(root, made, [{ path: f.path, sha256: sha256(after), bytes: after.length }], (file) =>
          writeFileSync(file, after),
        );
        keys.push(made.key);
      }
      const firsts = [];
      const seconds = [];
      for (let i = 0; i < runs; i++) {
        const out = join(root, `report-${i}`);
        firsts.push(genjob(['report', '--out', out], { cwd: root }).ms);
        const receipt = join(root, '.gen', 'receipts', `${keys[i]}.json`);
        const doc = JSON.parse(readFileSync(receipt, 'utf8'));
        writeFileSync(
          receipt,
          canonical({ ...doc, usage: { prompt_tokens: i + 1, completion_tokens: 1, requests: 1 } }),
        );
        const again = genjob(['report', '--json', '--out', out], { cwd: root });
        const written = JSON.parse(again.stdout).written;
        if (written.length !== 2)
          throw new Error(`second report wrote ${written.join(', ')}, not one page and the index`);
        seconds.push(again.ms);
        rmSync(out, { recursive: true, force: true });
      }
      const first = median(firsts);
      record(`report: ${jobs.toLocaleString('en')} jobs`, {
        genjob: first,
        baseline: null,
        ratio: null,
        target: '< 10000 ms',
        met: first < 10_000,
        note: `${jobs} received jobs, one 2 KiB file each`,
      });
      record('report: again, one job changed', {
        genjob: median(seconds),
        baseline: first,
        target: 0.2,
        note: 'baseline: the first report; writes one job page and the index',
      });
      rmSync(root, { recursive: true, force: true });
    },
  };
}
