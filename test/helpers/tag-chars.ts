// Text in Unicode tag characters (U+E0000 + each ASCII code): what a model reads and no page or terminal
// draws, as a hostile change would smuggle it.
export function tagChars(ascii: string): string {
  return [...ascii].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
}
