// The one place report text becomes markup. `html` is a tagged template: every value put into it is
// escaped (& < > " ' become entities) unless it is markup `html` itself made, so whatever a generator,
// a host or a judge wrote can only ever be text — never a tag, an attribute or a script. The templates
// quote every attribute; a link's target comes only from `href`, which accepts genjob's own names.
// A hidden character (hidden-chars.ts: a bidi control, a zero-width or tag character) is shown as its
// code point, never drawn: in text as a marked `U+202E`, where only text may stand (an attribute, a
// <title>) as `[U+202E]`, so what a reviewer reads is what a compiler reads. A run of tag characters
// (U+E0020–U+E007E, an invisible copy of ASCII that can smuggle a sentence to a model) is one mark that
// spells out what it says. The controls a browser would draw as nothing or as a space (marked-chars.ts)
// are marked the same way; a CR is a mark of its own (␍), so a CRLF line never reads as an LF one.
// Each mark in text is one image to a screen reader, named for the character (marked-chars.ts markedName).
import { codePointLabel, TAG_RUNS, tagText } from '../core/hidden-chars.js';
import { MARKED_CLASS, markedName } from '../core/marked-chars.js';

/** Markup made by `html` (or `raw` for genjob's own constants); nothing else can pose as one. */
class Markup {
  // a private field: `#text in v` holds only for objects this class made (no shape or prototype fakes it)
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  get markup(): string {
    return this.#text;
  }
  static is(v: unknown): v is Markup {
    return typeof v === 'object' && v !== null && #text in v;
  }
}

export type Html = Markup;

function mark(markup: string): Html {
  return new Markup(markup);
}

const ENTITY: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

// Stryker disable next-line StringLiteral: the fast path's test (escapeText); a wider one changes no output
const SPECIAL = new RegExp(`[&<>"'\\r${MARKED_CLASS}]`, 'u');
const SPECIALS = /[&<>"']/g;
/** Hidden characters and CRs, a run of two or more printable tag characters matched as one. */
// Stryker disable next-line StringLiteral: without its flags the pattern does not compile, so the module fails to load
const HIDDEN_RUNS = new RegExp(`${TAG_RUNS.source}|[\\r${MARKED_CLASS}]`, 'gu');
/** A CR, as an entity (one character beyond Latin-1 would make V8 hold a whole page as UTF-16). */
const CR_MARK = '&#9229;';

/**
 * Where a value stands: 'text', between tags, where a marked code point may go; 'plain', where only
 * text may (inside a tag, so in an attribute, or in a <title> or <textarea>, whose content is text).
 */
type Where = 'text' | 'plain';

/** Where a value after genjob's own template text `s` stands, given where the one before `s` stood. */
function whereAfter(s: string, before: Where): Where {
  const open = s.lastIndexOf('<');
  const close = s.lastIndexOf('>');
  if (open === -1 && close === -1) return before;
  // Stryker disable next-line EqualityOperator: the two are equal only when both are -1, handled above
  if (open > close) return 'plain';
  return /<(title|textarea)\b[^>]*>[^<]*$/i.test(s) ? 'plain' : 'text';
}

/** Text as HTML text (`where` 'text') or as a quoted attribute value or other text-only content ('plain'). */
export function escapeText(text: string, where: Where = 'plain'): string {
  // most text has nothing to escape: test once before replacing (a report escapes a million pieces)
  // Stryker disable next-line ConditionalExpression: a fast path; the replaces below change nothing either
  if (!SPECIAL.test(text)) return text;
  const escaped = text.replace(SPECIALS, (c) => ENTITY[c]!);
  return escaped.replace(HIDDEN_RUNS, (c) => markOf(c, where));
}

/**
 * How long `escapeText(text, 'text')` is, without making it: a page counts what it will hold before
 * drawing it (a file of soft hyphens grows some forty times as markup).
 */
export function markupLength(text: string): number {
  let n = text.length;
  for (const [c] of text.matchAll(SPECIALS)) n += ENTITY[c]!.length - 1;
  for (const [c] of text.matchAll(HIDDEN_RUNS)) n += markOf(c, 'text').length - c.length;
  return n;
}

/** The mark standing for a hidden character, a run of tag characters or a CR. */
function markOf(c: string, where: Where): string {
  if (c === '\r')
    return where === 'text'
      ? `<span class="cr-char" role="img" aria-label="carriage return" title="carriage return">${CR_MARK}</span>`
      : CR_MARK;
  const label = hiddenLabel(c);
  if (where === 'plain') return `[${label}]`;
  // read aloud, a code point says nothing: one image named for what the character is
  if ([...c].length > 1)
    return `<span class="hidden-char" role="img" aria-label="hidden text: ${label}">${label}</span>`;
  const name = markedName(c);
  return `<span class="hidden-char" role="img" aria-label="hidden character: ${name}, ${label}" title="${name}">${label}</span>`;
}

/**
 * `U+202E` for one hidden character; for a run of tag characters, its ends, length and the text it spells,
 * as markup fit for text and attribute alike (its quotes are entities too).
 */
function hiddenLabel(hidden: string): string {
  const chars = [...hidden];
  if (chars.length === 1) return codePointLabel(hidden);
  const spelled = tagText(hidden).replace(SPECIALS, (c) => ENTITY[c]!);
  return `${codePointLabel(chars[0]!)}…${codePointLabel(chars.at(-1)!)}, ${chars.length} tag characters spelling &quot;${spelled}&quot;`;
}

export type Interpolated = Html | string | number | boolean | null | undefined | readonly Interpolated[];

function piece(v: Interpolated, where: Where): string {
  if (typeof v === 'string') return escapeText(v, where);
  // Stryker disable next-line ConditionalExpression: a fast path; escaping a number's digits changes nothing
  if (typeof v === 'number') return String(v);
  if (v === null || v === undefined || v === false) return '';
  if (Markup.is(v)) return v.markup;
  if (Array.isArray(v)) {
    let out = '';
    for (const x of v) out += piece(x, where);
    return out;
  }
  return escapeText(String(v), where);
}

/** Where each value of a template stands, by its call site (a tagged template's strings are one object per site). */
const placesOf = new WeakMap<TemplateStringsArray, Where[]>();

function places(strings: TemplateStringsArray): Where[] {
  let at = placesOf.get(strings);
  // Stryker disable next-line ConditionalExpression: a memo; working the places out again gives the same ones
  if (at === undefined) {
    at = [];
    let where = whereAfter(strings[0]!, 'text');
    for (let i = 1; i < strings.length; i++) {
      at.push(where);
      where = whereAfter(strings[i]!, where);
    }
    placesOf.set(strings, at);
  }
  return at;
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  const at = places(strings);
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += piece(values[i]!, at[i]!) + strings[i + 1]!;
  return mark(out);
}

/** Markup that is genjob's own constant (an asset, a CSP); never call it with stored text. */
export function raw(markup: string): Html {
  return mark(markup);
}

/** A relative link target inside the report: only names genjob makes (keys, digests, page names). */
export function href(target: string): Html {
  if (!/^(\.\.\/)?([a-z0-9_-]+\/)*[a-z0-9_.-]+\.html(#[a-z0-9_-]+)?$/.test(target))
    throw new Error(`report: ${JSON.stringify(target)} is not a report page name (a bug)`);
  return mark(escapeText(target));
}
