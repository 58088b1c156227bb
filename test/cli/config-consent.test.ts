// Consent for a repository's config: an allow record in the user's own state vouches for exactly the
// digest it was made for (the file's bytes and the ssh config it names); any other record, a torn one,
// one naming another file, or none, allows nothing, and the refusal names the setting and the command.
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  ALLOW_SCHEMA,
  consentDigest,
  recordConsent,
  requireConsent,
  stateDir,
} from '../../src/cli/config-consent.js';
import { sha256Hex } from '../../src/core/sha256.js';
import { tempDir } from '../helpers/temp-store.js';
import { thrown } from '../helpers/thrown.js';

let dir: string;
let env: NodeJS.ProcessEnv;
const file = '/repo/genjob.config.json';
beforeEach(() => {
  dir = tempDir('gj-consent-');
  env = { XDG_STATE_HOME: join(dir, 'state'), HOME: join(dir, 'home') };
});

describe('stateDir', () => {
  it('is $XDG_STATE_HOME/genjob, else ~/.local/state/genjob (a relative XDG_STATE_HOME is ignored)', () => {
    expect(stateDir({ XDG_STATE_HOME: '/s', HOME: '/h' })).toBe('/s/genjob');
    expect(stateDir({ XDG_STATE_HOME: 'rel', HOME: '/h' })).toBe('/h/.local/state/genjob');
    expect(stateDir({ HOME: '/h' })).toBe('/h/.local/state/genjob');
  });
});

describe('consentDigest', () => {
  it('changes with the config bytes and with a named file’s bytes; a missing or unreadable file counts as absent', () => {
    const named = join(dir, 'ssh_config');
    const none = consentDigest(Buffer.from('{}'), [named]);
    writeFileSync(named, 'Host x\n');
    const one = consentDigest(Buffer.from('{}'), [named]);
    writeFileSync(named, 'Host y\n');
    const two = consentDigest(Buffer.from('{}'), [named]);
    expect(new Set([none, one, two]).size).toBe(3);
    expect(consentDigest(Buffer.from('{ }'), [named])).not.toBe(two);
    expect(consentDigest(Buffer.from('{}'), [])).not.toBe(none);
    expect(consentDigest(Buffer.from('{}'), [dir])).toBe(consentDigest(Buffer.from('{}'), [dir]));
    expect(consentDigest(Buffer.from('{}'), [join(dir, 'gone')])).toMatch(/^[0-9a-f]{64}$/);
  });

  it('is EGJ_IO when a named file cannot be read (a symlink loop)', () => {
    const loop = join(dir, 'loop');
    symlinkSync(loop, loop);
    expect(thrown(() => consentDigest(Buffer.from('{}'), [loop]))).toMatchObject({ code: 'EGJ_IO' });
  });
});

describe('recordConsent and requireConsent', () => {
  const digest = 'a'.repeat(64);

  it('refuses with no record, naming the file, the setting and the command', () => {
    expect(thrown(() => requireConsent(file, digest, 'ssh.config', env))).toMatchObject({
      code: 'EGJ_CONFIG_NOT_ALLOWED',
      exitCode: 2,
      message: `${file}: "ssh.config" runs a command on this machine or widens the generator's sandbox; a repository's config may set it only once you have read the file and allowed it: genjob config allow (or give the flag yourself)`,
    });
  });

  it('allows exactly the recorded digest, and says when another was allowed', () => {
    const record = recordConsent(file, digest, env, new Date('2026-12-01T10:00:00Z'));
    expect(record).toBe(join(dir, 'state', 'genjob', 'allowed', `${sha256Hex(Buffer.from(file))}.json`));
    expect(JSON.parse(readFileSync(record, 'utf8'))).toEqual({
      schema: ALLOW_SCHEMA,
      file,
      sha256: digest,
      allowed_at: '2026-12-01T10:00:00.000Z',
    });
    expect((statSync(record).mode & 0o777).toString(8)).toBe('600');
    expect((statSync(join(dir, 'state', 'genjob', 'allowed')).mode & 0o777).toString(8)).toBe('700');
    expect(() => requireConsent(file, digest, 'launch', env)).not.toThrow();
    expect(thrown(() => requireConsent(file, 'b'.repeat(64), 'launch', env))).toMatchObject({
      message: expect.stringContaining(
        '(it, or a file it names, changed since you allowed it on 2026-12-01T10:00:00.000Z): genjob config allow',
      ),
    });
    // a record of another file allows nothing here
    expect(thrown(() => requireConsent('/other/genjob.config.json', digest, 'launch', env))).toMatchObject({
      code: 'EGJ_CONFIG_NOT_ALLOWED',
    });
  });

  it.each([
    { name: 'torn', text: '{"schema":' },
    { name: 'of another schema', text: JSON.stringify({ schema: 'x', file, sha256: 'a'.repeat(64) }) },
    {
      name: 'naming another file',
      text: JSON.stringify({ schema: ALLOW_SCHEMA, file: '/x', sha256: 'a'.repeat(64) }),
    },
  ])('a record that is $name allows nothing', ({ text }) => {
    const at = join(dir, 'state', 'genjob', 'allowed');
    mkdirSync(at, { recursive: true });
    writeFileSync(join(at, `${sha256Hex(Buffer.from(file))}.json`), text);
    const err = thrown<Error>(() => requireConsent(file, 'a'.repeat(64), 'launch', env));
    expect(err.message).not.toContain('changed since');
  });

  it('an unreadable record is EGJ_IO', () => {
    const at = join(dir, 'state', 'genjob', 'allowed', `${sha256Hex(Buffer.from(file))}.json`);
    mkdirSync(at, { recursive: true });
    expect(thrown(() => requireConsent(file, digest, 'launch', env))).toMatchObject({ code: 'EGJ_IO' });
  });
});
