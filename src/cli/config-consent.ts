// Consent for a repository's genjob.config.json, as `direnv allow` gives it: a setting that runs or
// locates a command on this machine, or weakens the generator's sandbox, is honoured from a repository's
// config only while the user's own state holds an allow record for that file whose digest is today's.
// The digest covers the file's bytes and the ssh client config it names (its Match exec and ProxyCommand
// run here), so a change to either needs a new `genjob config allow`. The state lives outside every
// repository: $XDG_STATE_HOME/genjob/allowed/ (default ~/.local/state/genjob/allowed/), one record per file.
import * as nodeFs from 'node:fs';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { canonicalJson } from '../core/canonical-json.js';
import { errnoOf, IoError, UsageError } from '../core/errors.js';
import { sha256Hex } from '../core/sha256.js';
import { replaceFile } from '../store/durable.js';

export const ALLOW_SCHEMA = 'genjob/config-allow@1';

/** Where genjob keeps the user's own state (never inside a repository). */
export function stateDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_STATE_HOME;
  const base = xdg?.startsWith('/') ? xdg : join(env.HOME || homedir(), '.local', 'state');
  return join(base, 'genjob');
}

function recordFile(configFile: string, env: NodeJS.ProcessEnv): string {
  return join(stateDir(env), 'allowed', `${sha256Hex(Buffer.from(configFile, 'utf8'))}.json`);
}

/** The bytes of a file a setting names (an ssh config), or null when there is none to read. */
function namedFileBytes(file: string): Buffer | null {
  try {
    return readFileSync(file);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'EISDIR') return null;
    throw IoError.wrap('read', file, err);
  }
}

/** What an allow record vouches for: the config file's bytes and those of each file it names. */
export function consentDigest(bytes: Buffer, namedFiles: readonly string[]): string {
  return sha256Hex(
    Buffer.from(
      canonicalJson({
        config: sha256Hex(bytes),
        files: namedFiles.map((f) => {
          const b = namedFileBytes(f);
          return { file: f, sha256: b === null ? null : sha256Hex(b) };
        }),
      }),
      'utf8',
    ),
  );
}

interface AllowRecord {
  schema: string;
  file: string;
  sha256: string;
  allowed_at: string;
}

function readRecord(configFile: string, env: NodeJS.ProcessEnv): AllowRecord | undefined {
  const file = recordFile(configFile, env);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw IoError.wrap('read', file, err);
  }
  try {
    const r = JSON.parse(text) as AllowRecord;
    return r.schema === ALLOW_SCHEMA && r.file === configFile ? r : undefined;
  } catch {
    return undefined; // a torn or foreign record allows nothing
  }
}

/** Record that the user allows `configFile` as it is now (digest `sha256`); returns the record's path. */
export function recordConsent(
  configFile: string,
  sha256: string,
  env: NodeJS.ProcessEnv = process.env,
  now = new Date(),
): string {
  const file = recordFile(configFile, env);
  nodeFs.mkdirSync(join(stateDir(env), 'allowed'), { recursive: true, mode: 0o700 });
  const record: AllowRecord = {
    schema: ALLOW_SCHEMA,
    file: configFile,
    sha256,
    allowed_at: now.toISOString(),
  };
  replaceFile({ fs: nodeFs }, file, Buffer.from(`${JSON.stringify(record)}\n`), 0o600);
  return file;
}

/** Refuse `setting` of the repository config `configFile` unless the user allowed it as it is (digest `sha256`). */
export function requireConsent(
  configFile: string,
  sha256: string,
  setting: string,
  env: NodeJS.ProcessEnv = process.env,
): void {
  const record = readRecord(configFile, env);
  if (record?.sha256 === sha256) return;
  const changed = record
    ? ` (it, or a file it names, changed since you allowed it on ${record.allowed_at})`
    : '';
  // a checker's network and environment have no flag of their own: only consent
  const [does, or] = setting.startsWith('checkers.')
    ? ["widens the checker's sandbox", '']
    : ["runs a command on this machine or widens the generator's sandbox", ' (or give the flag yourself)'];
  throw new UsageError(
    'EGJ_CONFIG_NOT_ALLOWED',
    `${configFile}: "${setting}" ${does}; a repository's config may set it only once you have read the file and allowed it${changed}: genjob config allow${or}`,
  );
}
