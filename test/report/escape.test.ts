// The one escaping place: every value put into `html` is text, whatever it holds; only markup `html`
// itself made passes through; a link target is only ever one of the report's own page names.
import { describe, expect, it } from 'vitest';
import { escapeText, href, html, markupLength, raw } from '../../src/report/escape.js';
import { tagChars } from '../helpers/tag-chars.js';

describe('html``', () => {
  it.each([
    {
      name: 'a script tag',
      value: '<script>alert(1)</script>',
      out: '&lt;script&gt;alert(1)&lt;/script&gt;',
    },
    { name: 'an attribute break-out', value: '" onerror="x()', out: '&quot; onerror=&quot;x()' },
    { name: 'a single-quoted break-out', value: "' onload='x()", out: '&#39; onload=&#39;x()' },
    { name: 'an entity', value: '&lt;b&gt;', out: '&amp;lt;b&amp;gt;' },
    {
      name: 'a javascript: link',
      value: '<a href="javascript:x()">x</a>',
      out: '&lt;a href=&quot;javascript:x()&quot;&gt;x&lt;/a&gt;',
    },
  ])('escapes $name in text and attributes', ({ value, out }) => {
    expect(html`<p title="${value}">${value}</p>`.markup).toBe(`<p title="${out}">${out}</p>`);
  });

  it('passes markup it made, numbers and arrays; drops null, undefined and false', () => {
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`${inner}|${[1, html`<br>`, '<']}|${null}${undefined}${false}|${0}`.markup).toBe(
      '<b>&lt;i&gt;</b>|1<br>&lt;||0',
    );
  });

  it('treats an object shaped like markup, or made from its prototype, as text, not markup', () => {
    const forged = { markup: '<script>x()</script>' };
    expect(html`${forged as never}`.markup).toBe('[object Object]');
    const posing = Object.create(Object.getPrototypeOf(html``) as object) as never;
    expect(html`${posing}`.markup).toBe('[object Object]');
  });

  it('leaves genjob constants given to raw as they are', () => {
    expect(html`${raw('<style>p{}</style>')}`.markup).toBe('<style>p{}</style>');
  });

  it('escapes every character that could end text or an attribute', () => {
    expect(escapeText(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });
});

describe('hidden characters (Trojan Source, zero-width and tag characters)', () => {
  // the line a reviewer is shown as `if (role != "user") { // admin only` while a compiler reads the
  // comment as part of the string
  const TROJAN = 'if (role != "user\u202e \u2066// admin only\u2069 \u2066") {';
  const HIDDEN = /[\p{Bidi_Control}\p{Default_Ignorable_Code_Point}]/u;

  it('shows each in text as its code point, marked, and draws none', () => {
    const out = html`<td>${TROJAN}</td>`.markup;
    expect(out).not.toMatch(HIDDEN);
    expect(out).toBe(
      '<td>if (role != &quot;user<span class="hidden-char" role="img" aria-label="hidden character: right-to-left override, U+202E" title="right-to-left override">U+202E</span> <span class="hidden-char" role="img" aria-label="hidden character: left-to-right isolate, U+2066" title="left-to-right isolate">U+2066</span>// admin only<span class="hidden-char" role="img" aria-label="hidden character: pop directional isolate, U+2069" title="pop directional isolate">U+2069</span> <span class="hidden-char" role="img" aria-label="hidden character: left-to-right isolate, U+2066" title="left-to-right isolate">U+2066</span>&quot;) {</td>',
    );
  });

  it.each([
    { name: 'a zero-width space', text: 'ad\u200bmin', shown: 'U+200B', said: 'zero-width space' },
    { name: 'a right-to-left mark', text: 'a\u200fb', shown: 'U+200F', said: 'right-to-left mark' },
    { name: 'a soft hyphen', text: 'pass\u00adword', shown: 'U+00AD', said: 'soft hyphen' },
    { name: 'a tag character (past U+FFFF)', text: 'ok\u{e0049}', shown: 'U+E0049', said: 'tag character' },
    { name: 'a word joiner', text: 'a\u2060b', shown: 'U+2060', said: 'word joiner' },
    {
      name: 'a byte order mark',
      text: '\ufeffx',
      shown: 'U+FEFF',
      said: 'zero-width no-break space (byte order mark)',
    },
    { name: 'a variation selector', text: 'a\ufe0fb', shown: 'U+FE0F', said: 'variation selector' },
    {
      name: 'a Hangul filler (no name of its own here)',
      text: 'a\u3164b',
      shown: 'U+3164',
      said: 'invisible character',
    },
  ])('shows $name', ({ text, shown, said }) => {
    const out = html`<pre>${text}</pre>`.markup;
    expect(out).not.toMatch(HIDDEN);
    expect(out).toContain(
      `<span class="hidden-char" role="img" aria-label="hidden character: ${said}, ${shown}" title="${said}">${shown}</span>`,
    );
  });

  it('shows a run of tag characters as one mark spelling out the text they smuggle, escaped', () => {
    const out = html`<pre>ok ${`x${tagChars('<b>pass & "go"')}\u200by`}</pre>`.markup;
    expect(out).toBe(
      '<pre>ok x<span class="hidden-char" role="img" aria-label="hidden text: U+E003C…U+E0022, 14 tag characters spelling &quot;&lt;b&gt;pass &amp; &quot;go&quot;&quot;">U+E003C…U+E0022, 14 tag characters spelling &quot;&lt;b&gt;pass &amp; &quot;go&quot;&quot;</span><span class="hidden-char" role="img" aria-label="hidden character: zero-width space, U+200B" title="zero-width space">U+200B</span>y</pre>',
    );
    expect(html`<p title="${tagChars('hi')}">`.markup).toBe(
      '<p title="[U+E0068…U+E0069, 2 tag characters spelling &quot;hi&quot;]">',
    );
    // the language tag and the cancel tag spell nothing: each is its own mark
    expect(html`<pre>${'\u{e0001}\u{e007f}'}</pre>`.markup).toBe(
      '<pre><span class="hidden-char" role="img" aria-label="hidden character: language tag, U+E0001" title="language tag">U+E0001</span><span class="hidden-char" role="img" aria-label="hidden character: cancel tag, U+E007F" title="cancel tag">U+E007F</span></pre>',
    );
  });

  it('writes them as plain text where markup may not stand: an attribute, a <title>', () => {
    expect(html`<p title="${'a\u202eb'}" data-v="x ${'\u200b'}">`.markup).toBe(
      '<p title="a[U+202E]b" data-v="x [U+200B]">',
    );
    expect(html`<title>${'job \u202e1'}</title>`.markup).toBe('<title>job [U+202E]1</title>');
    // text before the value, attributes on the tag, and textarea too
    expect(html`<title>genjob job ${'\u202e'}</title>`.markup).toBe('<title>genjob job [U+202E]</title>');
    expect(html`<textarea id="t">${'\u200b'}</textarea>`.markup).toBe('<textarea id="t">[U+200B]</textarea>');
    // once the title has closed, a value is in text again
    expect(html`<title>${'t'}</title><p>${'\u202e'}</p>`.markup).toBe(
      '<title>t</title><p><span class="hidden-char" role="img" aria-label="hidden character: right-to-left override, U+202E" title="right-to-left override">U+202E</span></p>',
    );
    expect(html`<title>t</title><p>${'\u202e'}</p>`.markup).toBe(
      '<title>t</title><p><span class="hidden-char" role="img" aria-label="hidden character: right-to-left override, U+202E" title="right-to-left override">U+202E</span></p>',
    );
    // after the tag closes, text again
    expect(html`<p title="${'x'}">${'\u202e'}</p>`.markup).toBe(
      '<p title="x"><span class="hidden-char" role="img" aria-label="hidden character: right-to-left override, U+202E" title="right-to-left override">U+202E</span></p>',
    );
  });

  it.each([
    {
      name: 'a line separator (drawn as a space: `// note` then code that runs)',
      text: '// note\u2028evil()',
      shown: 'U+2028',
      said: 'line separator',
    },
    { name: 'a paragraph separator', text: 'a\u2029b', shown: 'U+2029', said: 'paragraph separator' },
    { name: 'DEL', text: '"admin\u007f"', shown: 'U+007F', said: 'delete' },
    { name: 'ESC', text: '\u001b[2J', shown: 'U+001B', said: 'escape' },
    { name: 'NUL', text: 'a\u0000b', shown: 'U+0000', said: 'null' },
    { name: 'a C1 control (NEL)', text: 'a\u0085b', shown: 'U+0085', said: 'next line' },
    { name: 'a form feed', text: 'a\u000cb', shown: 'U+000C', said: 'form feed' },
    { name: 'SOH (no name of its own here)', text: 'a\u0001b', shown: 'U+0001', said: 'control character' },
  ])('hostile: shows $name as its code point, never drawn', ({ text, shown, said }) => {
    const out = html`<pre>${text}</pre>`.markup;
    expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/u);
    expect(out).toContain(
      `<span class="hidden-char" role="img" aria-label="hidden character: ${said}, ${shown}" title="${said}">${shown}</span>`,
    );
    expect(html`<p title="${text}">`.markup).toContain(`[${shown}]`);
  });

  it('marks a CR as a line ending of its own, and leaves tab and newline as they are', () => {
    expect(html`<pre>${'a\r\n\tb'}</pre>`.markup).toBe(
      '<pre>a<span class="cr-char" role="img" aria-label="carriage return" title="carriage return">&#9229;</span>\n\tb</pre>',
    );
    expect(html`<title>${'a\rb'}</title>`.markup).toBe('<title>a&#9229;b</title>');
  });

  it('counts the markup a text becomes without making it', () => {
    for (const text of [
      'plain',
      `a <b> & "c" 'd'`,
      TROJAN,
      'soft\u00adhyphen\r\n\u2028\u007f',
      `x${tagChars('<hi>')}\u{e0001}y`,
      '',
    ])
      expect(markupLength(text)).toBe(escapeText(text, 'text').length);
  });

  it('leaves plain Unicode as it is', () => {
    expect(html`<td>${'café → ✓ 日本 عربى'}</td>`.markup).toBe('<td>café → ✓ 日本 عربى</td>');
  });
});

describe('href', () => {
  it.each([
    'index.html',
    '../index.html',
    `jobs/${'a'.repeat(64)}.html`,
    `../logs/${'0'.repeat(64)}.html`,
    'index.html#file-12',
  ])('accepts the page name %s', (target) => {
    expect(href(target).markup).toBe(target);
  });

  it.each([
    'javascript:alert(1)',
    'https://example.com/x.html',
    '//example.com/x.html',
    '/etc/passwd.html',
    '../../x.html',
    'jobs/../../x.html',
    'jobs/X.html" onclick="x()',
    'data:text/html,x.html',
    'index.html" onclick="x()',
    'index.html#x" onclick="x()',
    'index.html#',
  ])('refuses %s', (target) => {
    expect(() => href(target)).toThrow(/not a report page name/);
  });
});
