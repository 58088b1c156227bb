// WCAG 2.1's contrast ratio of two sRGB colours (#rrggbb or [r, g, b] of 0–255): (L1 + 0.05) / (L2 + 0.05)
// of their relative luminances, the lighter over the darker; 1 to 21.

type Colour = string | readonly [number, number, number];

function channels(c: Colour): readonly number[] {
  return typeof c === 'string' ? [1, 3, 5].map((i) => Number.parseInt(c.slice(i, i + 2), 16)) : c;
}

function luminance(c: Colour): number {
  const [r, g, b] = channels(c).map((v) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

export function contrast(a: Colour, b: Colour): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}
