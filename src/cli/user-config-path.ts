// Where the user's own config file is, in a module that loads nothing else: serve looks for the file
// before it loads the config reader (zod's schemas), which it needs only when the file is there.
import { homedir } from 'node:os';
import { join } from 'node:path';
import { envValue } from '../core/env-value.js';

/**
 * genjob's directory of user config files: $XDG_CONFIG_HOME/genjob, else ~/.config/genjob. A relative
 * XDG_CONFIG_HOME is ignored, as the XDG spec says; a blank HOME reads as unset.
 */
export function userConfigDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const home = envValue(env.HOME) ?? homedir();
  return join(xdg?.startsWith('/') ? xdg : join(home, '.config'), 'genjob');
}

/** The user's own config file: $XDG_CONFIG_HOME/genjob/config.json, else ~/.config/genjob/config.json. */
export function userConfigFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(userConfigDir(env), 'config.json');
}
