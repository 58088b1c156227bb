// A check log's own page (logs/<sha256>.html): the whole log as escaped text under the same policy as
// every page. Never the raw file: a log is written by checked, untrusted code, and a browser that
// sniffed a raw file as HTML would run it with no policy at all. A log whose markup would pass
// LOG_PAGE_MARKUP is shown up to it, and says where the rest is. Pure.
import type { Assets } from './assets.js';
import type { Found } from './bytes.js';
import { html, markupLength } from './escape.js';
import { backToIndex, renderPage } from './page.js';

/** Markup a log's page may hold (characters): a 4 MiB log of soft hyphens would be some 160 MiB. */
export const LOG_PAGE_MARKUP = 8 * 1024 * 1024;
const PIECE = 64 * 1024;

/** The longest start of `text`, in pieces, whose markup fits in `budget`; all of it when it fits. */
function fitting(text: string, budget: number): string {
  let end = 0;
  let used = 0;
  while (end < text.length) {
    let next = Math.min(text.length, end + PIECE);
    // never between the two halves of a surrogate pair
    if (next < text.length && /[\ud800-\udbff]/.test(text[next - 1]!)) next -= 1;
    used += markupLength(text.slice(end, next));
    if (used > budget) break;
    end = next;
  }
  return text.slice(0, end);
}

const WHY: Record<Exclude<Found['kind'], 'ok'>, string> = {
  missing: 'This log is no longer in .gen/objects/.',
  drift: 'The file .gen/objects/ holds under this name does not hash to it: not shown.',
  large: 'This log is over 4 MiB: not shown here; it is the file .gen/objects/ holds under this name.',
  'bad-path': 'Not a log name.',
};

function shown(bytes: Buffer, sha256: string) {
  const text = bytes.toString('utf8');
  const start = fitting(text, LOG_PAGE_MARKUP);
  const rest =
    start.length < text.length
      ? html`<p class="note bad">The rest of this log (${text.length - start.length} more characters) is too large to show here; it is the file .gen/objects/ holds under sha256:${sha256}.</p>`
      : '';
  // the whole log, in the page's own flow (no box of its own to scroll)
  return html`<pre class="log whole">\n${start}</pre>${rest}`;
}

export function renderLog(sha256: string, log: Found, assets: Assets, fingerprint: string): string {
  // a log is shared by every check that printed it: back to the index, where each job links its own
  const body = html`<h1>check log</h1>
<p class="sub mono">sha256:${sha256}</p>
${log.kind === 'ok' ? shown(log.bytes, sha256) : html`<p class="note bad">${WHY[log.kind]}</p>`}`;
  return renderPage({
    title: `genjob log ${sha256.slice(0, 12)}`,
    nav: backToIndex(),
    body,
    assets,
    script: false,
    fingerprint,
  });
}
