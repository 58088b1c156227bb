// The shell of every report page: its Content-Security-Policy, its inline stylesheet (and, on the index,
// its script), both pinned by sha256, and a last line naming the digest of what the page was rendered
// from. The policy allows no load at all (default-src 'none'), no other script, no inline handler, no
// form, no <base>: were escaping ever to fail, the browser would still run nothing but genjob's script.
// Its landmarks: a page's way back (<nav>, on job and log pages) and its content (<main>).
import type { Assets } from './assets.js';
import { type Html, href, html, raw } from './escape.js';

/** The page's last line; the writer reads it back to skip a page whose inputs did not change. */
export const FINGERPRINT_PREFIX = '<!-- genjob report inputs sha256:';

export function contentSecurityPolicy(assets: Assets, script: boolean): string {
  return [
    "default-src 'none'",
    `style-src ${assets.cssHash}`,
    `script-src ${script ? assets.jsHash : "'none'"}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function fingerprintLine(fingerprint: string): string {
  return `${FINGERPRINT_PREFIX}${fingerprint} -->\n`;
}

/** The link a job's or a log's page leads with: back to the index (the arrow is not read out). */
export function backToIndex(): Html {
  return html`<nav class="top"><a href="${href('../index.html')}"><span aria-hidden="true">\u2190 </span>all jobs</a></nav>`;
}

export function renderPage(o: {
  title: string;
  /** Before the page's <main>: its <nav>, when it has one. */
  nav?: Html;
  body: Html;
  assets: Assets;
  /** The index's sorting and filtering script; job and log pages run none. */
  script: boolean;
  fingerprint: string;
}): string {
  const page = html`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(o.assets, o.script)}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title}</title>
<style>${raw(o.assets.css)}</style>
</head>
<body>
${o.nav ?? ''}
<main>
${o.body}
</main>
${o.script ? html`<script>${raw(o.assets.js)}</script>` : ''}
</body>
</html>
`;
  return page.markup + fingerprintLine(o.fingerprint);
}

/**
 * The page written in place of one that could not be drawn (a bug, or more markup than a string holds):
 * what went wrong, said on the page and on its row, so one job never sinks the whole report.
 */
export function renderUndrawn(o: {
  title: string;
  why: string;
  assets: Assets;
  fingerprint: string;
}): string {
  const body = html`<h1>${o.title}</h1>
<p class="note bad">This page could not be drawn: ${o.why}. <code>genjob show</code> and <code>genjob apply KEY --dry-run --diff</code> show the job in a terminal.</p>`;
  return renderPage({
    title: o.title,
    nav: backToIndex(),
    body,
    assets: o.assets,
    script: false,
    fingerprint: o.fingerprint,
  });
}
