// A check log's own page (logs/<sha256>.html): the whole log as escaped text under the same policy as
// every page. Never the raw file: a log is written by checked, untrusted code, and a browser that
// sniffed a raw file as HTML would run it with no policy at all. Pure.
import type { Assets } from './assets.js';
import type { Found } from './bytes.js';
import { html } from './escape.js';
import { renderPage } from './page.js';

const WHY: Record<Exclude<Found['kind'], 'ok'>, string> = {
  missing: 'This log is no longer in .gen/objects/.',
  drift: 'The file .gen/objects/ holds under this name does not hash to it: not shown.',
  large: 'This log is over 4 MiB: not shown here; it is the file .gen/objects/ holds under this name.',
  'bad-path': 'Not a log name.',
};

export function renderLog(sha256: string, log: Found, assets: Assets, fingerprint: string): string {
  const body = html`<h1>check log</h1>
<p class="sub mono">sha256:${sha256}</p>
${log.kind === 'ok' ? html`<pre class="log">${log.bytes.toString('utf8')}</pre>` : html`<p class="note bad">${WHY[log.kind]}</p>`}`;
  return renderPage({ title: `genjob log ${sha256.slice(0, 12)}`, body, assets, script: false, fingerprint });
}
