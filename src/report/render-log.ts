// A check log's own page (logs/<sha256>.html): the whole log as escaped text under the same policy as
// every page. Never the raw file: a log is written by checked, untrusted code, and a browser that
// sniffed a raw file as HTML would run it with no policy at all. Pure.
import type { Assets } from './assets.js';
import { html } from './escape.js';
import { renderPage } from './page.js';

export function renderLog(sha256: string, text: string | null, assets: Assets, fingerprint: string): string {
  const body = html`<h1>check log</h1>
<p class="sub mono">sha256:${sha256}</p>
${text === null ? html`<p class="note bad">This log is no longer in .gen/objects/ (or does not hash to its name).</p>` : html`<pre class="log">${text}</pre>`}`;
  return renderPage({ title: `genjob log ${sha256.slice(0, 12)}`, body, assets, script: false, fingerprint });
}
