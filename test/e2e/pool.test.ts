// A pool of three real sshd hosts on loopback, each with its own result cache: one is killed -9
// (its sshd and its serve) in the middle of a drain. No job is lost, none is generated twice on a
// host that answered, every job is received once. And a host that crashes after delivery and comes
// back answers its in-doubt job from its cache. Spawns the built CLI (npm run build first).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SshdHandle, startSshd } from '../helpers/sshd.js';
import { eventsPerKey, mintMany, sshHostBlock } from './pool-helpers.js';
import {
  CLI,
  countLines,
  descendantsOf,
  genDir,
  genjob,
  hostResults,
  journal,
  NODE,
  REPO_ROOT,
  type Sandbox,
  sandbox,
  waitFor,
} from './ssh-helpers.js';

/** One ssh config naming every host by an alias h0, h1, … with its own port, key and known_hosts. */
async function poolConfig(dir: string, hosts: SshdHandle[]): Promise<string> {
  const file = path.join(dir, 'pool_ssh_config');
  const blocks = hosts.map((h, i) => sshHostBlock(`h${i}`, h));
  await writeFile(file, blocks.join(''));
  return file;
}

/** A generator that records "run KEY WORKSPACE" (the workspace lies in that host's cache dir) and takes a moment. */
async function countingGenerator(dir: string, counter: string): Promise<string> {
  const file = path.join(dir, 'gen-pool.mjs');
  await writeFile(
    file,
    [
      "import { appendFileSync, writeFileSync } from 'node:fs';",
      `appendFileSync(${JSON.stringify(counter)}, 'run ' + process.env.GENJOB_KEY + ' ' + process.cwd() + '\\n');`,
      'await new Promise((r) => setTimeout(r, 300));',
      "writeFileSync('src/a.txt', 'from the pool\\n');",
      '',
    ].join('\n'),
  );
  return `${NODE} ${file}`;
}

describe('work --drain over a pool of three ssh hosts', () => {
  const hosts: SshdHandle[] = [];
  let sb: Sandbox;
  beforeAll(async () => {
    for (let i = 0; i < 3; i++) hosts.push(await startSshd());
    sb = await sandbox();
  });
  afterAll(async () => {
    for (const h of hosts) await h.stop();
    await sb?.cleanup();
  });

  it('loses no job when one host is killed -9 mid-run: each received once, none generated twice on a host that answered', async () => {
    const keys = mintMany(sb, 24);
    const counter = path.join(sb.dir, 'runs');
    const gen = await countingGenerator(sb.dir, counter);
    const config = await poolConfig(sb.dir, hosts);
    // each host's serve keeps its own cache, named by the port the session came in on
    const remote = `${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache}/$(echo $SSH_CONNECTION | cut -d' ' -f4) --generator-bind-rw ${sb.dir} --generator-bind ${REPO_ROOT}`;
    const work = genjob(sb, [
      'work',
      '--drain',
      '--json',
      '--no-sandbox', // the generators record their workspace path, which names each host's cache
      '--generator',
      gen,
      '--ssh-config',
      config,
      '--remote-cmd',
      remote,
      '--in-doubt-after',
      '2',
      '--host',
      '2/h0',
      '--host',
      '2/h1',
      '--host',
      '2/h2',
    ]);
    const victim = hosts[2]!;
    await waitFor(
      'h2 to generate',
      () => countLines(counter) > 0 && readFileSync(counter, 'utf8').includes(`/${victim.port}-work/`),
    );
    await victim.stop(); // kill -9 of its sshd and every session process under it, serve included
    const w = await work;
    expect(w.exitCode, w.stderr).toBe(0);

    expect(genDir(sb, 'received')).toEqual(keys.map((k) => `${k}.json`).sort());
    expect([genDir(sb, 'queue'), genDir(sb, 'running')]).toEqual([[], []]);
    // an answer cut off by the kill may be kept in dead/ as raw material; no job is dead
    expect(genDir(sb, 'dead').filter((n) => n.includes('.job'))).toEqual([]);
    const received = eventsPerKey(sb, 'received');
    expect(received.size).toBe(24);
    expect([...received.values()].every((n) => n === 1)).toBe(true);

    const runs = readFileSync(counter, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [, key, cwd] = l.split(' ');
        return { key: key!, port: Number(/\/(\d+)-work\//.exec(cwd!)?.[1]) };
      });
    for (const h of hosts.slice(0, 2)) {
      const here = runs.filter((r) => r.port === h.port).map((r) => r.key);
      expect(new Set(here).size, `generations on port ${h.port}`).toBe(here.length);
    }
    const result = JSON.parse(String(w.stdout));
    const byDest = new Map(
      result.hosts.map((h: { destination: string; received: number }) => [h.destination, h]),
    );
    expect([...byDest.keys()]).toEqual(['h0', 'h1', 'h2']);
    // h2 really died under the run: it was marked down, and what it had in flight came back
    expect(journal(sb).some((e) => e.event === 'host-down' && e.destination === 'h2')).toBe(true);
    // show says which host ran each attempt, as the journal says who answered
    const answeredBy = new Map(
      journal(sb)
        .filter((e) => e.event === 'received')
        .map((e) => [e.key, e.destination]),
    );
    const shown = JSON.parse(String((await genjob(sb, ['show', '--json', keys[0]!])).stdout));
    expect(shown.attempts.at(-1).destination).toBe(answeredBy.get(keys[0]!));
    const total = result.hosts.reduce((n: number, h: { received: number }) => n + h.received, 0);
    expect(total).toBe(24);
  });
});

describe('a host that comes back after a crash', () => {
  const hosts: SshdHandle[] = [];
  let sb: Sandbox;
  const restarted: number[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) hosts.push(await startSshd());
    sb = await sandbox();
  });
  afterAll(async () => {
    for (const pid of restarted) {
      for (const d of descendantsOf(pid)) process.kill(d.pid, 'SIGKILL');
      process.kill(pid, 'SIGKILL');
    }
    for (const h of hosts) await h.stop();
    await sb?.cleanup();
  });

  it('answers its in-doubt job from its cache; the other host never replays it', async () => {
    const [key] = mintMany(sb, 1);
    const counter = path.join(sb.dir, 'runs');
    const started = path.join(sb.dir, 'started');
    const release = path.join(sb.dir, 'release');
    const genFile = path.join(sb.dir, 'gen-back.mjs');
    await writeFile(
      genFile,
      [
        "import { appendFileSync, existsSync, writeFileSync } from 'node:fs';",
        `appendFileSync(${JSON.stringify(counter)}, 'run ' + process.env.GENJOB_KEY + '\\n');`,
        `writeFileSync(${JSON.stringify(started)}, process.cwd());`, // the workspace lies in the host's cache
        `while (!existsSync(${JSON.stringify(release)})) await new Promise((r) => setTimeout(r, 50));`,
        "writeFileSync('src/a.txt', 'generated once\\n');",
        '',
      ].join('\n'),
    );
    const gen = `${NODE} ${genFile}`;
    const config = await poolConfig(sb.dir, hosts);
    const remote = `${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache}/$(echo $SSH_CONNECTION | cut -d' ' -f4) --generator-bind-rw ${sb.dir} --generator-bind ${REPO_ROOT}`;
    const work = genjob(sb, [
      'work',
      '--drain',
      '--json',
      '--no-sandbox', // the generators record their workspace path, which names each host's cache
      '--generator',
      gen,
      '--ssh-config',
      config,
      '--remote-cmd',
      remote,
      '--in-doubt-after',
      '600',
      '--host',
      'h0',
      '--host',
      'h1',
    ]);
    await waitFor('the generator to start', () => existsSync(started));
    const port = Number(/\/(\d+)-work\//.exec(readFileSync(started, 'utf8'))?.[1]);
    const victim = hosts.find((h) => h.port === port)!;
    const other = hosts.find((h) => h.port !== port)!;
    const name = `h${hosts.indexOf(victim)}`;
    // the host crashes: its sshd and every connection die (serve, orphaned, finishes and caches)
    const listener = Number(readFileSync(path.join(victim.tmp, 'sshd.pid'), 'utf8'));
    for (const d of descendantsOf(listener)) if (d.cmdline.startsWith('sshd')) process.kill(d.pid, 'SIGKILL');
    process.kill(listener, 'SIGKILL');
    await waitFor('the worker to see it', () =>
      journal(sb, key).some((e) => e.event === 'requeued' && e.destination === name),
    );
    await writeFile(release, '');
    const cache = path.join(sb.hostCache, String(victim.port));
    await waitFor('the crashed host to cache the result', () => hostResults(cache, key!).length === 1);
    // the host comes back on the same port
    const again = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', path.join(victim.tmp, 'sshd_config')], {
      stdio: 'ignore',
      detached: true,
    });
    restarted.push(again.pid!);
    const w = await work;
    expect(w.exitCode, w.stderr).toBe(0);
    expect(genDir(sb, 'received')).toEqual([`${key}.json`]);
    expect(countLines(counter)).toBe(1); // generated once, on the host that crashed
    const got = journal(sb, key).filter((e) => e.event === 'received');
    expect(got).toMatchObject([{ destination: name }]);
    const receipt = JSON.parse(readFileSync(path.join(sb.repo, '.gen/receipts', `${key}.json`), 'utf8'));
    expect(receipt).toMatchObject({ status: 'ok', cached: true, epoch: got[0]!.epoch });
    // only the delivered attempt counted; tries while the host was down were not spent
    const requeued = journal(sb, key).filter((e) => e.event === 'requeued');
    expect(requeued.map((e) => e.attempt_spent)).toEqual([true, ...requeued.slice(1).map(() => false)]);
    expect(hostResults(path.join(sb.hostCache, String(other.port)), key!)).toEqual([]);
  });
});
