// An input edited after mint must never reach the host: each input is hashed in full before any of its
// bytes leaves, and a later mismatch abandons the bundle so the host keeps nothing (spool-bundle.ts).
// Over a real sshd, the remote command records every byte it receives before handing the stream to the
// built CLI's serve; the new bytes must not be among them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import {
  genDir,
  genjob,
  hostResults,
  journal,
  mint,
  remoteServe,
  type Sandbox,
  sshFlags,
  useBoxes,
} from './ssh-helpers.js';

const sshd = useSshd();
const newBox = useBoxes();

const MARKER = 'AWS_SECRET_ACCESS_KEY=FAKE-ADDED-AFTER-MINT-EXAMPLE';

/** `work --once` over ssh whose remote command tees what it receives into `captured` first. */
async function workCapturing(sb: Sandbox, captured: string) {
  const remote = `tee ${captured} | ${remoteServe(sb.hostCache)}`;
  return genjob(sb, ['work', '--once', '--generator', 'true', ...sshFlags(sshd(), remote)]);
}

function deadCodes(sb: Sandbox): string[] {
  return genDir(sb, 'dead')
    .filter((n) => n.endsWith('.why.json'))
    .map((n) => JSON.parse(readFileSync(path.join(sb.repo, '.gen/dead', n), 'utf8')).code as string);
}

describe('an input that changed after mint', () => {
  it('is dead-lettered before any of its bytes reach the host (a credential added to a 4 MiB file)', async () => {
    const sb = await newBox({ 'data/big.txt': 'x'.repeat(4 * 1024 * 1024), 'src/a.txt': 'alpha\n' });
    const key = await mint(sb, 'edit both', ['src/a.txt', 'data/big.txt']);
    await writeFile(path.join(sb.repo, 'data/big.txt'), `${MARKER}\n${'x'.repeat(4 * 1024 * 1024)}`);
    const captured = path.join(sb.dir, 'captured.bin');

    const r = await workCapturing(sb, captured);
    expect(r.exitCode).toBe(0);
    expect(String(r.stderr)).toContain(`${key.slice(0, 12)} dead-lettered: data/big.txt: hashes to`);
    expect(deadCodes(sb)).toEqual(['EGJ_INPUT_CHANGED']);
    expect(journal(sb, key).map((e) => e.event)).not.toContain('shipped');
    // the session was opened (the host saw the hello exchange), but no bundle byte followed
    expect(existsSync(captured)).toBe(true);
    const got = readFileSync(captured);
    expect(got.includes(MARKER)).toBe(false);
    expect(got.includes('alpha')).toBe(false);
    expect(got.length).toBeLessThan(4096);
  });

  it('after earlier inputs went out, abandons the bundle: its bytes never leave and the host keeps nothing', async () => {
    // 40 checked inputs (1.5 MiB: sent in 1 MiB batches) leave while the last is read; it was edited after mint
    const early: Record<string, string> = {};
    for (let i = 0; i < 40; i++) early[`a/f${String(i).padStart(3, '0')}.txt`] = `EARLY-${i}\n`.repeat(4096);
    const sb = await newBox({ ...early, 'z/late.txt': 'late\n' });
    const key = await mint(sb, 'edit them', [...Object.keys(early), 'z/late.txt']);
    await writeFile(path.join(sb.repo, 'z/late.txt'), `${MARKER}\n`);
    const captured = path.join(sb.dir, 'captured.bin');

    const r = await workCapturing(sb, captured);
    expect(r.exitCode).toBe(0);
    expect(String(r.stderr)).toContain(`${key.slice(0, 12)} dead-lettered: z/late.txt: hashes to`);
    expect(deadCodes(sb)).toEqual(['EGJ_INPUT_CHANGED']);
    const events = journal(sb, key);
    expect(events.map((e) => e.event)).not.toContain('shipped');
    expect(events.filter((e) => e.event === 'partial-send')).toMatchObject([
      { reason: expect.stringContaining('abandoned, an input changed: z/late.txt') },
    ]);
    const got = readFileSync(captured);
    expect(got.includes('EARLY-0')).toBe(true); // sent before the last input was read
    expect(got.includes(MARKER)).toBe(false);
    // the host discarded what it got: no result, no scratch workspace, no early byte anywhere
    expect(hostResults(sb.hostCache, key)).toEqual([]);
    const kept = readdirSync(sb.hostCache, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .filter((d) => readFileSync(path.join(d.parentPath, d.name)).includes('EARLY-'));
    expect(kept).toEqual([]);
  });

  it("tamper: past the spool's memory, checked inputs leave from its file and an input edited after mint never does", async () => {
    // 6 checked inputs of ~1 MiB: past the first few they go through the spool's temp file, and leave
    // from it while the last input is read; that one was edited after mint
    const early: Record<string, string> = {};
    for (let i = 0; i < 6; i++)
      early[`a/f${String(i).padStart(3, '0')}.txt`] = `EARLY-${i}\n`.repeat(110_000);
    // the last is big: its first MiBs reach the spool's file long before its digest is known, and the
    // sender has caught up with the checked bytes by then
    const LATE = 32 * 1024 * 1024;
    const sb = await newBox({ ...early, 'z/late.txt': 'l'.repeat(LATE) });
    const key = await mint(sb, 'edit them', [...Object.keys(early), 'z/late.txt']);
    await writeFile(path.join(sb.repo, 'z/late.txt'), `${MARKER}\n${'l'.repeat(LATE - MARKER.length - 1)}`);
    const captured = path.join(sb.dir, 'captured.bin');

    const r = await workCapturing(sb, captured);
    expect(r.exitCode).toBe(0);
    expect(String(r.stderr)).toContain(`${key.slice(0, 12)} dead-lettered: z/late.txt: hashes to`);
    expect(deadCodes(sb)).toEqual(['EGJ_INPUT_CHANGED']);
    const got = readFileSync(captured);
    expect(got.includes('EARLY-5')).toBe(true); // from the spool's file, before the bundle was whole
    expect(got.includes(MARKER)).toBe(false);
    expect(hostResults(sb.hostCache, key)).toEqual([]);
    expect(genDir(sb, 'staging')).toEqual([]); // the spool's file is gone with the bundle
  });

  it('is refused when a parent directory was swapped for a symlink to elsewhere, and nothing of elsewhere is sent', async () => {
    const sb = await newBox({ 'src/a.txt': 'alpha\n' });
    const key = await mint(sb, 'edit it', ['src/a.txt']);
    // same bytes at the same path, but reached through a symlink into a directory outside the repo
    const elsewhere = path.join(sb.dir, 'elsewhere');
    await mkdir(elsewhere);
    await writeFile(path.join(elsewhere, 'a.txt'), 'alpha\n');
    await writeFile(path.join(elsewhere, 'id_ed25519'), `${MARKER}\n`);
    await rename(path.join(sb.repo, 'src'), path.join(sb.dir, 'src-moved'));
    await symlink(elsewhere, path.join(sb.repo, 'src'));
    const captured = path.join(sb.dir, 'captured.bin');

    const r = await workCapturing(sb, captured);
    expect(r.exitCode).toBe(0);
    expect(String(r.stderr)).toContain(
      `${key.slice(0, 12)} dead-lettered: src/a.txt: src (on the way to it) is now a symlink`,
    );
    expect(deadCodes(sb)).toEqual(['EGJ_INPUT_CHANGED']);
    expect(readFileSync(captured).includes('alpha')).toBe(false);
  });
});

describe('a send cut short', () => {
  // `head -c 65536 |` also holds back what it passes until its stdio buffer fills: the pre-claim
  // generator check must not need a request to reach serve (it is answered in the hello, preflight.ts).
  it('is journalled as a partial-send with the bytes that left', async () => {
    const sb = await newBox({ 'data/big.txt': 'y'.repeat(4 * 1024 * 1024) });
    const key = await mint(sb, 'edit it', ['data/big.txt']);
    // the host reads 64 KiB of the session and then hangs up
    const remote = `head -c 65536 | ${remoteServe(sb.hostCache)}`;
    const r = await genjob(sb, ['work', '--once', '--generator', 'true', ...sshFlags(sshd(), remote)]);
    // the bundle never reached a generator: back in the queue, no attempt spent, exit 3 (unsettled)
    expect(r.exitCode).toBe(3);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    const requeued = journal(sb, key).filter((e) => e.event === 'requeued');
    expect(requeued).toMatchObject([{ attempt_spent: false }]);
    const partial = journal(sb, key).filter((e) => e.event === 'partial-send');
    expect(partial).toHaveLength(1);
    const p = partial[0] as unknown as { bytes_sent: number; bundle_bytes: number; bundle_sha256: string };
    // bytes handed to the transport before it failed: an upper bound of what reached the host
    expect(p.bytes_sent).toBeGreaterThan(0);
    expect(p.bytes_sent).toBeLessThanOrEqual(p.bundle_bytes);
    expect(p.bundle_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(journal(sb, key).map((e) => e.event)).not.toContain('shipped');
  });
});
