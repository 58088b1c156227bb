// The generator's whole environment: an allowlist, never serve's own environment. PATH, the
// locale, TERM, a sandbox HOME, the GENJOB_* job variables, and only the names the host passes
// with --generator-env. API keys, SSH_AUTH_SOCK and GENJOB_SIGN_KEY never reach a generator.

const ALWAYS = ['PATH', 'LANG', 'LANGUAGE', 'TERM', 'TZ'];
const DEFAULT_PATH = '/usr/local/bin:/usr/bin:/bin';

export function generatorEnv(
  from: NodeJS.ProcessEnv,
  extraNames: readonly string[],
  job: Record<string, string>,
  home: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(from)) {
    if (v === undefined) continue;
    if (ALWAYS.includes(k) || k.startsWith('LC_') || extraNames.includes(k)) env[k] = v;
  }
  env.PATH ??= DEFAULT_PATH;
  env.HOME = home;
  return { ...env, ...job };
}
