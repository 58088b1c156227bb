// Lines added and removed between two texts: the shortest edit script's size (Myers' O((N+M)D)
// greedy search), so a moved block counts as removed + added and unchanged lines cost nothing.
// Past MAX_D edits the count falls back to a multiset difference (an upper bound on agreement).

const MAX_D = 20_000;

function lines(bytes: Uint8Array): string[] {
  const text = Buffer.from(bytes).toString('utf8');
  if (text === '') return [];
  const all = text.split('\n');
  if (all[all.length - 1] === '') all.pop();
  return all;
}

function lcsLength(a: readonly string[], b: readonly string[]): number | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_D);
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  for (let d = 0; d <= max; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return (n + m - d) / 2;
    }
  }
  return null;
}

function multisetCommon(a: readonly string[], b: readonly string[]): number {
  const counts = new Map<string, number>();
  for (const l of a) counts.set(l, (counts.get(l) ?? 0) + 1);
  let common = 0;
  for (const l of b) {
    const c = counts.get(l) ?? 0;
    if (c > 0) {
      common++;
      counts.set(l, c - 1);
    }
  }
  return common;
}

/** Lines `to` adds and removes relative to `from` (either may be empty: a created or deleted file). */
export function lineDelta(from: Uint8Array, to: Uint8Array): { added: number; removed: number } {
  const a = lines(from);
  const b = lines(to);
  const common = lcsLength(a, b) ?? multisetCommon(a, b);
  return { added: b.length - common, removed: a.length - common };
}
