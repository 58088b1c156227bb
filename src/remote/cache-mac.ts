// Tamper evidence for the host's result cache: each entry carries an HMAC-SHA256, under a host
// secret that only serve reads (in the cache directory, which no sandbox sees), over its name and
// its result.json; result.json names every output's sha256, and the files are re-hashed before an
// entry is served. An entry changed by anything but serve — or moved to another name — fails.
// The user's caches inside a repository (the report's, the checks' setup results) are sealed the same
// way (macOf), each under its own domain, with the user's secret (userSecret).

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { constants, mkdirSync } from 'node:fs';
import { link, open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { defaultCacheDir } from '../core/cache-dir.js';
import { errnoOf, IoError, ioErrorAt } from '../core/errors.js';
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
 * The user's secret that seals their caches inside repositories, in $XDG_CACHE_HOME/genjob (outside every
 * repository and every sandbox), made on first use; null where none can be kept (no writable cache
 * directory): such a cache is then not kept, or not trusted.
 */
export async function userSecret(): Promise<Buffer | null> {
  const dir = defaultCacheDir();
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return await loadCacheSecret(dir);
  } catch {
    return null;
  }
}

/** HMAC-SHA256 (hex) under `secret` of `data` kept under `name`, in the cache kind `domain`. */
export function macOf(secret: Buffer, domain: string, name: string, data: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${domain}\0${name}\0`).update(data).digest('hex');
}

/** Whether `mac` is `data`'s under `name` in `domain` (compared in constant time). */
export function macHolds(
  secret: Buffer,
  domain: string,
  name: string,
  data: string | Uint8Array,
  mac: string,
): boolean {
  const want = Buffer.from(macOf(secret, domain, name, data), 'hex');
  const got = Buffer.from(mac.trim(), 'hex');
  return got.length === want.length && timingSafeEqual(got, want);
}

export function entryMac(secret: Buffer, name: string, resultJson: Buffer): string {
  return macOf(secret, DOMAIN, name, resultJson);
}

export function macMatches(secret: Buffer, name: string, resultJson: Buffer, mac: string): boolean {
  return macHolds(secret, DOMAIN, name, resultJson, mac);
}
