// Where the user's own config file is, in a module that loads nothing else: serve looks for the file
// before it loads the config reader (zod's schemas), which it needs only when the file is there.
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The user's own config file: $XDG_CONFIG_HOME/genjob/config.json, else ~/.config/genjob/config.json. */
export function userConfigFile(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  return join(xdg?.startsWith('/') ? xdg : join(env.HOME || homedir(), '.config'), 'genjob', 'config.json');
}
