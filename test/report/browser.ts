// A real browser for the report's tests: Debian's chromium (installed by scripts/check-system.mjs, as
// sshd is) driven by playwright-core through its executable path, headless, with a fresh profile in the
// test's temp dir and nothing that reaches out (no background networking, updates, sync or first-run).
// Each opened page records its console errors, uncaught errors, failed and non-file requests, and the
// calls of a hook (`genjobPwned`) that hostile fixtures call if any of their script ever runs.
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.GENJOB_CHROMIUM ?? '/usr/bin/chromium';

/** `dir`: the test's temp dir (it must outlive the browser); the profile is made fresh inside it. */
export async function launchChromium(dir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(join(dir, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-dev-shm-usage', // a container's /dev/shm is often too small for a renderer
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

export interface Watched {
  page: Page;
  consoleErrors: string[];
  pageErrors: string[];
  failedRequests: string[];
  /** Every URL the page asked for that is not a file: URL. */
  remoteRequests: string[];
  /** Calls of window.genjobPwned(what): a hostile payload's script ran. */
  pwned: string[];
}

/** A new tab watching everything above, with the hook installed before any script of the page. */
export async function watchedPage(ctx: BrowserContext): Promise<Watched> {
  const page = await ctx.newPage();
  const w: Watched = {
    page,
    consoleErrors: [],
    pageErrors: [],
    failedRequests: [],
    remoteRequests: [],
    pwned: [],
  };
  await page.exposeBinding('genjobPwned', (_source, what: unknown) => {
    w.pwned.push(String(what));
  });
  page.on('console', (m) => {
    if (m.type() === 'error') w.consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => w.pageErrors.push(e.message));
  page.on('requestfailed', (r) => w.failedRequests.push(r.url()));
  page.on('request', (r) => {
    if (!r.url().startsWith('file://')) w.remoteRequests.push(r.url());
  });
  return w;
}

export async function open(w: Watched, file: string): Promise<void> {
  await w.page.goto(`file://${file}`);
  await w.page.waitForLoadState('load');
}

/** No console error, no uncaught error, no failed request, no request off the disk, no hostile script. */
export function clean(w: Watched) {
  return {
    consoleErrors: w.consoleErrors,
    pageErrors: w.pageErrors,
    failedRequests: w.failedRequests,
    remoteRequests: w.remoteRequests,
    pwned: w.pwned,
  };
}

export const CLEAN = { consoleErrors: [], pageErrors: [], failedRequests: [], remoteRequests: [], pwned: [] };
