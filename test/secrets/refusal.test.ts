import { describe, expect, it } from 'vitest';
import { instructionSecretError, secretError } from '../../src/secrets/refusal.js';

describe('secretError', () => {
  it('names the file, the line and the rule, and the way out', () => {
    const err = secretError('src/a.ts', 'secretlint github: GITHUB_TOKEN', 3);
    expect(err.code).toBe('EGJ_SECRET');
    expect(err.exitCode).toBe(2);
    expect(err.message).toBe(
      'src/a.ts:3: looks like a secret (secretlint github: GITHUB_TOKEN); refusing to ship it to the generator host. If it is not one, pass --allow-secret src/a.ts',
    );
  });

  it('names only the file when the line is not known', () => {
    expect(secretError('.env', 'a .env file (rule env-file)').message).toMatch(
      /^\.env: looks like a secret \(a \.env file \(rule env-file\)\)/,
    );
  });
});

describe('instructionSecretError', () => {
  it('says to take it out: --allow-secret does not apply', () => {
    const err = instructionSecretError('the instruction (-m)', 'jwt', 2);
    expect(err.code).toBe('EGJ_SECRET');
    expect(err.message).toBe(
      'the instruction (-m):2: looks like a secret (jwt); refusing to ship it to the generator host. Take it out of the instruction (--allow-secret does not apply to it)',
    );
  });
});
