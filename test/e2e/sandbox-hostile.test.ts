// A hostile generator on a host set up as docs/trust.md says (`serve --sign-key KEY` over a real
// sshd on 127.0.0.1, generators confined by bubblewrap): it tries to read the signing key, the
// result cache, $HOME/.ssh, the host's secrets in its environment, another job's workspace, a TCP
// listener on loopback and the kernel keyring, to poison another job's cache entry, and to leave a
// process behind. It reports what it reached in its own output file; every probe must say "denied",
// and its job still completes. A cache entry changed from outside the sandbox is not served either.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/core/sha256.js';
import { liveProcesses } from '../helpers/processes.js';
import { useSshd } from '../helpers/sshd.js';
import { tempDir } from '../helpers/temp-store.js';
import {
  CLI,
  countLines,
  genDir,
  genjob,
  hostResults,
  mint,
  NODE,
  REPO_ROOT,
  sshFlags,
  useBoxes,
  writeGenerator,
} from './ssh-helpers.js';

const sshd = useSshd();
const box = useBoxes();
let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
});

// keyring: keyctl(KEYCTL_GET_KEYRING_ID, @s) with x86_64's number; the kernel keyring is not namespaced
const PROBES = [
  'key',
  'cache',
  'home_ssh',
  'env',
  'network',
  'other_workspace',
  'poison',
  ...(process.arch === 'x64' ? ['keyring'] : []),
];

function hostileScript(o: { key: string; hc: string; home: string; port: number; marker: string }): string {
  return [
    `p_key() { grep -q PRIVATE ${o.key}; }`,
    `p_cache() { ls -A ${o.hc} | grep -q .; }`,
    `p_home_ssh() { grep -q PRIVATE ${o.home}/.ssh/id_ed25519; }`,
    `p_env() { env | grep -qE '^(AWS_SECRET_ACCESS_KEY|SSH_AUTH_SOCK|GENJOB_SIGN_KEY)='; }`,
    `p_network() { node -e "require('net').connect(${o.port}, '127.0.0.1').on('connect', () => process.exit(0)).on('error', () => process.exit(1))"; }`,
    `p_other_workspace() { ls -d ${o.hc}/work/a-* ${o.hc}-work/a-* 2>/dev/null | grep -v "^$(dirname "$PWD")$" | grep -q .; }`,
    `p_keyring() { perl -e 'exit(syscall(250, 0, -3, 0) < 0 ? 1 : 0)'; }`,
    `p_poison() { ls ${o.hc}/results/*/files/src/b.txt && for f in ${o.hc}/results/*/files/src/b.txt; do echo POISON > "$f" || return 1; done; }`,
    'probe() { if "p_$1" >/dev/null 2>&1; then echo "$1: REACHED"; else echo "$1: denied"; fi; }',
    // a child in a process group of its own (setpgid, not setsid), left running on purpose
    `perl -e 'setpgrp(0, 0); exec "sleep", "${o.marker}"' >/dev/null 2>&1 &`,
    'sleep 1', // let the other hostile job's workspace exist
    `for p in ${PROBES.join(' ')}; do probe "$p"; done > "$GENJOB_INSTRUCTION"`,
    '',
  ].join('\n');
}

describe('a hostile generator on a host with serve --sign-key', () => {
  it('reaches none of the key, cache, $HOME/.ssh, secrets, other workspaces or network; its job completes; nothing survives', async () => {
    const sb = await box();
    const bin = path.join(sb.dir, 'bin');
    const home = path.join(sb.dir, 'home');
    mkdirSync(bin);
    mkdirSync(path.join(home, '.ssh'), { recursive: true });
    writeFileSync(path.join(home, '.ssh', 'id_ed25519'), '-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n');
    // the key lives apart from every exposed path: serve refuses a bind that holds it
    const key = path.join(tempDir('gj-keys-'), 'host.key');
    expect((await genjob(sb, ['keygen', '--out', key])).exitCode).toBe(0);

    let connections = 0;
    server = createServer((s) => {
      connections += 1;
      s.destroy();
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const marker = `300.${process.pid}7`;
    writeFileSync(path.join(bin, 'hostile.sh'), hostileScript({ key, hc: sb.hostCache, home, port, marker }));
    // the host's own environment holds secrets; serve must not hand them on
    const remote = [
      `HOME=${home} AWS_SECRET_ACCESS_KEY=fake-aws-secret SSH_AUTH_SOCK=${sb.dir}/agent.sock GENJOB_SIGN_KEY=${key}`,
      `${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache} --sign-key ${key} --generator-bind ${bin}`,
    ].join(' ');
    const flags = sshFlags(sshd(), remote);

    // first an honest job whose cache entry the hostile ones will try to poison
    const counter = path.join(sb.dir, 'honest-runs');
    const honest = await writeGenerator(sb.dir, { counter, target: 'src/b.txt', text: 'BRAVO honest\n' });
    const honestRemote = `${remote} --generator-bind-rw ${sb.dir} --generator-bind ${REPO_ROOT}`;
    const keyB = await mint(sb, 'shout bravo', ['src/b.txt']);
    const wb = await genjob(sb, ['work', '--once', '--generator', honest, ...sshFlags(sshd(), honestRemote)]);
    expect(wb.exitCode, String(wb.stderr)).toBe(0);
    expect(hostResults(sb.hostCache, keyB)).toHaveLength(1);

    const keyA1 = await mint(sb, 'src/a.txt', ['src/a.txt']);
    const keyA2 = await mint(sb, 'README.md', ['README.md']);
    const w = await genjob(sb, [
      'work',
      '--drain',
      '--concurrency',
      '2',
      '--generator',
      `sh ${path.join(bin, 'hostile.sh')}`,
      ...flags,
    ]);
    expect(w.exitCode, String(w.stderr)).toBe(0);
    expect(genDir(sb, 'received')).toEqual([keyA1, keyA2, keyB].map((k) => `${k}.json`).sort());
    for (const [k, file] of [
      [keyA1, 'src/a.txt'],
      [keyA2, 'README.md'],
    ] as const) {
      const receipt = JSON.parse(
        Buffer.from(
          JSON.parse(readFileSync(path.join(sb.repo, '.gen/receipts', `${k}.json`), 'utf8')).payload,
          'base64',
        ).toString(),
      );
      expect(receipt, receipt.reason).toMatchObject({
        status: 'ok',
        sandbox: { kind: 'bwrap', network: false },
      });
      const report = readFileSync(path.join(sb.repo, '.gen/out', k, file), 'utf8');
      for (const p of PROBES) expect(report).toContain(`${p}: denied\n`);
    }
    expect(connections).toBe(0);
    // nothing it started outlived its run
    expect(liveProcesses(['sleep', marker])).toEqual([]);

    // a second repository minting the honest job gets the honest bytes from the host cache
    const sb2 = await box();
    await mint(sb2, 'shout bravo', ['src/b.txt']);
    const w2 = await genjob(sb2, [
      'work',
      '--once',
      '--generator',
      honest,
      ...sshFlags(sshd(), honestRemote),
    ]);
    expect(w2.exitCode, String(w2.stderr)).toBe(0);
    expect(readFileSync(path.join(sb2.repo, '.gen/out', keyB, 'src/b.txt'), 'utf8')).toBe('BRAVO honest\n');
    expect(countLines(counter)).toBe(1);
  });

  it('does not serve a cache entry changed from outside serve: it is set aside and generated again', async () => {
    const sb = await box();
    const counter = path.join(sb.dir, 'runs');
    const gen = await writeGenerator(sb.dir, { counter, target: 'src/b.txt', text: 'BRAVO honest\n' });
    const remote = `${NODE} ${CLI} serve --session --cache-dir ${sb.hostCache} --generator-bind-rw ${sb.dir} --generator-bind ${REPO_ROOT}`;
    const key = await mint(sb, 'shout bravo', ['src/b.txt']);
    expect(
      (await genjob(sb, ['work', '--once', '--generator', gen, ...sshFlags(sshd(), remote)])).exitCode,
    ).toBe(0);

    // rewrite the entry consistently: new bytes, and result.json naming their digest
    const [entry] = hostResults(sb.hostCache, key);
    const dir = path.join(sb.hostCache, 'results', entry!);
    const evil = 'BRAVO poisoned\n';
    writeFileSync(path.join(dir, 'files/src/b.txt'), evil);
    const result = JSON.parse(readFileSync(path.join(dir, 'result.json'), 'utf8'));
    result.outputs[0].sha256 = sha256Hex(evil);
    result.outputs[0].bytes = evil.length;
    writeFileSync(path.join(dir, 'result.json'), JSON.stringify(result));

    const sb2 = await box();
    await mint(sb2, 'shout bravo', ['src/b.txt']);
    const w2 = await genjob(sb2, ['work', '--once', '--generator', gen, ...sshFlags(sshd(), remote)]);
    expect(w2.exitCode, String(w2.stderr)).toBe(0);
    expect(readFileSync(path.join(sb2.repo, '.gen/out', key, 'src/b.txt'), 'utf8')).toBe('BRAVO honest\n');
    expect(countLines(counter)).toBe(2); // regenerated, not served
    expect(readdirSync(path.join(sb.hostCache, 'quarantine'))).toHaveLength(1);
    void execFileSync;
  });
});
