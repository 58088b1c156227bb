// A refused receipt's status is host text: `show` prints it on one line, escaped.
import { describe, expect, it } from 'vitest';
import { genjob, HOSTILE_REMOTE, mint, NODE, useBoxes } from './ssh-helpers.js';

const newBox = useBoxes();

describe('show with a hostile dead-lettered receipt', () => {
  it('a newline in the receipt status does not start a line of its own', async () => {
    const sb = await newBox();
    const key = await mint(sb, 'shout alpha', ['src/a.txt']);
    await genjob(sb, [
      'work',
      '--once',
      '--generator',
      'true',
      '--launch',
      `${NODE} ${HOSTILE_REMOTE} status-nl ${sb.dir}/evil`,
    ]);
    const shown = await genjob(sb, ['show', key]);
    expect(shown.exitCode).toBe(0);
    expect(String(shown.stdout)).toContain('usage     epoch 1');
    expect(
      String(shown.stdout)
        .split('\n')
        .filter((l) => l.startsWith('state     ')),
    ).toHaveLength(1);
  });
});
