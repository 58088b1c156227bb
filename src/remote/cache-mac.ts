// Tamper evidence for the host's result cache: each entry carries an HMAC-SHA256, under a host
// secret that only serve reads (in the cache directory, which no sandbox sees), over its name and
// its result.json; result.json names every output's sha256, and the files are re-hashed before an
// entry is served. An entry changed by anything but serve — or moved to another name — fails.
// The user's caches inside a repository (the report's, the checks' setup results) and the records genjob
// acts on there (promotion pins, shadow run records) are sealed the same way (core/mac.ts), each under its
// own domain, with the user's secret (userSecret).

import { randomBytes } from 'node:crypto';
import { constants, mkdirSync } from 'node:fs';
import { link, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { defaultCacheDir } from '../core/cache-dir.js';
import { errnoOf, IoError, ioErrorAt } from '../core/errors.js';
import { macHolds, macOf } from '../core/mac.js';
import { writeNewFile } from './write-new-file.js';

const SECRET_FILE = 'secret';
const DOMAIN = 'genjob-cache-entry-v1';

/**
 * Read the secret kept in `cacheDir`, creating it (0600) on first use. It is written whole to a temp file and
 * linked into place, so a process starting at the same moment sees no secret or all of it, never an empty
 * file. The host's result cache and the user's report cache each keep theirs this way.
 */
export async function loadCacheSecret(cacheDir: string): Promise<Buffer> {
  const file = join(cacheDir, SECRET_FILE);
  // a file handle's errors carry no path: each step names the file it was on
  const at = (path: string) => (err: unknown) => {
    throw ioErrorAt(path, err);
  };
  const read = () =>
    readFile(file, { encoding: 'utf8', flag: constants.O_RDONLY | constants.O_NOFOLLOW }).catch(
      (err: unknown) => {
        if (errnoOf(err) === 'ENOENT') return null;
        throw ioErrorAt(file, err);
      },
    );
  let text = await read(); // there already on every use but the first
  if (text === null) {
    const temp = join(cacheDir, `.${SECRET_FILE}-${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      await writeNewFile(temp, randomBytes(32).toString('hex'));
      const won = await link(temp, file).then(
        () => true,
        (err: unknown) => {
          if (errnoOf(err) !== 'EEXIST') throw ioErrorAt(file, err);
          return false; // another process's secret is in place: use it
        },
      );
      if (won) await syncDir(cacheDir).catch(at(cacheDir));
    } finally {
      await unlink(temp).catch(() => {});
    }
    text = await read();
    if (text === null) throw IoError.gone('read', file);
  }
  text = text.trim();
  if (!/^[0-9a-f]{64}$/.test(text)) throw new Error(`${file}: not a cache secret (64 hex digits)`);
  return Buffer.from(text, 'hex');
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, constants.O_RDONLY);
  await fh.sync().finally(() => fh.close());
}

/**
 * The user's secret that seals what genjob keeps inside repositories (caches, promotion pins, shadow run
 * records), in $XDG_CACHE_HOME/genjob (outside every repository and every sandbox), made on first use; or
 * the error that keeps it from being kept there, for a command that must seal.
 */
export async function requireUserSecret(): Promise<Buffer> {
  const dir = defaultCacheDir();
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    throw ioErrorAt(dir, err);
  }
  return loadCacheSecret(dir);
}

/** requireUserSecret, or null where none can be kept: what it would seal is then not kept, or not trusted. */
export async function userSecret(): Promise<Buffer | null> {
  return requireUserSecret().catch(() => null);
}

export function entryMac(secret: Buffer, name: string, resultJson: Buffer): string {
  return macOf(secret, DOMAIN, name, resultJson);
}

export function macMatches(secret: Buffer, name: string, resultJson: Buffer, mac: string): boolean {
  return macHolds(secret, DOMAIN, name, resultJson, mac);
}
