// Time per job as a small bar chart drawn in inline SVG (no script, no image file): bins of a round
// width (1, 2 or 5 × a power of ten milliseconds) chosen so at most MAX_BINS cover the slowest job.
// Each bar carries a <title> with its range and count, for a reader who points at it.
import { type Html, html } from './escape.js';

const MAX_BINS = 20;
const W = 400;
const H = 140;
const PAD = { left: 34, right: 8, top: 8, bottom: 30 };

/** Milliseconds as a reader says them: 850 ms, 1.5 s, 2 min. */
export function formatMs(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`;
  if (ms < 3_600_000) return `${Number((ms / 60_000).toFixed(1))} min`;
  return `${Number((ms / 3_600_000).toFixed(1))} h`;
}

/** The smallest round bin width giving at most MAX_BINS bins up to `max`. */
export function binWidth(max: number): number {
  for (let p = 1; ; p *= 10) for (const m of [1, 2, 5]) if ((max + 1) / (m * p) <= MAX_BINS) return m * p;
}

export function histogram(times: readonly number[]): Html {
  if (times.length === 0) return html`<p class="muted">No job has a receipt with a generation time yet.</p>`;
  const max = Math.max(...times);
  const width = binWidth(max);
  const bins = Math.floor(max / width) + 1;
  const counts = new Array<number>(bins).fill(0);
  for (const t of times) counts[Math.floor(t / width)]! += 1;
  const top = Math.max(...counts);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const barW = plotW / bins;
  const bars = counts.map((c, i) => {
    const h = top === 0 ? 0 : Math.round((c / top) * plotH * 10) / 10;
    const x = Math.round((PAD.left + i * barW + 1) * 10) / 10;
    const y = Math.round((PAD.top + plotH - h) * 10) / 10;
    return html`<rect class="bar" x="${x}" y="${y}" width="${Math.max(1, Math.round((barW - 2) * 10) / 10)}" height="${h}"><title>${formatMs(i * width)} &ndash; ${formatMs((i + 1) * width)}: ${c} job(s)</title></rect>`;
  });
  const ticks = [0, Math.floor(bins / 2), bins].map((i) => {
    const x = Math.round((PAD.left + i * barW) * 10) / 10;
    const anchor = i === 0 ? 'start' : i === bins ? 'end' : 'middle';
    return html`<text x="${x}" y="${H - PAD.bottom + 14}" text-anchor="${anchor}">${formatMs(i * width)}</text>`;
  });
  return html`<svg class="hist" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="time per job: ${times.length} job(s), slowest ${formatMs(max)}">
<line x1="${PAD.left}" y1="${PAD.top + plotH}" x2="${W - PAD.right}" y2="${PAD.top + plotH}"></line>
<text x="${PAD.left - 4}" y="${PAD.top + 8}" text-anchor="end">${top}</text>
<text x="${PAD.left - 4}" y="${PAD.top + plotH}" text-anchor="end">0</text>
${bars}
${ticks}
<text x="${(PAD.left + W - PAD.right) / 2}" y="${H - 4}" text-anchor="middle">generation time per job (${times.length} job(s))</text>
</svg>`;
}
