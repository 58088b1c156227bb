// One generation per key per host, end to end over the harness sshd with the generator confined.
// Two repositories minting the same job (the same key) deliver it to one host while the first
// generation is still running: the second delivery waits for it and is answered from the cache
// (the generator ran once, both receipts describe that one run). A generation whose serve died
// mid-run was abandoned (nothing of it can reach the cache): the next request generates it again at
// once, without waiting for the dead serve's lock to go stale, and the host says so.
import { existsSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { splitEnvelope } from '../../src/core/receipt-peek.js';
import { useSshd } from '../helpers/sshd.js';
import {
  countLines,
  genjob,
  hostResults,
  journal,
  mint,
  remoteServe,
  type Sandbox,
  sshFlags,
  useBoxes,
  waitWhileRunning,
} from './ssh-helpers.js';

const sshd = useSshd();
const box = useBoxes();

function receiptOf(sb: Sandbox, key: string): Record<string, unknown> {
  const doc = JSON.parse(readFileSync(path.join(sb.repo, '.gen/receipts', `${key}.json`), 'utf8'));
  return splitEnvelope(doc).payload;
}

/** Outbox records the host holds (started/<name>.json). */
function startedRecords(hostCache: string): string[] {
  const d = path.join(hostCache, 'started');
  return existsSync(d) ? readdirSync(d) : [];
}

describe('one generation per key per host', () => {
  it('a second delivery while the first generation runs waits for it: the generator ran once, both get its receipt', async () => {
    const [a, b] = [await box(), await box()];
    const counter = path.join(a.dir, 'runs');
    const release = path.join(a.dir, 'release');
    // a slow generator: it runs until the second delivery has reached the host, and 3 s more
    const generator = `echo run >> ${counter}; while [ ! -e ${release} ]; do sleep 0.05; done; sleep 3; echo generated > src/a.txt`;
    // both repositories deliver to the same host cache (a's), which exposes a.dir for the counter
    const flags = ['--generator', generator, ...sshFlags(sshd(), remoteServe(a.hostCache))];
    const key = await mint(a, 'fill in a', ['src/a.txt']);
    expect(await mint(b, 'fill in a', ['src/a.txt'])).toBe(key);

    const first = genjob(a, ['work', '--once', ...flags]);
    await waitWhileRunning('the first generation to start', () => countLines(counter) === 1, first);
    const second = genjob(b, ['work', '--once', ...flags]);
    const shipped = () => journal(b, key).some((e) => e.event === 'shipped');
    await waitWhileRunning('the second delivery to reach the host', shipped, second);
    writeFileSync(release, '');
    const [w1, w2] = await Promise.all([first, second]);
    expect(w1.exitCode, String(w1.stderr)).toBe(0);
    expect(w2.exitCode, String(w2.stderr)).toBe(0);

    expect(countLines(counter)).toBe(1);
    expect(hostResults(a.hostCache, key)).toHaveLength(1);
    expect(startedRecords(a.hostCache)).toEqual([]);
    const [r1, r2] = [receiptOf(a, key), receiptOf(b, key)];
    expect(r1).toMatchObject({ status: 'ok', cached: false });
    expect(r2).toMatchObject({ status: 'ok', cached: true });
    // the same generation: same outputs, same generator, same timings
    for (const field of ['outputs', 'generator', 'timings', 'sandbox', 'job_digest'])
      expect(r2[field], field).toEqual(r1[field]);
    for (const sb of [a, b])
      expect(readFileSync(path.join(sb.repo, '.gen/out', key, 'src/a.txt'), 'utf8')).toBe('generated\n');
  });

  it('a generation whose serve died was abandoned: the next plain work generates it again at once, and says so', async () => {
    const sb = await box();
    const counter = path.join(sb.dir, 'runs');
    const release = path.join(sb.dir, 'release');
    const generator = `echo run >> ${counter}; while [ ! -e ${release} ]; do sleep 0.05; done; echo generated > src/a.txt`;
    const flags = ['--generator', generator, ...sshFlags(sshd(), remoteServe(sb.hostCache))];
    const key = await mint(sb, 'fill in a', ['src/a.txt']);

    const first = genjob(sb, ['work', '--once', ...flags]);
    await waitWhileRunning('the generation to start', () => countLines(counter) === 1, first);
    const [record] = startedRecords(sb.hostCache);
    const owner = JSON.parse(readFileSync(path.join(sb.hostCache, 'started', record!), 'utf8'));
    expect(owner).toMatchObject({ pid: expect.any(Number), start: expect.any(Number) });
    process.kill(owner.pid, 'SIGKILL'); // the serve dies mid-generation (its sandbox with it)
    const w1 = await first;
    expect(w1.exitCode, String(w1.stderr)).toBe(3);

    // the lock the dead serve held must not be waited for: touched an hour ahead, it never goes stale
    // while this test runs, so only the dead-owner path can get past it
    const locks = path.join(sb.hostCache, 'locks');
    const future = new Date(Date.now() + 3_600_000);
    for (const name of readdirSync(locks)) utimesSync(path.join(locks, name), future, future);
    writeFileSync(release, '');
    const w2 = await genjob(sb, ['work', '--once', ...flags]);
    expect(w2.exitCode, String(w2.stderr)).toBe(0);
    expect(w2.stderr).toMatch(/by serve pid \d+, which has since died, was abandoned .*; generating again/);
    expect(w2.stderr).not.toContain('EGJ_GENERATION_IN_DOUBT');
    expect(countLines(counter)).toBe(2);
    expect(receiptOf(sb, key)).toMatchObject({ status: 'ok', cached: false });
    expect(startedRecords(sb.hostCache)).toEqual([]);
  });
});
