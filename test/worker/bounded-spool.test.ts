// BoundedSpool: chunks stay in memory (the same Buffer objects, no file) while the shared budget lasts,
// then go to a 0600 temp file created on the first chunk that does not fit, written before append says
// 'done' (the caller may reuse the memory); they come back in order; discard gives the memory back and
// removes the file. stream() sends while the spool fills, file bytes too once written, never a byte
// past what was committed, reads back into the buffers the sender recycles, and throws what fail() was
// given.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BoundedSpool, SpoolBudget } from '../../src/worker/bounded-spool.js';
import { tempDir } from '../helpers/temp-store.js';

const chunk = (n: number, fill: number) => Buffer.alloc(n, fill);

async function collect(spool: BoundedSpool): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const c of spool.chunks()) out.push(c);
  return out;
}

describe('BoundedSpool', () => {
  it('keeps chunks under the budget in memory: the very buffers come back and no file is made', async () => {
    const dir = tempDir('gj-spool-');
    const spool = new BoundedSpool(join(dir, 's.tar'), new SpoolBudget(1000));
    const parts = [chunk(400, 1), chunk(600, 2)];
    for (const p of parts) expect(await spool.append(p)).toBeUndefined(); // kept: not to be reused
    await spool.finish();
    const got = await collect(spool);
    expect(got).toHaveLength(2);
    expect(got[0]).toBe(parts[0]);
    expect(got[1]).toBe(parts[1]);
    expect(spool.spilled).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('writes what does not fit to a 0600 temp file, in order after the memory part', async () => {
    const dir = tempDir('gj-spool-');
    const file = join(dir, 's.tar');
    const spool = new BoundedSpool(file, new SpoolBudget(1000));
    const parts = [chunk(700, 1), chunk(500, 2), chunk(200, 3), chunk(3 * 1024 * 1024 + 5, 4)];
    const said = [];
    for (const p of parts) {
      said.push(await spool.append(p));
      // a chunk said 'done' is in the file already: its caller may fill the memory with other bytes
      if (said.at(-1) === 'done') p.fill(0xee);
    }
    expect(said).toEqual([undefined, 'done', 'done', 'done']);
    await spool.finish();
    // the 200-byte chunk would fit the budget, but once anything went to the file everything after does
    expect(spool.spilled).toBe(500 + 200 + 3 * 1024 * 1024 + 5);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const expected = Buffer.concat([
      chunk(700, 1),
      chunk(500, 2),
      chunk(200, 3),
      chunk(3 * 1024 * 1024 + 5, 4),
    ]);
    expect(Buffer.concat(await collect(spool)).equals(expected)).toBe(true);
    await spool.discard();
    expect(existsSync(file)).toBe(false);
  });

  it('streams only committed bytes while it fills, file bytes once written, all of it after finish', async () => {
    const spool = new BoundedSpool(join(tempDir('gj-spool-'), 's.tar'), new SpoolBudget(1000));
    const stream = spool.stream();
    await spool.append(chunk(400, 1));
    await spool.append(chunk(400, 2));
    spool.commit(300);
    const first = await stream.next();
    expect(first.value).toEqual(chunk(300, 1)); // not a byte past the commit
    const waiting = stream.next();
    let settled = false;
    void waiting.then(() => {
      settled = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false); // nothing more is committed yet
    spool.commit(500);
    expect((await waiting).value).toEqual(chunk(100, 1));
    expect((await stream.next()).value).toEqual(chunk(100, 2));
    await spool.append(chunk(700, 3)); // spills to the file
    await spool.append(chunk(300, 4));
    spool.commit(1200); // 400 bytes of chunk 3
    expect((await stream.next()).value).toEqual(chunk(300, 2));
    expect((await stream.next()).value).toEqual(chunk(400, 3)); // before finish: written and committed
    spool.commit(1500); // the rest of chunk 3, none of chunk 4
    expect((await stream.next()).value).toEqual(chunk(300, 3));
    const last = stream.next();
    let done = false;
    void last.then(() => {
      done = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false); // chunk 4 is in the file, but not committed
    await spool.finish(); // everything appended is committed once finished
    expect((await last).value).toEqual(chunk(300, 4));
    expect((await stream.next()).done).toBe(true);
    await spool.discard();
  });

  it('reads the file back into the buffers the sender handed back, and only those', async () => {
    const spool = new BoundedSpool(join(tempDir('gj-spool-'), 's.tar'), new SpoolBudget(0));
    const MiB = 1024 * 1024;
    for (let i = 1; i <= 4; i++) await spool.append(chunk(MiB, i));
    await spool.finish();
    const stream = spool.stream();
    const first = (await stream.next()).value as Buffer;
    expect(first.equals(chunk(MiB, 1))).toBe(true);
    spool.recycle(Buffer.from(first)); // a buffer it did not lend: ignored
    const second = (await stream.next()).value as Buffer;
    expect(second.buffer).not.toBe(first.buffer);
    spool.recycle(first); // written out: its memory takes the next read
    const third = (await stream.next()).value as Buffer;
    expect(third.buffer).toBe(first.buffer);
    expect(third.equals(chunk(MiB, 3))).toBe(true);
    expect(second.equals(chunk(MiB, 2))).toBe(true); // lent and not handed back: never read into
    const fourth = (await stream.next()).value as Buffer;
    expect(fourth.buffer).not.toBe(second.buffer);
    expect(fourth.equals(chunk(MiB, 4))).toBe(true);
    expect((await stream.next()).done).toBe(true);
    await spool.discard();
  });

  it('throws from stream() what its writer failed with, committed bytes or not', async () => {
    const spool = new BoundedSpool(join(tempDir('gj-spool-'), 's.tar'), new SpoolBudget(1000));
    await spool.append(chunk(400, 1));
    spool.commit(100);
    const stream = spool.stream();
    expect((await stream.next()).value).toEqual(chunk(100, 1));
    const failure = new Error('input changed');
    spool.commit(400);
    spool.fail(failure);
    await expect(stream.next()).rejects.toBe(failure);
    await spool.discard();
  });

  it('shares one budget between spools and gets it back on discard', async () => {
    const dir = tempDir('gj-spool-');
    const budget = new SpoolBudget(1000);
    const a = new BoundedSpool(join(dir, 'a.tar'), budget);
    await a.append(chunk(800, 1));
    const b = new BoundedSpool(join(dir, 'b.tar'), budget);
    await b.append(chunk(300, 2));
    await b.finish();
    expect(b.spilled).toBe(300);
    await a.discard();
    await a.discard(); // twice: the budget is given back once
    expect(budget.used).toBe(0);
    const c = new BoundedSpool(join(dir, 'c.tar'), budget);
    await c.append(chunk(1000, 3));
    expect(c.spilled).toBe(0);
    await Promise.all([b.discard(), c.discard()]);
    expect(budget.used).toBe(0);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('reports a temp file it cannot create as EGJ_IO naming it', async () => {
    const dir = tempDir('gj-spool-');
    const file = join(dir, 'missing', 's.tar');
    const spool = new BoundedSpool(file, new SpoolBudget(0));
    const err = await spool.append(chunk(10, 1)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EGJ_IO' });
    expect((err as Error).message).toContain(file);
  });
});
