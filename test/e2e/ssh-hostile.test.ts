// An untrusted generator host over real ssh: fixtures/hostile-remote/serve.mjs speaks the protocol
// and answers with crafted material. Whatever it sends, the job is not received with it, nothing is
// written outside .gen/staging/ (which ends empty), the repository is byte-identical, the journal
// names the rule, and a receipt it sent is kept raw in .gen/dead/. Spawns the built CLI.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import {
  genDir,
  genjob,
  HOSTILE_REMOTE,
  journal,
  mint,
  NODE,
  repoTree,
  type Sandbox,
  snapshot,
  sshFlags,
  treeEntries,
  useBoxes,
} from './ssh-helpers.js';

const sshd = useSshd();
const newBox = useBoxes();

interface HostileCase {
  name: string;
  /** The code journalled with the requeue (and with the dead-lettered receipt, when one was sent). */
  code: string;
  /** Whether the host sent a receipt (then it must be kept raw in dead/). */
  receipt: boolean;
}

const CASES: HostileCase[] = [
  { name: 'dotdot-path', code: 'EGJ_ARCHIVE_PATH', receipt: true },
  { name: 'absolute-path', code: 'EGJ_ARCHIVE_PATH', receipt: true },
  { name: 'symlink-then-file', code: 'EGJ_ARCHIVE_LINK', receipt: true },
  { name: 'hardlink-outside', code: 'EGJ_ARCHIVE_LINK', receipt: true },
  { name: 'device-entry', code: 'EGJ_ARCHIVE_TYPE', receipt: true },
  { name: 'duplicate-path', code: 'EGJ_ARCHIVE_DUPLICATE', receipt: true },
  { name: 'case-twin', code: 'EGJ_ARCHIVE_NOT_ALLOWED', receipt: true },
  { name: 'unnamed-file', code: 'EGJ_RESULT_MISMATCH', receipt: true },
  { name: 'gzip-bomb', code: 'EGJ_ARCHIVE_BOMB', receipt: true },
  { name: 'gzip-bomb-huge', code: 'EGJ_ARCHIVE_TOO_LARGE', receipt: true },
  { name: 'endless-stream', code: 'EGJ_ARCHIVE_TRAILING', receipt: true },
  { name: 'truncated-archive', code: 'EGJ_ARCHIVE_TRUNCATED', receipt: true },
  // a numeric header field in base-256 above 2^53: node-tar throws a plain Error, which is the archive's fault
  { name: 'base256-huge', code: 'EGJ_ARCHIVE_CORRUPT', receipt: true },
  { name: 'other-key', code: 'EGJ_RECEIPT_MISMATCH', receipt: true },
  { name: 'wrong-epoch', code: 'EGJ_RECEIPT_MISMATCH', receipt: true },
  { name: 'garbage-receipt', code: 'EGJ_RECEIPT_SCHEMA', receipt: true },
  { name: 'no-answer', code: 'EGJ_IN_DOUBT', receipt: false },
  { name: 'garbage-header', code: 'EGJ_IN_DOUBT', receipt: false },
];

/** A sandbox with a job over src/a.txt and src/b.txt, and an outside/ dir an escape would hit. */
async function hostileBox(): Promise<{ sb: Sandbox; key: string; outside: string }> {
  const sb = await newBox();
  const outside = path.join(sb.dir, 'outside');
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), 'a file the host must never reach\n');
  const key = await mint(sb, 'edit both', ['src/a.txt', 'src/b.txt']);
  return { sb, key, outside };
}

function hostileFlags(sb: Sandbox, name: string): string[] {
  return ['--generator', 'true', ...sshFlags(sshd(), `${NODE} ${HOSTILE_REMOTE} ${name} ${sb.dir}`)];
}

/** Every file under .gen/ except dead/ and the journal, whose content mentions the hostile marker. */
function pwnedInGen(sb: Sandbox): string[] {
  const gen = path.join(sb.repo, '.gen');
  const found: string[] = [];
  for (const e of treeEntries(gen, ['dead', 'journal.jsonl', 'journal.d'])) {
    if (e.kind === 'file' && e.bytes.includes('PWNED')) found.push(e.path);
  }
  return found;
}

describe('a hostile generator host', () => {
  it.each(CASES)('$name: refused with $code, nothing applied or written outside staging', async (c) => {
    const { sb, key, outside } = await hostileBox();
    const repoBefore = repoTree(sb);
    const outsideBefore = snapshot(outside);

    const w = await genjob(sb, ['work', '--once', ...hostileFlags(sb, c.name)]);
    expect(w.stderr).toContain(`${key.slice(0, 12)} back in the queue: `);
    expect(w.exitCode).toBe(3);
    expect(w.stderr).not.toContain('internal error');

    // not received, not applied; the job is back in the queue for another attempt
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    for (const d of ['running', 'received', 'applied', 'receipts', 'out', 'staging', 'leases']) {
      expect(genDir(sb, d), `.gen/${d}`).toEqual([]);
    }
    expect(repoTree(sb)).toEqual(repoBefore);
    expect(snapshot(outside)).toEqual(outsideBefore);
    expect(pwnedInGen(sb)).toEqual([]);

    const events = journal(sb, key);
    expect(events.filter((e) => e.event === 'requeued')).toMatchObject([{ epoch: 1, code: c.code }]);
    const dead = genDir(sb, 'dead');
    if (c.receipt) {
      expect(events.filter((e) => e.event === 'dead-lettered')).toMatchObject([{ epoch: 1, code: c.code }]);
      const raw = dead.filter((n) => n.startsWith(`${key}.receipt.e1.`) && !n.endsWith('.why.json'));
      expect(raw).toHaveLength(1);
      const sent = readFileSync(path.join(sb.dir, 'sent/receipt-e1'));
      expect(readFileSync(path.join(sb.repo, '.gen/dead', raw[0]!))).toEqual(sent);
    } else {
      expect(dead).toEqual([]);
      expect(existsSync(path.join(sb.dir, 'sent'))).toBe(false);
    }
  });

  it.each(['no-hello', 'garbage-hello'])(
    '%s: a host that does not answer as genjob serve is a usage error (exit 2) before anything is claimed',
    async (name) => {
      const { sb, key } = await hostileBox();
      const w = await genjob(sb, ['work', '--once', ...hostileFlags(sb, name)]);
      expect(w.stderr).toContain('EGJ_HOST_NOT_SERVING');
      expect(w.exitCode).toBe(2);
      expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
      expect(genDir(sb, 'attempts')).toEqual([]);
      expect(journal(sb, key).filter((e) => e.event === 'claimed')).toEqual([]);
    },
  );

  it('sends a job to dead/ after --max-attempts unusable answers; the drain ends with queue/ and running/ empty', async () => {
    const { sb, key, outside } = await hostileBox();
    const repoBefore = repoTree(sb);
    const outsideBefore = snapshot(outside);

    const w = await genjob(sb, [
      'work',
      '--drain',
      '--max-attempts',
      '2',
      ...hostileFlags(sb, 'dotdot-path'),
    ]);
    expect(w.stderr).toContain(`${key.slice(0, 12)} dead-lettered: no usable answer after 2 attempts`);
    expect(w.exitCode).toBe(0);

    expect(genDir(sb, 'queue')).toEqual([]);
    expect(genDir(sb, 'running')).toEqual([]);
    expect(genDir(sb, 'received')).toEqual([]);
    expect(genDir(sb, 'staging')).toEqual([]);
    const dead = readdirSync(path.join(sb.repo, '.gen/dead'));
    expect(dead.filter((n) => n.startsWith(`${key}.job.`) && !n.endsWith('.why.json'))).toHaveLength(1);
    expect(dead.filter((n) => /\.receipt\.e[12]\.[^.]+$/.test(n))).toHaveLength(2);

    const events = journal(sb, key);
    expect(events.filter((e) => e.event === 'requeued').map((e) => [e.epoch, e.code])).toEqual([
      [1, 'EGJ_ARCHIVE_PATH'],
      [2, 'EGJ_ARCHIVE_PATH'],
    ]);
    expect(events.filter((e) => e.event === 'dead-lettered').map((e) => e.code)).toEqual([
      'EGJ_ARCHIVE_PATH',
      'EGJ_ARCHIVE_PATH',
      'EGJ_ATTEMPTS_EXHAUSTED',
    ]);
    expect(repoTree(sb)).toEqual(repoBefore);
    expect(snapshot(outside)).toEqual(outsideBefore);
  });
});
