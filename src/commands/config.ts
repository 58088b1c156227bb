// genjob config allow: record, in the user's own state (src/cli/config-consent.ts), that this repository's
// genjob.config.json may use the settings that run commands on this machine or widen the sandbox, as the
// file (and the ssh config it names) is now. Any later change to them needs a new allow.
import { join } from 'node:path';
import { recordConsent } from '../cli/config-consent.js';
import { CONFIG_FILE, consentSettingsIn, loadConfigFile, repoConsentDigest } from '../cli/config-file.js';
import type { CommandResult, CommonOptions } from '../cli/result.js';
import { findRoot } from '../cli/root.js';
import { UsageError } from '../core/errors.js';

export async function configAllow(o: CommonOptions): Promise<CommandResult> {
  const file = join(findRoot(o.root), CONFIG_FILE);
  const loaded = loadConfigFile(file);
  if (loaded === undefined) throw new UsageError('EGJ_CONFIG', `${file}: no such file; nothing to allow`);
  const sha256 = repoConsentDigest(loaded);
  const record = recordConsent(file, sha256);
  const settings = consentSettingsIn(loaded.config);
  const what =
    settings.length > 0
      ? `${settings.length === 1 ? 'its setting' : 'its settings'} ${settings.join(', ')} now ${settings.length === 1 ? 'applies' : 'apply'}`
      : 'it sets nothing that needs consent today; a later change that does needs a new allow';
  return {
    human: `allowed ${file} (sha256 ${sha256.slice(0, 12)}): ${what} until it changes`,
    json: { ok: true, file, sha256, settings, record },
  };
}
