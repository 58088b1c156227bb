// The report's stylesheet and script, kept as files (src/report/assets/, copied to dist/report-assets/
// by the build, so the installed package carries them) and inlined into each page, where the page's
// Content-Security-Policy pins them by sha256: the browser runs that exact script and nothing else.
// Inline rather than linked: on file:// Chromium's 'self' matches every file: URL on the disk.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packageRoot } from '../cli/package-root.js';
import { readText } from '../core/read-text.js';
import { VERSION } from '../version.js';

export interface Assets {
  css: string;
  js: string;
  /** CSP hash sources ('sha256-<base64>') of the inline style and script. */
  cssHash: string;
  jsHash: string;
  /**
   * Changes whenever the pages genjob renders could: its version, both assets and the code that renders
   * (the bundle chunk holding this module, which esbuild builds with every renderer of the report).
   */
  renderId: string;
}

/** Where the asset files are: dist/report-assets/ for the built CLI (an install has no src/), src/report/assets/ when run from source. */
export function assetDir(root = packageRoot()): string {
  return import.meta.url.endsWith('.ts')
    ? join(root, 'src', 'report', 'assets')
    : join(root, 'dist', 'report-assets');
}

function cspHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

const loaded = new Map<string, Assets>();

export function loadAssets(dir = assetDir()): Assets {
  const known = loaded.get(dir);
  if (known) return known;
  const css = readText(join(dir, 'report.css'));
  const js = readText(join(dir, 'report.js'));
  const code = readFileSync(fileURLToPath(import.meta.url));
  const assets = {
    css,
    js,
    cssHash: cspHash(css),
    jsHash: cspHash(js),
    renderId: createHash('sha256').update(`genjob ${VERSION}\0${css}\0${js}\0`).update(code).digest('hex'),
  };
  loaded.set(dir, assets);
  return assets;
}
