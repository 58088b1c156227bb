// The contrast of the report's colours, computed from its stylesheet as written (WCAG 2.1 relative
// luminance): every text colour it declares reads at 4.5:1 or more on every background text is drawn
// on (the page's white and soft grey; in a diff, each line's and each marked word's background), a mark
// with a background of its own on that background, and the histogram's bars and the focus ring at 3:1
// against the page (WCAG 1.4.3 and 1.4.11).
import { describe, expect, it } from 'vitest';
import { loadAssets } from '../../src/report/assets.js';
import { contrast } from './contrast-ratio.js';

interface Rule {
  selectors: string[];
  decls: Map<string, string>;
}

function rules(css: string): Rule[] {
  const bare = css.replace(/\/\*[\s\S]*?\*\//g, '');
  expect(bare).not.toContain('@'); // no at-rule (a media query would hold rules this reader skips)
  return [...bare.matchAll(/([^{}]+)\{([^{}]*)\}/g)].map((m) => ({
    selectors: m[1]!.split(',').map((s) => s.trim().replace(/\s+/g, ' ')),
    decls: new Map(
      m[2]!
        .split(';')
        .map((d) => d.trim())
        .filter(Boolean)
        .map((d) => {
          const at = d.indexOf(':');
          return [d.slice(0, at).trim(), d.slice(at + 1).trim()] as [string, string];
        }),
    ),
  }));
}

const RULES = rules(loadAssets().css);
const ROOT = RULES.find((r) => r.selectors.includes(':root'))!.decls;

/** A declared value as a #rrggbb colour, its var() resolved; null for none, inherit, currentColor. */
function colour(value: string): string | null {
  const v = value.replace(/^var\((--[\w-]+)\)$/, (_, name: string) => ROOT.get(name)!);
  if (/^#[0-9a-f]{6}$/i.test(v)) return v.toLowerCase();
  if (/^#[0-9a-f]{3}$/i.test(v)) return `#${[...v.slice(1)].map((c) => c + c).join('')}`.toLowerCase();
  if (['none', 'inherit', 'currentColor', 'transparent'].includes(v)) return null;
  throw new Error(`report.css: a colour this test cannot read: ${value}`);
}

/** The colour `prop` of the rule naming exactly `selector` (a background's shorthand read as its colour). */
function declared(selector: string, prop: string): string {
  const rule = RULES.find((r) => r.selectors.includes(selector) && r.decls.has(prop));
  if (!rule) throw new Error(`report.css: no ${prop} for ${selector}`);
  const c = colour(rule.decls.get(prop)!);
  if (c === null) throw new Error(`report.css: ${selector} has no ${prop} colour`);
  return c;
}

const WHITE = '#ffffff';
/** Rules that draw their own background under their own text: checked as their pair alone. */
const OWN_GROUND = ['.log', '.hidden-char'];
/** Inside a diff's cell: the line's text (the page's colour) and what the stylesheet colours there. */
const DIFF_TEXT = ['table.diff td.ln', 'table.diff tr.hunk td', 'table.diff th', '.cr-char', '.no-eol'];

/** Every text colour the stylesheet declares (color, and fill for the histogram's text), by selector. */
function textColours(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const r of RULES) {
    if (r.selectors.some((s) => OWN_GROUND.includes(s))) continue;
    for (const prop of ['color', 'fill']) {
      const v = r.decls.get(prop);
      if (v === undefined || (prop === 'fill' && !r.selectors.some((s) => s.endsWith(' text')))) continue;
      const c = colour(v);
      if (c) for (const s of r.selectors) out.push([s, c]);
    }
  }
  return out;
}

/** Every background the stylesheet declares for a diff's rows and marked words. */
function diffGrounds(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const r of RULES)
    for (const s of r.selectors) {
      const v = r.decls.get('background');
      if (s.startsWith('table.diff') && v !== undefined) {
        const c = colour(v);
        if (c) out.push([s, c]);
      }
    }
  return out;
}

describe('the report stylesheet’s contrast', () => {
  it('reads its colours: a text colour per state and verdict, and a background per kind of diff line', () => {
    expect(textColours().length).toBeGreaterThan(20);
    expect(diffGrounds().map(([s]) => s)).toEqual(
      expect.arrayContaining([
        'table.diff td.add',
        'table.diff td.del',
        'table.diff td.add ins',
        'table.diff td.del del',
      ]),
    );
  });

  it('every text colour on the page’s backgrounds (white, and the soft grey of headers, bars and a hovered row): ≥ 4.5', () => {
    const grounds: Array<[string, string]> = [
      ['page', WHITE],
      ['th', declared('th', 'background')],
      ['.file-head', declared('.file-head', 'background')],
      ['table.jobs tbody tr:hover', declared('table.jobs tbody tr:hover', 'background')],
    ];
    const low = textColours().flatMap(([s, fg]) =>
      grounds.flatMap(([g, bg]) =>
        contrast(fg, bg) < 4.5 ? [`${s} on ${g}: ${contrast(fg, bg).toFixed(2)}`] : [],
      ),
    );
    expect(low).toEqual([]);
  });

  it('every text colour of a diff on each diff background (a line, a marked word, a hunk header): ≥ 4.5', () => {
    const fg: Array<[string, string]> = [
      ['body', declared('body', 'color')],
      ...DIFF_TEXT.map((s) => [s, declared(s, 'color')] as [string, string]),
    ];
    const low = fg.flatMap(([s, f]) =>
      diffGrounds().flatMap(([g, bg]) =>
        contrast(f, bg) < 4.5 ? [`${s} on ${g}: ${contrast(f, bg).toFixed(2)}`] : [],
      ),
    );
    expect(low).toEqual([]);
  });

  it('a mark drawn on its own background, a log on its dark one: ≥ 4.5', () => {
    for (const s of OWN_GROUND)
      expect([s, contrast(declared(s, 'color'), declared(s, 'background'))]).toEqual([
        s,
        expect.toSatisfy((r: number) => r >= 4.5),
      ]);
  });

  it('the histogram’s bars and the focus ring against the page and its soft grey: ≥ 3', () => {
    const bar = declared('svg.hist rect.bar', 'fill');
    const ring = RULES.find((r) => r.selectors.includes(':focus-visible'))?.decls.get('outline');
    expect(ring).toMatch(/^2px solid /);
    const ringColour = colour(ring!.replace(/^2px solid /, ''))!;
    for (const bg of [WHITE, declared('th', 'background')]) {
      expect(contrast(bar, bg)).toBeGreaterThanOrEqual(3);
      expect(contrast(ringColour, bg)).toBeGreaterThanOrEqual(3);
    }
  });
});
