// Time per job as inline SVG: round bin widths (1, 2, 5 × 10^k ms) so that at most 20 bins cover the
// slowest job, one bar per bin with its range and count in a <title>, readable time labels.
import { describe, expect, it } from 'vitest';
import { binWidth, formatMs, histogram } from '../../src/report/histogram.js';

describe('histogram', () => {
  it.each([
    { max: 0, width: 1 },
    { max: 19, width: 1 },
    { max: 20, width: 2 },
    { max: 99, width: 5 },
    { max: 15_000, width: 1000 },
    { max: 3_600_000, width: 200_000 },
  ])('bins up to $max ms by $width ms', ({ max, width }) => {
    expect(binWidth(max)).toBe(width);
    expect((max + 1) / width).toBeLessThanOrEqual(20);
  });

  it('draws one bar per bin, each titled with its range and count', () => {
    const svg = histogram([100, 150, 900, 2500]).markup;
    expect(svg.match(/<rect class="bar"/g)).toHaveLength(Math.floor(2500 / binWidth(2500)) + 1);
    expect(svg).toContain('<title>0 ms &ndash; 200 ms: 2 job(s)</title>');
    expect(svg).toContain('<title>2.4 s &ndash; 2.6 s: 1 job(s)</title>');
    expect(svg).toContain('generation time per job (4 job(s))');
  });

  it('says when there is nothing to draw', () => {
    expect(histogram([]).markup).toContain('No job has a receipt with a generation time yet.');
  });

  it.each([
    { ms: 850, text: '850 ms' },
    { ms: 1500, text: '1.5 s' },
    { ms: 120_000, text: '2 min' },
    { ms: 5_400_000, text: '1.5 h' },
  ])('says $ms ms as $text', ({ ms, text }) => {
    expect(formatMs(ms)).toBe(text);
  });
});
