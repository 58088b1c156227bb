// Helpers for the pool and --launch tests: mint many jobs quickly (through the store, since minting
// is not what these tests are about), and count per key what the journal and the hosts recorded.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildJob } from '../../src/core/job.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { mintJob } from '../../src/store/mint-job.js';
import { Store } from '../../src/store/store.js';
import type { SshdHandle } from '../helpers/sshd.js';
import { journal, type Sandbox } from './ssh-helpers.js';

/** Mint `n` jobs over src/a.txt (instruction "job i"); returns their keys. */
export function mintMany(sb: Sandbox, n: number): string[] {
  const store = new Store(sb.repo).ensure();
  const digest = sha256Hex(readFileSync(path.join(sb.repo, 'src/a.txt')));
  return Array.from({ length: n }, (_, i) => {
    const job = buildJob(`job ${i}`, [{ path: 'src/a.txt', sha256: digest }]);
    mintJob(store, job);
    return job.key;
  });
}

/** How many journal events of `event` each key has. */
export function eventsPerKey(sb: Sandbox, event: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of journal(sb))
    if (e.event === event && e.key) counts.set(e.key, (counts.get(e.key) ?? 0) + 1);
  return counts;
}

/** Lines "run KEY" a counting generator appended, per key. */
export function runsPerKey(counter: string): Map<string, number> {
  const counts = new Map<string, number>();
  let text = '';
  try {
    text = readFileSync(counter, 'utf8');
  } catch {
    return counts;
  }
  for (const line of text.split('\n')) {
    const key = /^run (\w+)$/.exec(line)?.[1];
    if (key) counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** An ssh client config block naming the suite's server `h` by `alias`, with its own port, key and known_hosts. */
export function sshHostBlock(alias: string, h: SshdHandle): string {
  return [
    `Host ${alias}`,
    `  HostName ${h.host}`,
    `  Port ${h.port}`,
    `  User ${h.user}`,
    `  IdentityFile ${h.identityFile}`,
    '  IdentitiesOnly yes',
    `  UserKnownHostsFile ${h.knownHostsFile}`,
    '  GlobalKnownHostsFile /dev/null',
    '  StrictHostKeyChecking yes',
    '  CheckHostIP no',
    '  BatchMode yes',
    '',
  ].join('\n');
}
