// genjob trust add|list|remove: edit the pinned keys in genjob-trust.json at the repository root.
// Adding the same name and key twice is a no-op that says so; removing a key makes every receipt it
// signed fail verification from then on (see docs/trust.md, "Rotating a key").

import { UsageError } from '../core/errors.js';
import { keyIdOf, parsePublicKey } from '../trust/keys.js';
import {
  addTrustedKey,
  readTrust,
  removeTrustedKey,
  TRUST_FILE,
  TRUST_USES,
  type TrustUse,
} from '../trust/trust-file.js';

export interface CommandResult {
  exitCode: 0;
  /** Lines for stdout. */
  human: string;
  json: Record<string, unknown>;
}

export async function runTrustAdd(
  root: string,
  name: string,
  key: string,
  uses?: readonly string[],
): Promise<CommandResult> {
  for (const u of uses ?? [])
    if (!(TRUST_USES as readonly string[]).includes(u))
      throw new UsageError('EGJ_USAGE', `--for ${JSON.stringify(u)}: one of ${TRUST_USES.join(', ')}`);
  const r = addTrustedKey(root, name, key, new Date(), uses as TrustUse[] | undefined);
  const human = r.added
    ? `trusted ${r.name} (keyid ${r.keyid}) in ${TRUST_FILE}; commit it so every verifier pins the same keys\n`
    : `${r.name} (keyid ${r.keyid}) is already trusted; nothing to do\n`;
  return { exitCode: 0, human, json: { added: r.added, name: r.name, key: r.key, keyid: r.keyid } };
}

export async function runTrustList(root: string): Promise<CommandResult> {
  const keys = readTrust(root).map((e) => ({ ...e, keyid: keyIdOf(parsePublicKey(e.key)) }));
  const human =
    keys.length === 0
      ? `no trusted keys (${TRUST_FILE} is absent or empty): receipts are accepted unsigned\n`
      : keys
          .map(
            (k) =>
              `${k.name}\t${k.keyid}\t${k.key}\tadded ${k.added}${k.for ? `\tfor ${k.for.join(',')}` : ''}\n`,
          )
          .join('');
  return { exitCode: 0, human, json: { keys } };
}

export async function runTrustRemove(root: string, name: string): Promise<CommandResult> {
  const removed = removeTrustedKey(root, name);
  const keyid = keyIdOf(parsePublicKey(removed.key));
  return {
    exitCode: 0,
    human: `removed ${removed.name} (keyid ${keyid}) from ${TRUST_FILE}; receipts it signs are now rejected\n`,
    json: { removed: removed.name, key: removed.key, keyid },
  };
}
