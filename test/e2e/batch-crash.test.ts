// kill -9 `genjob work --batch` / `--batch-poll` at each step of a batch's life (test/helpers/crash-preload.mjs
// SIGKILLs the process at a chosen fs call), then recover the way an operator would — `reap`, `work --batch`,
// `work --batch-poll` — and check the outbox rule on the server side: every key was submitted in exactly one
// batch, every job ends with an ok receipt, no lease or open batch is left behind.
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import {
  chatCompletion,
  type FakeOpenAi,
  startFakeOpenAi,
  structuredAnswer,
} from '../helpers/fake-openai.js';
import { BIN, genDir, gj, makeRepo, mintedKey, type Repo } from './trust-helpers.js';

const PRELOAD = join(import.meta.dirname, '../helpers/crash-preload.mjs');
const FILES = { 'src/a.ts': 'export const a = 1;\n', 'src/b.ts': 'export const b = 1;\n' };
const RECORD = '/\\.gen/batches/[^/]+/record\\.json$';

interface Step {
  name: string;
  victim: 'submit' | 'poll';
  crash: { call: string; match: string; arg: number; nth?: number; when: 'before' | 'after' };
}

const STEPS: Step[] = [
  {
    name: 'jobs claimed, intent not yet recorded',
    victim: 'submit',
    crash: { call: 'linkSync', match: RECORD, arg: 1, when: 'before' },
  },
  {
    name: 'intent recorded, before upload',
    victim: 'submit',
    crash: { call: 'linkSync', match: RECORD, arg: 1, when: 'after' },
  },
  {
    name: 'after upload, file id not recorded',
    victim: 'submit',
    crash: { call: 'renameSync', match: RECORD, arg: 1, nth: 1, when: 'before' },
  },
  {
    name: 'after create, batch id not recorded',
    victim: 'submit',
    crash: { call: 'renameSync', match: RECORD, arg: 1, nth: 2, when: 'before' },
  },
  {
    name: 'during download',
    victim: 'poll',
    crash: { call: 'renameSync', match: '/output\\.jsonl$', arg: 1, when: 'before' },
  },
  {
    name: 'during commit: outputs in out/, no receipt',
    victim: 'poll',
    crash: { call: 'renameSync', match: '/\\.gen/out/[0-9a-f]{64}$', arg: 1, when: 'after' },
  },
  {
    name: 'during commit: receipt linked, job not moved',
    victim: 'poll',
    crash: { call: 'linkSync', match: '/\\.gen/receipts/', arg: 1, when: 'after' },
  },
];

let fake: FakeOpenAi | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

function env(repo: Repo, crash?: Step['crash']): Record<string, string> {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('GENJOB_') && !k.startsWith('XDG_') && k !== 'OPENAI_API_KEY')
      base[k] = v;
  return {
    ...base,
    XDG_CACHE_HOME: repo.cache,
    XDG_CONFIG_HOME: repo.config,
    ...repo.env,
    ...(crash ? { GENJOB_CRASH: JSON.stringify(crash) } : {}),
  };
}

const SUBMIT = ['work', '--batch', '--generator', 'builtin:openai', '--lease-ttl', '1'];
const POLL = ['work', '--batch-poll'];

describe('kill -9 during batch generation', () => {
  for (const step of STEPS) {
    it(`submits each key exactly once and loses none: ${step.name}`, async () => {
      fake = await startFakeOpenAi([], {
        batch: {
          pollsToFinish: 1,
          answer: (_id, body) => {
            const user = (body.messages as Array<{ content: string }>)[1]!.content;
            const path = /=== FILE: (\S+) ===/.exec(user)![1]! as keyof typeof FILES;
            const content = FILES[path].replace('1', '2');
            return {
              body: chatCompletion(structuredAnswer([{ path, content }]), {
                usage: { prompt_tokens: 10, completion_tokens: 2 },
              }),
            };
          },
        },
      });
      const repo = makeRepo(FILES);
      repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' };
      const keys: string[] = [];
      for (const path of Object.keys(FILES))
        keys.push(mintedKey(await gj(repo, ['mint', '-m', `bump ${path}`, path])));

      if (step.victim === 'poll') expect((await gj(repo, SUBMIT)).exitCode).toBe(0);
      const args = step.victim === 'poll' ? POLL : SUBMIT;
      const killed = await execa(process.execPath, ['--import', PRELOAD, BIN, ...args], {
        cwd: repo.root,
        env: env(repo, step.crash),
        extendEnv: false,
        reject: false,
      });
      expect(killed.signal, `the crash step was never reached:\n${killed.stderr}`).toBe('SIGKILL');

      // recover: reap what no batch holds, submit what is queued, poll what is open
      for (let round = 0; round < 4 && genDir(repo, 'received').length < keys.length; round++) {
        const old = new Date(Date.now() - 3600_000);
        for (const name of genDir(repo, 'leases'))
          utimesSync(join(repo.root, '.gen', 'leases', name), old, old);
        expect((await gj(repo, ['reap', '--lease-ttl', '1'])).exitCode).toBe(0);
        if (genDir(repo, 'queue').length > 0) {
          const s = await gj(repo, SUBMIT);
          expect(s.exitCode, String(s.stderr)).toBe(0);
        }
        const p = await gj(repo, POLL);
        expect(p.exitCode, String(p.stderr)).toBe(0);
      }

      expect(genDir(repo, 'received')).toEqual(keys.map((k) => `${k}.json`).sort());
      for (const k of keys) expect(fake.batch!.submitted.get(k), `key ${k.slice(0, 12)} submissions`).toBe(1);
      expect(genDir(repo, 'leases')).toEqual([]);
      expect(genDir(repo, 'queue')).toEqual([]);
      expect(genDir(repo, 'running')).toEqual([]);
      const a = await gj(repo, ['apply', '--all']);
      expect(a.exitCode, String(a.stderr)).toBe(0);
      expect(openRuns(repo)).toEqual([]);
    });
  }
});

describe('a recorded intent whose input file was replaced by a link', () => {
  it('is refused naming the input, and nothing the link points at is uploaded', async () => {
    fake = await startFakeOpenAi([], { batch: { pollsToFinish: 1, answer: () => ({ body: {} }) } });
    const repo = makeRepo(FILES);
    repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' };
    await gj(repo, ['mint', '-m', 'bump a', 'src/a.ts']);
    const killed = await execa(process.execPath, ['--import', PRELOAD, BIN, ...SUBMIT], {
      cwd: repo.root,
      env: env(repo, STEPS[1]!.crash), // intent recorded, before upload
      extendEnv: false,
      reject: false,
    });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    const [run] = readdirSync(join(repo.root, '.gen', 'batches'));
    const input = join(repo.root, '.gen', 'batches', run!, 'input.jsonl');
    const secret = join(repo.root, '..', 'not-for-the-provider.txt');
    writeFileSync(secret, 'SECRET-CANARY\n');
    rmSync(input);
    symlinkSync(secret, input);
    const resumed = await gj(repo, SUBMIT);
    expect(resumed.exitCode, String(resumed.stderr)).toBe(2);
    expect(String(resumed.stderr)).toContain(`EGJ_RECORD_UNREADABLE: ${input}: is a symbolic link`);
    const uploaded = [...fake.batch!.files.values()].map((f) => JSON.stringify(f));
    expect(uploaded.join('\n')).not.toContain('SECRET-CANARY');
  });
});

describe('a batch intent this user did not record (a branch can commit .gen/batches/)', () => {
  it("is never uploaded but ended: an unsealed one, another user's, one whose input was edited; the user's own is sent", async () => {
    fake = await startFakeOpenAi([], { batch: { pollsToFinish: 1, answer: () => ({ body: {} }) } });
    const repo = makeRepo(FILES);
    repo.env = { GENJOB_OPENAI_BASE_URL: fake.url, GENJOB_OPENAI_MODEL: 'm' };
    const key = mintedKey(await gj(repo, ['mint', '-m', 'bump a', 'src/a.ts']));
    const batches = join(repo.root, '.gen', 'batches');
    const canary = JSON.stringify({
      custom_id: key,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'expensive', messages: [{ role: 'user', content: 'FORGED-CANARY' }] },
    });
    /** Poll as `env` says; the poll ends what it cannot vouch for and exits 0, having uploaded nothing. */
    const pollUploadsNothing = async (env: Record<string, string> = {}) => {
      const p = await gj(repo, POLL, { env });
      expect(p.exitCode, String(p.stderr)).toBe(0);
      expect(fake!.batch!.files.size).toBe(0);
      expect(genDir(repo, 'batches')).toEqual([]);
      return p;
    };

    // committed on a branch: a record with no seal (and one with a made-up seal), its input a request
    // the user never made
    for (const seal of [{}, { intent_seal: 'a'.repeat(64) }]) {
      const run = '20260101T000000000Z-abcdef';
      mkdirSync(join(batches, run), { recursive: true });
      writeFileSync(join(batches, run, 'input.jsonl'), `${canary}\n`);
      const jobs = [{ key, epoch: 1, job_digest: 'f'.repeat(64), format: 'structured' }];
      const record = { run, state: 'intent', created_at: '2026-01-01T00:00:00.000Z', jobs, ...seal };
      writeFileSync(
        join(batches, run, 'record.json'),
        JSON.stringify({ ...record, file_id: null, batch_id: null, provider_status: null }),
      );
      await pollUploadsNothing();
    }

    /** The user's own intent, recorded and then killed before its upload; its input file. */
    const ownIntent = async () => {
      const killed = await execa(process.execPath, ['--import', PRELOAD, BIN, ...SUBMIT], {
        cwd: repo.root,
        env: env(repo, STEPS[1]!.crash),
        extendEnv: false,
        reject: false,
      });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      const [run] = readdirSync(batches);
      return join(batches, run!, 'input.jsonl');
    };
    // polled by another user (another cache, so another secret): ended, its job back in the queue
    await ownIntent();
    const other = await pollUploadsNothing({ XDG_CACHE_HOME: join(repo.cache, '..', 'other-cache') });
    expect(String(other.stderr)).toContain(`${key.slice(0, 12)} requeued`);
    expect(String(other.stderr)).toContain('not sealed by this user');
    expect(genDir(repo, 'queue')).toEqual([`${key}.json`]);
    // its input edited after the seal
    const input = await ownIntent();
    appendFileSync(input, `${canary}\n`);
    await pollUploadsNothing();
    // the user who recorded it, untouched: sent
    await ownIntent();
    const mine = await gj(repo, POLL);
    expect(mine.exitCode, String(mine.stderr)).toBe(0);
    expect(fake.batch!.submitted.get(key)).toBe(1);
    const uploaded = [...fake.batch!.files.values()].map((f) => JSON.stringify(f)).join('\n');
    expect(uploaded).not.toContain('FORGED-CANARY');
  });
});

/** Run directories whose record is not done (a directory without a record never committed its intent). */
function openRuns(repo: Repo): string[] {
  const dir = join(repo.root, '.gen', 'batches');
  return readdirSync(dir).filter((run) => {
    const file = join(dir, run, 'record.json');
    return existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { state: string }).state !== 'done';
  });
}
