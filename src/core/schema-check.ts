// Checking untrusted JSON against a schema, and the one place a failed check is put into words. The
// schemas are zod/mini (~60 KB bundled, ~7 ms to load, where zod's full build cost a command ~40 ms), which
// carries no messages: a failed check is run once more with zod's English messages, so a failure reads
// as it always has while a passing check never builds them (they are two small functions until called).
import { type core, safeParse } from 'zod/mini';
import english from 'zod/v4/locales/en.js';

export type SchemaIssue = core.$ZodIssue;
export type Checked<T> = { ok: true; data: T } | { ok: false; issue: SchemaIssue };

let messages: core.$ZodErrorMap | undefined;

/** `raw` checked against `schema`: its data, or its first issue worded in English. */
export function checkSchema<T>(schema: core.$ZodType<T>, raw: unknown): Checked<T> {
  const parsed = safeParse(schema, raw);
  if (parsed.success) return { ok: true, data: parsed.data };
  messages ??= english().localeError;
  const worded = safeParse(schema, raw, { error: messages });
  // a schema is a pure function of its input: the second check fails as the first did
  return { ok: false, issue: (worded.error ?? parsed.error).issues[0]! };
}

/** An issue as `path: message`, the path dotted, `whole` when the issue is about the whole document. */
export function issueText(issue: SchemaIssue, whole = '(document)'): string {
  return `${issue.path.join('.') || whole}: ${issue.message}`;
}
