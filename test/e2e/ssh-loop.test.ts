// The whole loop over a real sshd on 127.0.0.1: mint → work --host → verify → apply, one ssh
// session for a drain, redelivery answered from the host's cache, and a dropped connection
// recovered by asking the host first. Spawns the built CLI (npm run build first).
import { existsSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSshd } from '../helpers/sshd.js';
import {
  countLines,
  descendantsOf,
  fingerprintOf,
  genDir,
  genjob,
  hostResults,
  journal,
  mint,
  remoteServe,
  repoTree,
  type Sandbox,
  sshFlags,
  useBoxes,
  waitFor,
  waitWhileRunning,
  writeGenerator,
} from './ssh-helpers.js';

const sshd = useSshd();
const newBox = useBoxes();

async function box(): Promise<Sandbox> {
  const b = await newBox();
  return b;
}

/** Flags whose remote command copies everything the worker sends into DIR/requests before serve reads it. */
function recordingFlags(sb: Sandbox, gen: string): string[] {
  const log = path.join(sb.dir, 'requests');
  return ['--generator', gen, ...sshFlags(sshd(), `tee ${log} | ${remoteServe(sb.hostCache)}`)];
}

/** The request headers the worker sent through recordingFlags(), in order. */
function requestsSent(sb: Sandbox): Array<{ type: unknown; epoch: unknown }> {
  const text = readFileSync(path.join(sb.dir, 'requests'), 'latin1');
  return [...text.matchAll(/GJ1 (\{[^\n]*\})\n/g)]
    .map((m) => JSON.parse(m[1]!) as Record<string, unknown>)
    .map((h) => ({ type: h.type, epoch: h.epoch }));
}

/** A generator that touches DIR/started, then waits for DIR/release before it writes `text` into `target`. */
async function slowGenerator(sb: Sandbox, target: string, text: string) {
  const counter = path.join(sb.dir, 'runs');
  const started = path.join(sb.dir, 'started');
  const release = path.join(sb.dir, 'release');
  const gen = await writeGenerator(sb.dir, {
    counter,
    target,
    text,
    startedMarker: started,
    releaseFile: release,
  });
  return { counter, started, release, gen };
}

function receiptOf(sb: Sandbox, key: string) {
  return JSON.parse(readFileSync(path.join(sb.repo, '.gen/receipts', `${key}.json`), 'utf8'));
}

describe('work --host over a real ssh server', () => {
  it('runs mint → work → verify → apply and journals the host key ssh verified', async () => {
    const sb = await box();
    const counter = path.join(sb.dir, 'runs');
    const gen = await writeGenerator(sb.dir, { counter, target: 'src/a.txt', text: 'ALPHA over ssh\n' });
    const key = await mint(sb, 'shout alpha', ['src/a.txt']);
    const before = repoTree(sb);

    const w = await genjob(sb, [
      'work',
      '--once',
      '--generator',
      gen,
      ...sshFlags(sshd(), remoteServe(sb.hostCache)),
    ]);
    expect(w.stderr).toContain(`${key.slice(0, 12)} received ok`);
    expect(w.exitCode).toBe(0);
    expect(genDir(sb, 'received')).toEqual([`${key}.json`]);
    expect(repoTree(sb)).toEqual(before); // work never touches the tree

    const v = await genjob(sb, ['verify', key]);
    expect(v.exitCode).toBe(0);
    const a = await genjob(sb, ['apply', key]);
    expect(a.exitCode).toBe(0);
    const after = repoTree(sb);
    expect(after.get('src/a.txt')).toMatch(/^file /); // a regular file still, holding exactly:
    expect(readFileSync(path.join(sb.repo, 'src/a.txt'))).toEqual(Buffer.from('ALPHA over ssh\n'));
    after.set('src/a.txt', before.get('src/a.txt')!);
    expect(after).toEqual(before); // nothing else changed
    expect(countLines(counter)).toBe(1);

    const shipped = journal(sb, key).filter((e) => e.event === 'shipped');
    const { type, fingerprint } = fingerprintOf(sshd().hostKeyPubFile);
    expect(shipped).toHaveLength(1);
    expect(shipped[0]).toMatchObject({
      destination: `${sshd().user}@127.0.0.1:${sshd().port}`,
      host: '127.0.0.1',
      port: sshd().port,
      host_key_type: `ssh-${type.toLowerCase()}`,
      host_key_fingerprint: fingerprint,
      files: ['job.json', 'files/src/a.txt'],
    });
    expect(genDir(sb, 'staging')).toEqual([]);
  });

  it('refuses a host whose key is not known before claiming anything, and sends nothing', async () => {
    const sb = await box();
    const counter = path.join(sb.dir, 'runs');
    const gen = await writeGenerator(sb.dir, { counter, target: 'src/a.txt', text: 'never\n' });
    const key = await mint(sb, 'shout alpha', ['src/a.txt']);
    const emptyKnownHosts = path.join(sb.dir, 'known_hosts_empty');
    await writeFile(emptyKnownHosts, '');
    const flags = sshFlags(sshd(), remoteServe(sb.hostCache)).map((f) =>
      f.startsWith('UserKnownHostsFile=') ? `UserKnownHostsFile=${emptyKnownHosts}` : f,
    );

    const w = await genjob(sb, ['work', '--once', '--generator', gen, ...flags]);
    expect(w.exitCode).toBe(2);
    expect(w.stderr).toMatch(/^genjob: EGJ_SSH_HOST_KEY: /m);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    expect([genDir(sb, 'running'), genDir(sb, 'leases'), genDir(sb, 'receipts')]).toEqual([[], [], []]);
    expect(journal(sb, key).filter((e) => e.event === 'claimed' || e.event === 'requeued')).toEqual([]);
    expect(genDir(sb, 'attempts')).toEqual([]);
    expect(journal(sb, key).some((e) => e.event === 'shipped')).toBe(false);
    expect(existsSync(counter)).toBe(false);
  });

  it('drains several jobs through ONE ssh session to the host', async () => {
    const sb = await box();
    const sessions = path.join(sb.dir, 'sessions');
    const counter = path.join(sb.dir, 'runs');
    // each job's instruction names the file it edits; one generator for all
    const gen = await writeGenerator(sb.dir, { counter, target: 'src/a.txt', text: 'x\n' });
    const keys = [
      await mint(sb, 'job one', ['src/a.txt']),
      await mint(sb, 'job two', ['src/a.txt']),
      await mint(sb, 'job three', ['src/a.txt', 'src/b.txt']),
    ];
    const remote = `echo started >> ${sessions}; exec ${remoteServe(sb.hostCache)}`;

    const w = await genjob(sb, ['work', '--drain', '--generator', gen, ...sshFlags(sshd(), remote)]);
    expect(w.exitCode).toBe(0);
    expect(countLines(sessions)).toBe(1);
    expect(countLines(counter)).toBe(3);
    expect(genDir(sb, 'received')).toEqual(keys.map((k) => `${k}.json`).sort());
    expect(genDir(sb, 'queue')).toEqual([]);
    expect(genDir(sb, 'running')).toEqual([]);
  });

  it('answers a redelivered job from the host cache: the generator runs once, both receipts agree', async () => {
    const sb = await box();
    const counter = path.join(sb.dir, 'runs');
    const gen = await writeGenerator(sb.dir, { counter, target: 'src/b.txt', text: 'BRAVO\n' });
    const key = await mint(sb, 'shout bravo', ['src/b.txt']);
    const flags = ['--generator', gen, ...sshFlags(sshd(), remoteServe(sb.hostCache))];

    const first = await genjob(sb, ['work', '--once', ...flags]);
    expect(first.exitCode).toBe(0);
    const r1 = receiptOf(sb, key);
    expect(r1).toMatchObject({ status: 'ok', cached: false, epoch: 1 });

    // the same job worked again against the host: back to the queue, its result forgotten here
    renameSync(
      path.join(sb.repo, '.gen/received', `${key}.json`),
      path.join(sb.repo, '.gen/queue', `${key}.json`),
    );
    rmSync(path.join(sb.repo, '.gen/receipts', `${key}.json`));
    rmSync(path.join(sb.repo, '.gen/out', key), { recursive: true });
    const second = await genjob(sb, ['work', '--once', ...flags]);
    expect(second.stderr).toContain('(from the host cache)');
    expect(second.exitCode).toBe(0);
    const r2 = receiptOf(sb, key);
    expect(r2).toMatchObject({ status: 'ok', cached: true, epoch: 2 });
    expect(r2.outputs).toEqual(r1.outputs);

    // a second checkout minting the identical work order is answered from the cache too (a run, not a fetch)
    const other = await box();
    await writeFile(path.join(other.repo, 'src/b.txt'), readFileSync(path.join(sb.repo, 'src/b.txt')));
    expect(await mint(other, 'shout bravo', ['src/b.txt'])).toBe(key);
    const third = await genjob(other, ['work', '--once', ...flags]);
    expect(third.exitCode).toBe(0);
    expect(receiptOf(other, key)).toMatchObject({
      status: 'ok',
      cached: true,
      epoch: 1,
      outputs: r1.outputs,
    });

    expect(countLines(counter)).toBe(1);
    for (const s of [sb, other]) {
      expect((await genjob(s, ['apply', key])).exitCode).toBe(0);
      expect(readFileSync(path.join(s.repo, 'src/b.txt'), 'utf8')).toBe('BRAVO\n');
    }
  });

  it('survives a dropped connection mid-generation: the host finishes, the next attempt fetches, one generation', async () => {
    const sb = await box();
    const { counter, started, release, gen } = await slowGenerator(
      sb,
      'src/a.txt',
      'finished after the drop\n',
    );
    const key = await mint(sb, 'slow edit', ['src/a.txt']);
    const flags = ['--generator', gen, ...sshFlags(sshd(), remoteServe(sb.hostCache))];

    const work = genjob(sb, ['work', '--once', ...flags]);
    await waitWhileRunning(
      'the generator to start on the host',
      () => existsSync(started),
      work,
      () => JSON.stringify({ journal: journal(sb, key), procs: descendantsOf(work.pid!) }),
    );
    // the bundle is on the host and generating: kill the worker's ssh session client (its own group)
    const client = descendantsOf(work.pid!).find((p) => /^ssh .* serve --session/.test(p.cmdline));
    expect(client).toBeDefined();
    process.kill(-client!.pid, 'SIGKILL');
    const dropped = await work;
    expect(dropped.stderr).toMatch(/back in the queue: .*session/);
    expect(dropped.exitCode).toBe(3);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);
    expect(journal(sb, key).filter((e) => e.event === 'requeued')).toMatchObject([
      { code: 'EGJ_IN_DOUBT', epoch: 1 },
    ]);

    // the orphaned serve on the host finishes the generation and caches it
    await writeFile(release, '');
    await waitFor('the host to cache the result', () => hostResults(sb.hostCache, key).length === 1);

    const again = await genjob(sb, ['work', '--once', ...recordingFlags(sb, gen)]);
    expect(again.stderr).toContain('(from the host cache)');
    expect(again.exitCode).toBe(0);
    expect(requestsSent(sb)).toEqual([{ type: 'fetch', epoch: 2 }]); // asked first; no bundle sent again
    expect(receiptOf(sb, key)).toMatchObject({ status: 'ok', cached: true, epoch: 2 });
    expect(countLines(counter)).toBe(1);
    expect((await genjob(sb, ['apply', key])).exitCode).toBe(0);
    expect(readFileSync(path.join(sb.repo, 'src/a.txt'), 'utf8')).toBe('finished after the drop\n');
  });

  it('makes a redelivery that arrives during the first generation wait for it instead of generating again', async () => {
    const sb = await box();
    const { counter, started, release, gen } = await slowGenerator(sb, 'src/a.txt', 'generated once\n');
    const key = await mint(sb, 'slow edit, redelivered early', ['src/a.txt']);

    const first = genjob(sb, [
      'work',
      '--once',
      '--generator',
      gen,
      ...sshFlags(sshd(), remoteServe(sb.hostCache)),
    ]);
    await waitWhileRunning('the generator to start on the host', () => existsSync(started), first);
    const client = descendantsOf(first.pid!).find((p) => /^ssh .* serve --session/.test(p.cmdline));
    process.kill(-client!.pid, 'SIGKILL');
    expect((await first).exitCode).toBe(3);

    // the host has no result yet: the fetch says none, the run must wait on the first generation
    const second = genjob(sb, ['work', '--once', ...recordingFlags(sb, gen)]);
    await waitWhileRunning(
      'the second attempt to send its bundle',
      () => existsSync(path.join(sb.dir, 'requests')) && requestsSent(sb).some((r) => r.type === 'run'),
      second,
    );
    await writeFile(release, '');
    const r = await second;
    expect(r.stderr).toContain('(from the host cache)');
    expect(r.exitCode).toBe(0);
    expect(requestsSent(sb)).toEqual([
      { type: 'fetch', epoch: 2 },
      { type: 'run', epoch: 2 },
    ]);
    expect(receiptOf(sb, key)).toMatchObject({ status: 'ok', cached: true, epoch: 2 });
    expect(countLines(counter)).toBe(1);
  });

  it('recovers a worker killed mid-job: reap, then the next attempt fetches the stored result', async () => {
    const sb = await box();
    const { counter, started, release, gen } = await slowGenerator(sb, 'src/b.txt', 'after a crash\n');
    const key = await mint(sb, 'slow edit after a crash', ['src/b.txt']);
    const flags = ['--generator', gen, ...sshFlags(sshd(), remoteServe(sb.hostCache))];

    const work = genjob(sb, ['work', '--once', '--lease-ttl', '1', ...flags], { detached: true });
    await waitWhileRunning(
      'the generator to start on the host',
      () => existsSync(started),
      work,
      () => JSON.stringify({ journal: journal(sb, key), procs: descendantsOf(work.pid!) }),
    );
    const ssh = descendantsOf(work.pid!).filter((p) => p.cmdline.startsWith('ssh '));
    process.kill(-work.pid!, 'SIGKILL'); // the worker dies; its ssh clients are in their own groups
    for (const p of ssh) process.kill(-p.pid, 'SIGKILL');
    const killed = await work;
    expect(killed.signal).toBe('SIGKILL');
    expect(genDir(sb, 'running')).toEqual([`${key}.json`]);

    await writeFile(release, '');
    await waitFor('the host to cache the result', () => hostResults(sb.hostCache, key).length === 1);
    // the lease stops beating; once it is older than the TTL, reap puts the job back
    await waitFor('the lease to go stale', () => {
      const lease = path.join(sb.repo, '.gen/leases', `${key}.json`);
      return existsSync(lease) && Date.now() - readLeaseBeat(lease) > 1500;
    });
    const reap = await genjob(sb, ['reap', '--lease-ttl', '1']);
    expect(reap.exitCode).toBe(0);
    expect(genDir(sb, 'queue')).toEqual([`${key}.json`]);

    const again = await genjob(sb, ['work', '--once', ...recordingFlags(sb, gen)]);
    expect(again.stderr).toContain('(from the host cache)');
    expect(again.exitCode).toBe(0);
    expect(requestsSent(sb)).toEqual([{ type: 'fetch', epoch: 2 }]);
    expect(receiptOf(sb, key)).toMatchObject({ status: 'ok', cached: true, epoch: 2 });
    expect(countLines(counter)).toBe(1);
  });
});

/** A lease's heartbeat is its mtime (src/store/lease.ts). */
function readLeaseBeat(file: string): number {
  return statSync(file).mtimeMs;
}
