// A job's page from its model (pure): each output's note when its bytes cannot be drawn, a receipt that
// does not decode said so, a log named by anything but a sha256 never linked, a judge's samples listed,
// and no script on the page.
import { describe, expect, it } from 'vitest';
import { loadAssets } from '../../src/report/assets.js';
import type { ReportFile, ReportJob } from '../../src/report/model.js';
import { type JobPageBytes, renderJob } from '../../src/report/render-job.js';
import { check, modelJob, modelReceipt } from './fixture.js';

const NONE: JobPageBytes = { diffs: new Map(), logTails: new Map(), shadowDiffs: new Map() };

const job = (more: Partial<ReportJob> = {}) =>
  modelJob('a', { inputs: [{ path: 'a.txt', sha256: 'b'.repeat(64) }], ...more });

const file = (more: Partial<ReportFile>): ReportFile => ({
  path: 'a.txt',
  sha256: 'c'.repeat(64),
  bytes: 'ok',
  input: 'b'.repeat(64),
  inputFound: true,
  hiddenAdded: 0,
  ...more,
});

describe('renderJob', () => {
  it.each([
    { bytes: 'drift' as const, says: 'do not hash to the receipt&#39;s digest' },
    { bytes: 'missing' as const, says: 'no longer in .gen/' },
    { bytes: 'large' as const, says: 'over 4 MiB' },
    { bytes: 'bad-path' as const, says: 'breaks the path rules' },
  ])('says why an output is not drawn: $bytes', ({ bytes, says }) => {
    expect(renderJob(job({ files: [file({ bytes })] }), NONE, loadAssets(), '0'.repeat(64))).toContain(says);
  });

  it('says when the input is no longer at hand', () => {
    const page = renderJob(job({ files: [file({ inputFound: false })] }), NONE, loadAssets(), '0'.repeat(64));
    expect(page).toContain('no longer at hand');
  });

  it('never links a log that is not named by a sha256, and lists a judge’s samples', () => {
    const page = renderJob(
      job({
        checks: [
          check('tests', 'fail', {
            attempts: [
              { exit: 1, ms: 10, log: '../../../etc/passwd' },
              { exit: 0, ms: 20, log: 'd'.repeat(64) },
            ],
          }),
          check('review', 'uncertain', {
            judge: [
              { pass: true, score: 0.8, reason: 'fine' },
              { pass: null, score: null, reason: 'no answer' },
            ],
          }),
        ],
      }),
      { ...NONE, logTails: new Map([['d'.repeat(64), 'last line']]) },
      loadAssets(),
      '0'.repeat(64),
    );
    expect(page).not.toContain('passwd');
    expect(page.match(/href="\.\.\/logs\//g)).toHaveLength(1);
    expect(page).toContain(
      `<a href="../logs/${'d'.repeat(64)}.html">full log<span class="vh"> of tests, attempt 2</span></a>`,
    );
    expect(page).toContain(
      '<pre class="log" tabindex="0" role="region" aria-label="tests, attempt 2: the last lines of its log">\nlast line</pre>',
    );
    expect(page).toContain('<span class="verdict v-error">error</span>');
    expect(page).not.toContain('<script');
  });

  it('says a receipt does not decode under the trust policy, with why', () => {
    const receipt = modelReceipt({ signer: 'signature not trusted' });
    const page = renderJob(
      job({ receipt, receiptProblem: 'bad signature <x>' }),
      NONE,
      loadAssets(),
      '0'.repeat(64),
    );
    expect(page).toContain("does not decode under this repository's trust policy: bad signature &lt;x&gt;");
  });
});
