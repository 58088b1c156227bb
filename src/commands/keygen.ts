// genjob keygen --out FILE: create the ed25519 key a generator host signs its receipts with.
// The private key stays on that host (mode 0600, never overwritten); the printed public key
// line is what the verifying side pins with `genjob trust add NAME KEY`. Missing directories of
// --out are made (mode 0700), so `--out ~/.config/genjob/host.key` works on a fresh host.
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { IoError } from '../core/errors.js';
import { generateKeyFile } from '../trust/keys.js';

export interface CommandResult {
  exitCode: 0;
  /** Lines for stdout. */
  human: string;
  json: Record<string, unknown>;
}

export async function runKeygen(opts: { out: string; json: boolean; root?: string }): Promise<CommandResult> {
  // --root: a relative --out is taken from there (keygen needs no repository)
  const out = opts.root === undefined ? opts.out : resolve(opts.root, opts.out);
  try {
    mkdirSync(dirname(out), { recursive: true, mode: 0o700 });
  } catch (err) {
    throw IoError.wrap('create directory', dirname(out), err);
  }
  const { publicKey, keyid } = generateKeyFile(out);
  return {
    exitCode: 0,
    human:
      `${publicKey}\n` +
      `keyid ${keyid}\n` +
      `private key written to ${out} (mode 0600); keep it on the generator host\n` +
      `on the verifying side: genjob trust add <name> ${publicKey}\n`,
    json: { ok: true, publicKey, keyid, privateKeyFile: out },
  };
}
