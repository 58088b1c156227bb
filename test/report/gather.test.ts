// What the report gathers from .gen/: each job's state, instruction and receipt facts (the signer as the
// trust policy names it), outputs and inputs found only by their digests (a drifted out/ file or a path
// that leaves the repository is never read into a page), shadow verdicts, and tokens and cost per
// generator and mode.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonical, sha256 } from '../../bench/fixtures.mjs';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { RECEIPT_PAYLOAD_TYPE, signEnvelope } from '../../src/core/dsse.js';
import { loadAssets } from '../../src/report/assets.js';
import { ReportBytes } from '../../src/report/bytes.js';
import { NO_CHECKS } from '../../src/report/check-source.js';
import { gatherReport } from '../../src/report/gather.js';
import { jobPageBytes } from '../../src/report/job-bytes.js';
import { renderIndex } from '../../src/report/render-index.js';
import { renderJob } from '../../src/report/render-job.js';
import { keyIdOf, publicKeyString } from '../../src/trust/keys.js';
import { addTrustedKey } from '../../src/trust/trust-file.js';
import { check, fixtureRepo, inputText, patchReceipt, tableChecks } from './fixture.js';

describe('gatherReport', () => {
  it('hostile: flags the hidden characters added lines bring in when the input loses as many elsewhere', async () => {
    // four variation selectors go, four bidi controls come: a count of the file's totals says none added
    const before = 'notes = "\u26a0\ufe0f \u26a0\ufe0f \u26a0\ufe0f \u26a0\ufe0f"\nok\n';
    const after = 'notes = "warnings"\nif (role != "user\u202e \u2066// admin only\u2069 \u2066") {\nok\n';
    const { store, jobs } = fixtureRepo(1, { before: () => before, after: () => after });
    const model = await gatherReport(store, { checks: NO_CHECKS });
    expect(model.jobs[0]!.files[0]!.hiddenAdded).toBe(4);
    const page = jobPageBytes(new ReportBytes(store), model.jobs[0]!).diffs.get(jobs[0]!.path);
    expect(page?.hidden).toBe(4);
    const index = renderIndex(model, loadAssets(), '0'.repeat(64));
    expect(index).toContain('<span class="hidden-added">adds 4 hidden character(s)</span>');
    expect(index).toContain('data-hidden="added"');
  });

  it('shows an instruction that starts with a newline whole: its first line with text on the index, every line on its page', async () => {
    const { store, jobs } = fixtureRepo(1, { instruction: () => '\n\nFix the parser\nsecond line' });
    const model = await gatherReport(store, { checks: NO_CHECKS });
    const index = renderIndex(model, loadAssets(), '0'.repeat(64));
    expect(index).toContain(`${jobs[0]!.key.slice(0, 12)}</a><br><span class="muted">Fix the parser</span>`);
    const page = renderJob(
      model.jobs[0]!,
      jobPageBytes(new ReportBytes(store), model.jobs[0]!),
      loadAssets(),
      '0'.repeat(64),
    );
    // a browser drops the one newline right after <pre>: the page puts its own there, so the instruction's stay
    expect(page).toContain('<pre class="instruction">\n\n\nFix the parser\nsecond line</pre>');
  });

  it('counts the hidden characters an output holds beyond its input, and the index flags that job', async () => {
    const { store, jobs } = fixtureRepo(3, {
      after: (i) =>
        [
          `${inputText(0)}if (role != "user\u202e \u2066// admin only\u2069 \u2066") {\n`,
          inputText(1).replace('line 4', 'line\u200b 4'),
          inputText(2).replace('line 4', 'line four'),
        ][i]!,
    });
    const model = await gatherReport(store, { checks: NO_CHECKS });
    const added = jobs.map((j) => model.jobs.find((m) => m.key === j.key)!.files[0]!.hiddenAdded);
    expect(added).toEqual([4, 1, 0]);
    const index = renderIndex(model, loadAssets(), '0'.repeat(64));
    const row = (key: string) => index.slice(index.indexOf(`jobs/${key}.html`)).split('</tr>')[0]!;
    expect(row(jobs[0]!.key)).toContain('<span class="hidden-added">adds 4 hidden character(s)</span>');
    expect(row(jobs[1]!.key)).toContain('adds 1 hidden character(s)');
    expect(row(jobs[2]!.key)).not.toContain('hidden-added');
    expect(index).toContain('<select id="f-hidden">');
    const rowTag = (key: string) => index.slice(index.lastIndexOf('<tr ', index.indexOf(`jobs/${key}.html`)));
    expect(rowTag(jobs[0]!.key)).toMatch(/^<tr [^>]*data-hidden="added">/);
    expect(rowTag(jobs[2]!.key)).toMatch(/^<tr [^>]*data-hidden="none">/);
    // no job adds any: no such filter
    const plain = await gatherReport(fixtureRepo(1).store, { checks: NO_CHECKS });
    expect(renderIndex(plain, loadAssets(), '0'.repeat(64))).not.toContain('id="f-hidden"');
  });

  it('reads each job: state, instruction, epoch, host, receipt facts, its output against its input', async () => {
    const { store, jobs } = fixtureRepo(2, {
      receipt: (i) => ({
        sandbox: { kind: 'bwrap', network: i === 1 },
        usage: { prompt_tokens: 10, completion_tokens: 2, requests: 1 },
      }),
    });
    const model = await gatherReport(store, { checks: NO_CHECKS });
    expect(model.jobs.map((j) => j.key)).toEqual(jobs.map((j) => j.key).sort());
    const job = model.jobs.find((j) => j.key === jobs[1]!.key)!;
    expect(job).toMatchObject({
      state: 'received',
      instruction: 'Change line 4 of module 1',
      epoch: 1,
      receiptProblem: null,
      files: [
        {
          path: 'src/m1.txt',
          bytes: 'ok',
          input: sha256(jobs[1]!.before),
          inputFound: true,
          hiddenAdded: 0,
        },
      ],
    });
    expect(job.receipt).toMatchObject({
      status: 'ok',
      sandbox: 'bwrap+network',
      signer: 'unsigned',
      generateMs: 110,
    });
    const view = jobPageBytes(new ReportBytes(store), job).diffs.get('src/m1.txt');
    expect(view).toMatchObject({ kind: 'text', added: 1, removed: 1 });
  });

  it('marks output bytes that no longer hash to the receipt as drift and draws no diff of them', async () => {
    const { store, jobs } = fixtureRepo(1);
    writeFileSync(join(store.layout.outDir(jobs[0]!.key), 'src/m0.txt'), 'something else entirely\n');
    const [job] = (await gatherReport(store, { checks: NO_CHECKS })).jobs;
    expect(job!.files[0]!.bytes).toBe('drift');
    expect(jobPageBytes(new ReportBytes(store), job!).diffs.size).toBe(0);
  });

  it('never reads a path a receipt names outside the repository rules (a forged ../ output)', async () => {
    const { root, store, jobs } = fixtureRepo(1);
    const secret = join(dirname(root), 'secret.txt');
    writeFileSync(secret, 'TOP SECRET\n');
    // out/<key>/../../../../secret.txt is the file beside the repository
    const forged = { path: '../../../../secret.txt', sha256: sha256('TOP SECRET\n'), bytes: 11 };
    patchReceipt(store, jobs[0]!.key, { outputs: [forged] });
    const [job] = (await gatherReport(store, { checks: NO_CHECKS })).jobs;
    expect(job!.files[0]!.bytes).toBe('bad-path');
    expect(jobPageBytes(new ReportBytes(store), job!).diffs.size).toBe(0);
  });

  it('finds an input by its digest in the tree, and says so when the tree changed since mint', async () => {
    const { root, store } = fixtureRepo(2);
    writeFileSync(join(root, 'src/m0.txt'), 'edited by hand\n');
    const jobs = (await gatherReport(store, { checks: NO_CHECKS })).jobs;
    const m0 = jobs.find((j) => j.inputs[0]!.path === 'src/m0.txt')!;
    const m1 = jobs.find((j) => j.inputs[0]!.path === 'src/m1.txt')!;
    expect(m0.files[0]!.inputFound).toBe(false);
    expect(m1.files[0]!.inputFound).toBe(true);
    // the bytes an apply replaced are kept in objects/: found there whatever the tree holds
    const before = readFileSync(join(root, 'src/m1.txt'));
    writeFileSync(store.layout.object(sha256(before)), before);
    writeFileSync(join(root, 'src/m1.txt'), 'applied and edited\n');
    const again = (await gatherReport(store, { checks: NO_CHECKS })).jobs.find((j) => j.key === m1.key)!;
    expect(again.files[0]!.inputFound).toBe(true);
  });

  it('shows queued, dead and unknown jobs too, each with what is known', async () => {
    const { store, jobs } = fixtureRepo(2);
    const [dead, queued] = jobs;
    renameSync(store.layout.jobFile('received', queued!.key), store.layout.jobFile('queue', queued!.key));
    const name = `${dead!.key}.job.1700000000000-abcd`;
    renameSync(store.layout.jobFile('received', dead!.key), join(store.layout.dir('dead'), name));
    writeFileSync(
      join(store.layout.dir('dead'), `${name}.why.json`),
      JSON.stringify({ key: dead!.key, code: 'EGJ_DROPPED', reason: 'not wanted' }),
    );
    const unknown = 'f'.repeat(64);
    const model = await gatherReport(store, {
      checks: NO_CHECKS,
      run: { name: 'r', keys: [dead!.key, queued!.key, unknown], sealed: true, gate: null },
    });
    expect(model.jobs.map((j) => [j.state, j.dead?.code ?? null])).toEqual([
      ['queue', null],
      ['dead', 'EGJ_DROPPED'],
      ['unknown', null],
    ]);
    expect(model.jobs[2]!.instruction).toBe('(no job file for this key)');
    expect(model.title).toBe('run r');
  });

  it('names the trusted key that signed a receipt, and says when a signature is not trusted', async () => {
    const { root, store, jobs } = fixtureRepo(2);
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const other = generateKeyPairSync('ed25519');
    addTrustedKey(root, 'host-a', publicKeyString(publicKey));
    for (const [i, key] of [privateKey, other.privateKey].entries()) {
      const file = store.layout.receipt(jobs[i]!.key);
      const payload = canonicalBytes(JSON.parse(readFileSync(file, 'utf8')));
      writeFileSync(file, canonical(signEnvelope(RECEIPT_PAYLOAD_TYPE, payload, key, keyIdOf(publicKey))));
    }
    const model = await gatherReport(store, { checks: NO_CHECKS });
    const of = (k: string) => model.jobs.find((j) => j.key === k)!;
    expect(of(jobs[0]!.key).receipt).toMatchObject({ signer: 'host-a', signerTrusted: true });
    expect(of(jobs[1]!.key).receipt).toMatchObject({ signer: 'signature not trusted', signerTrusted: false });
    expect(of(jobs[1]!.key).receiptProblem).toMatch(/signature/);
  });

  it('sums tokens per generator and mode, and per judge model, and prices them as status does', async () => {
    const { store } = fixtureRepo(3, {
      receipt: (i) => ({
        generator: { command: i === 0 ? 'gen-a' : 'gen-b', version: null },
        usage: { prompt_tokens: 1000, completion_tokens: 100, requests: 1 },
        ...(i === 2 ? { batch: 'batch_1' } : {}),
      }),
    });
    const judged = (k: string) => [
      check('review', 'pass', { spent: { model: 'judge-model', prompt: 500, completion: 50, requests: 3 } }),
      { ...check('tests', 'pass'), checker: `tests-${k.slice(0, 4)}` },
    ];
    const keys = (await gatherReport(store, { checks: NO_CHECKS })).jobs.map((j) => j.key);
    const model = await gatherReport(store, {
      checks: tableChecks(['review'], new Map(keys.map((k) => [k, judged(k)]))),
      env: { GENJOB_PRICE_IN: '2', GENJOB_PRICE_OUT: '10' },
    });
    expect(model.spend).toEqual([
      { generator: 'gen-a', mode: 'interactive', prompt: 1000, completion: 100, requests: 1, cost: 0.003 },
      { generator: 'gen-b', mode: 'interactive', prompt: 1000, completion: 100, requests: 1, cost: 0.003 },
      { generator: 'gen-b', mode: 'batch', prompt: 1000, completion: 100, requests: 1, cost: 0.0015 },
      { generator: 'judge-model', mode: 'judge', prompt: 1500, completion: 150, requests: 9, cost: 0.0045 },
    ]);
    expect((await gatherReport(store, { checks: NO_CHECKS, env: {} })).spend[0]!.cost).toBeNull();
  });

  it('puts each shadow plane answer beside the live one with its compare verdict', async () => {
    const { store, jobs } = fixtureRepo(2);
    const plane = join(store.layout.gen, 'shadow', 'alt', 'results');
    for (const [i, j] of jobs.entries()) {
      const text = i === 0 ? j.after : `${j.after}one more line\n`;
      const file = join(plane, j.key, 'files', j.path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, text);
      const receipt = JSON.parse(readFileSync(store.layout.receipt(j.key), 'utf8')) as Record<
        string,
        unknown
      >;
      const outputs = [{ path: j.path, sha256: sha256(text), bytes: Buffer.byteLength(text) }];
      writeFileSync(
        join(plane, j.key, 'receipt.json'),
        canonical({ ...receipt, outputs, plane: 'shadow:alt' }),
      );
    }
    const model = await gatherReport(store, { checks: NO_CHECKS });
    expect(model.planes).toEqual(['shadow:alt']);
    const verdict = (k: string) => model.jobs.find((j) => j.key === k)!.shadows[0]!.verdict;
    expect([verdict(jobs[0]!.key), verdict(jobs[1]!.key)]).toEqual(['identical', 'differs']);
    const differs = model.jobs.find((j) => j.key === jobs[1]!.key)!;
    expect(
      jobPageBytes(new ReportBytes(store), differs).shadowDiffs.get('shadow:alt')!.get(jobs[1]!.path),
    ).toMatchObject({
      kind: 'text',
      added: 1,
      removed: 0,
    });
  });
});
