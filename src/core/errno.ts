// An errno in words, for messages a person reads: "no space left on device (ENOSPC)".
// Node names only the errnos libuv knows; others (EDQUOT on Linux) come as "Unknown system error -122",
// so the name is found from the number in os.constants.errno, and a few words are supplied here.
import { constants } from 'node:os';
import { getSystemErrorMap } from 'node:util';

const EXTRA_WORDS: Record<string, string> = {
  EDQUOT: 'disk quota exceeded',
  ESTALE: 'stale file handle',
  EUCLEAN: 'structure needs cleaning',
  EREMOTEIO: 'remote I/O error',
};

const NAME_OF = new Map<number, string>(
  Object.entries(constants.errno).map(([name, n]) => [n as number, name]),
);

/** The errno name of a system error ('ENOSPC', 'EDQUOT'), or undefined when `err` carries none. */
export function errnoName(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, errno } = err as { code?: unknown; errno?: unknown };
  if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  if (typeof errno === 'number') return NAME_OF.get(Math.abs(errno));
  return undefined;
}

/** libuv's errno → [name, words]; Node builds a fresh map at each call, so it is asked once. */
let systemErrors: Map<number, [string, string]> | undefined;
function systemErrorMap(): Map<number, [string, string]> {
  systemErrors ??= getSystemErrorMap();
  return systemErrors;
}

/** "no space left on device (ENOSPC)"; the cause's own message when it is no system error. */
export function errnoWords(err: unknown): string {
  const name = errnoName(err);
  if (name === undefined) return (err as Error)?.message ?? String(err);
  const n = constants.errno[name as keyof typeof constants.errno];
  const words = EXTRA_WORDS[name] ?? (n === undefined ? undefined : systemErrorMap().get(-n)?.[1]);
  return words === undefined ? name : `${words} (${name})`;
}

/** True for an error thrown by a system call (it names the call and an errno). */
export function isSystemError(err: unknown): boolean {
  return (
    typeof err === 'object' &&
    err !== null &&
    typeof (err as { syscall?: unknown }).syscall === 'string' &&
    errnoName(err) !== undefined
  );
}
