// A sealed record's file: followed only when the user's secret sealed it for its kind and name, and
// what is found and not followed says why (naming the file), so the command can tell the user.

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSealed, type SealedKind, writeSealed } from '../../src/store/sealed-file.js';
import { tempStore } from '../helpers/temp-store.js';

const kind = (name: string): SealedKind => ({
  domain: 'test-kind-v1',
  name,
  what: 'test record',
  is: (v) => v.schema === 'test@1' && typeof v.command === 'string',
});

describe('sealed files', () => {
  it("reads back what the user's secret sealed, and nothing else; each refusal names the file and why", () => {
    const store = tempStore('genjob-sealed-');
    const secret = randomBytes(32);
    const file = join(store.layout.gen, 'r.json');
    const record = { schema: 'test@1', command: 'true' };
    expect(readSealed(store, file, secret, kind('k'))).toBeUndefined();

    writeSealed(store, file, secret, kind('k'), record);
    expect(readSealed(store, file, secret, kind('k'))).toEqual({ record });
    const sealed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    expect(sealed.seal).toMatch(/^[0-9a-f]{64}$/);

    const notOurs = {
      ignored: expect.stringMatching(/r\.json: the test record is not sealed by this user's genjob/),
    };
    expect(readSealed(store, file, randomBytes(32), kind('k'))).toEqual(notOurs);
    expect(readSealed(store, file, secret, kind('other'))).toEqual(notOurs);
    expect(readSealed(store, file, secret, { ...kind('k'), domain: 'other-v1' })).toEqual(notOurs);
    expect(readSealed(store, file, null, kind('k'))).toEqual({
      ignored: `${file}: no user secret to check the test record's seal with (no writable cache directory)`,
    });
    writeFileSync(file, JSON.stringify({ ...sealed, command: 'rm -rf ~' }));
    expect(readSealed(store, file, secret, kind('k'))).toEqual(notOurs);

    // sealed, and of another shape than the kind's
    writeSealed(store, file, secret, kind('k'), { schema: 'test@1', command: 7 });
    expect(readSealed(store, file, secret, kind('k'))).toEqual({
      ignored: `${file}: not a test record for k`,
    });
    // unsealed on purpose (no secret when written): never followed
    writeSealed(store, file, null, kind('k'), record);
    expect(readSealed(store, file, secret, kind('k'))).toEqual(notOurs);

    writeFileSync(file, '{"schema":');
    expect(readSealed(store, file, secret, kind('k'))).toEqual({
      ignored: `${file}: not a test record (not JSON)`,
    });
  });

  it('reads a link or a FIFO in its place as not followed (never through the link, never waiting)', () => {
    const store = tempStore('genjob-sealed-');
    const secret = randomBytes(32);
    const good = join(store.layout.gen, 'good.json');
    writeSealed(store, good, secret, kind('k'), { schema: 'test@1', command: 'true' });
    const link = join(store.layout.gen, 'link.json');
    symlinkSync(good, link);
    expect(readSealed(store, link, secret, kind('k'))).toEqual({
      ignored: expect.stringContaining(`${link}: is a symbolic link`),
    });
    const fifo = join(store.layout.gen, 'fifo.json');
    execFileSync('mkfifo', [fifo]);
    expect(readSealed(store, fifo, secret, kind('k'))).toEqual({ ignored: expect.stringContaining(fifo) });
  });
});
