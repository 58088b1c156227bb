// The one escaping place: every value put into `html` is text, whatever it holds; only markup `html`
// itself made passes through; a link target is only ever one of the report's own page names.
import { describe, expect, it } from 'vitest';
import { escapeText, href, html, joinHtml, raw } from '../../src/report/escape.js';

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

  it('escapes the separator of joinHtml and each part', () => {
    expect(joinHtml(['<a>', html`<b></b>`], '<>').markup).toBe('&lt;a&gt;&lt;&gt;<b></b>');
  });

  it('leaves genjob constants given to raw as they are', () => {
    expect(html`${raw('<style>p{}</style>')}`.markup).toBe('<style>p{}</style>');
  });

  it('escapes every character that could end text or an attribute', () => {
    expect(escapeText(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });
});

describe('href', () => {
  it.each(['index.html', '../index.html', `jobs/${'a'.repeat(64)}.html`, `../logs/${'0'.repeat(64)}.html`])(
    'accepts the page name %s',
    (target) => {
      expect(href(target).markup).toBe(target);
    },
  );

  it.each([
    'javascript:alert(1)',
    'https://example.com/x.html',
    '//example.com/x.html',
    '/etc/passwd.html',
    '../../x.html',
    'jobs/../../x.html',
    'jobs/X.html" onclick="x()',
    'data:text/html,x.html',
  ])('refuses %s', (target) => {
    expect(() => href(target)).toThrow(/not a report page name/);
  });
});
