// What push reads from .gen/ for an applied key: the job its apply record embeds. A torn record (a crash
// of a hand edit) is refused naming it; before, push stopped on a bare SyntaxError (an internal error).
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RejectedError } from '../../src/core/errors.js';
import { readMaterial } from '../../src/git/local-material.js';
import { tempStore } from '../helpers/temp-store.js';

describe('readMaterial of an applied key', () => {
  it('refuses a torn apply record naming it (EGJ_PUSH_INCOMPLETE), and reads one of another key as no job', () => {
    const store = tempStore('genjob-material-');
    const key = 'a'.repeat(64);
    const file = store.layout.jobFile('applied', key);
    const pushable = {
      key,
      state: 'applied' as const,
      receipt: Buffer.from('{"outputs":[]}'),
      receiptSha256: '0',
    };
    writeFileSync(file, '{"key":"aaaa');
    let err: unknown;
    try {
      readMaterial(store, pushable);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RejectedError);
    expect(err).toMatchObject({ code: 'EGJ_PUSH_INCOMPLETE' });
    expect((err as Error).message).toContain(`${file}: not a readable apply record`);
    for (const doc of [
      'null',
      JSON.stringify({ key: 'b'.repeat(64), job: {} }),
      JSON.stringify({ key, job: 'x' }),
    ]) {
      writeFileSync(file, doc);
      expect(() => readMaterial(store, pushable)).toThrow(/the job file is gone/);
    }
  });
});
