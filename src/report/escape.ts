// The one place report text becomes markup. `html` is a tagged template: every value put into it is
// escaped (& < > " ' become entities) unless it is markup `html` itself made, so whatever a generator,
// a host or a judge wrote can only ever be text — never a tag, an attribute or a script. The templates
// quote every attribute; a link's target comes only from `href`, which accepts genjob's own names.

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

const SPECIAL = /[&<>"']/;
const SPECIALS = /[&<>"']/g;

/** Text as HTML text or as a quoted attribute value. */
export function escapeText(text: string): string {
  // most text has nothing to escape: test once before replacing (a report escapes a million pieces)
  return SPECIAL.test(text) ? text.replace(SPECIALS, (c) => ENTITY[c]!) : text;
}

export type Interpolated = Html | string | number | boolean | null | undefined | readonly Interpolated[];

function piece(v: Interpolated): string {
  if (typeof v === 'string') return escapeText(v);
  if (typeof v === 'number') return String(v);
  if (v === null || v === undefined || v === false) return '';
  if (Markup.is(v)) return v.markup;
  if (Array.isArray(v)) {
    let out = '';
    for (const x of v) out += piece(x);
    return out;
  }
  return escapeText(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Interpolated[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += piece(values[i]!) + strings[i + 1]!;
  return mark(out);
}

/** Markup that is genjob's own constant (an asset, a CSP); never call it with stored text. */
export function raw(markup: string): Html {
  return mark(markup);
}

/** Markup joined by a separator (itself escaped). */
export function joinHtml(parts: readonly Interpolated[], separator = ''): Html {
  return mark(parts.map(piece).join(escapeText(separator)));
}

/** A relative link target inside the report: only names genjob makes (keys, digests, page names). */
export function href(target: string): Html {
  if (!/^(\.\.\/)?([a-z0-9_-]+\/)*[a-z0-9_.-]+\.html(#[a-z0-9_-]+)?$/.test(target))
    throw new Error(`report: ${JSON.stringify(target)} is not a report page name (a bug)`);
  return mark(escapeText(target));
}
