// genjob show KEY: everything genjob knows about one job — its document, state, attempts and
// lease, receipt (as stored; `verify` is what checks it), dead-lettered material and journal.
import { readdirSync } from 'node:fs';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { openStore } from '../cli/root.js';
import { epochsOf, readAttempt } from '../store/attempts.js';
import { readIfExists } from '../store/durable.js';
import { findJob, resolveKey } from '../store/job-files.js';
import { readJournal } from '../store/journal.js';
import { readLease } from '../store/lease.js';

function parseLoose(bytes: Buffer | undefined): unknown {
  if (!bytes) return null;
  try {
    const doc = JSON.parse(bytes.toString('utf8'));
    if (typeof doc.payload === 'string' && typeof doc.payloadType === 'string') {
      return {
        envelope: { payloadType: doc.payloadType, signatures: doc.signatures },
        payload: JSON.parse(Buffer.from(doc.payload, 'base64').toString('utf8')),
      };
    }
    return doc;
  } catch {
    return { unreadable: bytes.subarray(0, 200).toString('utf8') };
  }
}

export async function show(o: CommonOptions & { key: string }): Promise<CommandResult> {
  const store = openStore(o);
  const key = resolveKey(store, o.key);
  const found = findJob(store, key);
  const doc = parseLoose(found?.bytes) as Record<string, unknown> | null;
  const job = found?.state === 'applied' ? (doc?.job as Record<string, unknown>) : doc;
  const attempts = epochsOf(store, key).map((e) => readAttempt(store, key, e));
  const receipt = parseLoose(readIfExists(store, store.layout.receipt(key)));
  let dead: string[] = [];
  try {
    dead = readdirSync(store.layout.dir('dead')).filter((n) => n.startsWith(key) && !n.endsWith('.why.json'));
  } catch {
    // no dead/ yet
  }
  const events = readJournal(store, key);
  const lease = readLease(store, key) ?? null;
  const applied = found?.state === 'applied' ? { writes: doc?.writes, applied_at: doc?.applied_at } : null;
  const lines = [
    `key       ${key}`,
    `state     ${found?.state ?? 'unknown'}`,
    `inputs    ${((job?.inputs as Array<{ path: string; sha256: string | null }>) ?? []).map((i) => `${i.path}${i.sha256 === null ? ' (create)' : ''}`).join(', ')}`,
    `attempts  ${attempts.map((a) => `epoch ${a?.epoch} by ${a?.worker.id} at ${a?.claimed_at} → ${a?.destination}`).join('\n          ') || 'none'}`,
    `lease     ${lease ? `epoch ${lease.epoch}, worker ${lease.worker.id}` : 'none'}`,
    '',
    'instruction:',
    ...String(job?.instruction ?? '')
      .split('\n')
      .map((l) => `  ${l}`),
    '',
    `receipt:   ${receipt ? JSON.stringify(receipt, null, 2).split('\n').join('\n  ') : 'none'}`,
  ];
  if (applied) lines.push('', `applied:   ${JSON.stringify(applied, null, 2).split('\n').join('\n  ')}`);
  if (dead.length) lines.push('', 'dead-lettered:', ...dead.map((d) => `  dead/${d}`));
  lines.push(
    '',
    'journal:',
    ...events.map(
      (e) => `  ${e.at} ${e.event}${e.reason ? `: ${e.reason}` : ''}${e.epoch ? ` (epoch ${e.epoch})` : ''}`,
    ),
  );
  return {
    human: lines.join('\n'),
    json: {
      ok: true,
      key,
      state: found?.state ?? null,
      job,
      attempts,
      lease,
      receipt,
      applied,
      dead,
      journal: events,
    },
  };
}
