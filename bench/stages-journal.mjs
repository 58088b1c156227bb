// Bench stage show-journal: `genjob show KEY` with a 1,000,000-event journal next to its floor, `node -e 0`
// then `grep -c KEY` over the same bytes (grep alone is below Node's start-up), twice: with every event
// still in a segment of journal.d/ (show searches the bytes), then after `genjob gc` has folded them into
// the key-sorted journal.1.jsonl (show binary-searches it). Show with an empty journal is measured too:
// Node's start-up and show's other reads, which no journal layout removes. The events are written
// straight to one segment of .gen/journal.d/ in the shape genjob writes them; one key among 200,000 has
// 5 of them.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { makeJob, queueJob, sha256 } from './fixtures.mjs';

const KINDS = ['minted', 'claimed', 'attempt', 'shipped', 'received'];

/** `count` events over count/5 keys, the job's key among them; returns the segment's path. */
function writeJournal(root, key, count) {
  const dir = join(root, '.gen', 'journal.d');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'bench-4242-1.jsonl');
  const keys = Math.max(1, Math.floor(count / 5));
  const keyOf = (i) => (i === Math.floor(keys / 2) ? key : sha256(`bench key ${i}`));
  const names = Array.from({ length: keys }, (_, i) => keyOf(i));
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const fd = openSync(file, 'w');
  let batch = [];
  for (let i = 0; i < count; i++) {
    const ev = { at: new Date(t0 + i * 10).toISOString(), pid: 4242, event: KINDS[Math.floor(i / keys) % 5] };
    batch.push(JSON.stringify({ ...ev, key: names[i % keys], epoch: 1, worker: { id: 'bench-4242' } }));
    if (batch.length === 10_000 || i === count - 1) {
      writeSync(fd, `${batch.join('\n')}\n`);
      batch = [];
    }
  }
  closeSync(fd);
  return file;
}

/** The stage, given run.mjs's measuring helpers. */
export function journalStages({ alternate, record, genjob, run, freshRepo, events, NODE }) {
  return {
    'show-journal'() {
      const root = freshRepo('show-journal');
      const made = makeJob('bench show', [{ path: 'new.txt', sha256: null }]);
      mkdirSync(join(root, '.gen', 'queue'), { recursive: true });
      queueJob(root, made);
      const showMs = () => {
        const r = genjob(['show', '--json', made.key], { cwd: root });
        return { ms: r.ms, n: JSON.parse(r.stdout).journal.length };
      };
      const empty = alternate({ genjob: () => showMs().ms, baseline: () => 0 }).genjob;
      const label = `show, ${events.toLocaleString('en')}-event journal`;
      /** show against node -e 0 + grep -c over `file`, which holds the key's 5 events among the rest. */
      const measure = (file) =>
        alternate({
          genjob: () => {
            const r = showMs();
            if (r.n !== 5) throw new Error(`show-journal: ${r.n} events of the key, expected 5`);
            return r.ms;
          },
          baseline: () => {
            const node = run(NODE, ['-e', '0']).ms;
            const r = run('grep', ['-c', made.key, file]);
            if (r.stdout.trim() !== '5') throw new Error(`show-journal: grep counted ${r.stdout.trim()}`);
            return node + r.ms;
          },
        });
      const mibOf = (file) => Math.round(Number(run('stat', ['-c', '%s', file]).stdout) / 2 ** 20);

      // 1. every event in a segment of journal.d/ (no gc yet): show searches the bytes
      const segment = writeJournal(root, made.key, events);
      const live = measure(segment);
      record(`${label}, no gc yet`, {
        ...live,
        target: 1.2,
        note: `byte search of one ${mibOf(segment)} MiB segment; baseline = \`node -e 0\` + \`grep -c KEY\` over it; show with an empty journal ${Math.round(empty)} ms, so the journal's share is ${Math.round(live.genjob - empty)} ms`,
      });

      // 2. after gc: the same events in journal.1.jsonl, sorted by key, binary-searched
      genjob(['gc'], { cwd: root });
      const rotated = join(root, '.gen', 'journal.1.jsonl');
      const after = measure(rotated);
      record(`${label}, after gc`, {
        ...after,
        target: 1.2,
        note: `binary search of the ${mibOf(rotated)} MiB rotated file; baseline = \`node -e 0\` + \`grep -c KEY\` over it; show with an empty journal ${Math.round(empty)} ms`,
      });
    },
  };
}
