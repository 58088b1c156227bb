// The endpoint a judge asks on this machine, as its records and bindings name it: builtin:openai's base
// URL (GENJOB_OPENAI_BASE_URL, or base_url in its config file) without what may carry a credential (a
// user and password, a query, a fragment). A verdict is the answer of one server: the same model name at
// another endpoint (a local stand-in that always says pass) is another judge, so its record is not current.
import { readOpenAiConfig } from '../remote/generators/openai-config.js';
import type { JudgeChecker } from './checker.js';

/** The endpoint's base URL, or null when builtin:openai has no usable endpoint here (the judge errs). */
export function judgeEndpoint(checker: Pick<JudgeChecker, 'model'>, env: NodeJS.ProcessEnv): string | null {
  // the model the checker names, so a missing GENJOB_OPENAI_MODEL does not hide the endpoint
  const loaded = readOpenAiConfig({ ...env, GENJOB_OPENAI_MODEL: checker.model });
  if (!loaded.ok) return null;
  const { origin, pathname } = loaded.config.endpoint;
  return `${origin}${pathname.replace(/\/chat\/completions$/, '')}`;
}
