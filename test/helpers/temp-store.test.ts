// The tests' temp directories: one made for a test is gone once the test is over, one made to last the
// file is still there for the next test (forged-records and check-gate build a fixture once and share it).
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { cleanUpAfterFile, tempDir } from './temp-store.js';

let forTest = '';
let forFile = '';

describe('tempDir', () => {
  it('makes a directory for this test and one for the file', () => {
    forTest = tempDir('gj-temp-test-');
    forFile = tempDir('gj-temp-file-', tmpdir(), 'file');
    expect([existsSync(forTest), existsSync(forFile)]).toEqual([true, true]);
  });

  it('removed the test’s directory after it, and keeps the file’s', () => {
    expect([existsSync(forTest), existsSync(forFile)]).toEqual([false, true]);
  });

  it('removes the file’s directories when the file ends (the setup file calls this after its last test)', () => {
    cleanUpAfterFile();
    expect(existsSync(forFile)).toBe(false);
  });
});
