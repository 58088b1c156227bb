// Nothing secret leaves the machine: mint refuses to ship a path that is a credential file by
// name, or text holding a high-confidence credential pattern, unless `--allow-secret PATH` says so.
// Rules match the basename or a path suffix, case-insensitively; text patterns are chosen so a
// hit is almost surely a live secret (no entropy guessing, no JWTs). Findings never carry the
// matched text, so reporting a secret cannot leak it. Pure: the caller streams bytes in.
import { StringDecoder } from 'node:string_decoder';
import { UsageError } from './errors.js';

/** Template files that conventionally hold no secrets and are committed on purpose. */
const ENV_TEMPLATES = new Set(['.env.example', '.env.sample', '.env.template', '.env.dist', '.env.defaults']);

interface PathRule {
  rule: string;
  why: string;
  test: (base: string, parts: readonly string[]) => boolean;
}

const BASENAMES = new Set([
  '.npmrc',
  '.pypirc',
  '.netrc',
  '_netrc',
  '.git-credentials',
  '.pgpass',
  '.htpasswd',
]);
const KEY_EXTENSIONS = ['.pem', '.key', '.p12', '.pfx', '.keystore', '.jks', '.ppk'];
const SUFFIXES: ReadonlyArray<readonly string[]> = [
  ['.aws', 'credentials'],
  ['.docker', 'config.json'],
  ['.kube', 'config'],
];
const SECRET_DIRS = new Set(['.ssh', '.gnupg']);

const PATH_RULES: readonly PathRule[] = [
  {
    rule: 'env-file',
    why: 'a .env file holds environment secrets',
    test: (b) => (b === '.env' || b.startsWith('.env.')) && !ENV_TEMPLATES.has(b),
  },
  {
    rule: 'key-file',
    why: `a ${KEY_EXTENSIONS.join('/')} file holds a private key or certificate`,
    test: (b) => KEY_EXTENSIONS.some((ext) => b.endsWith(ext) && b.length > ext.length),
  },
  {
    rule: 'ssh-private-key',
    why: 'an id_* file is a private ssh key',
    test: (b) => /^id_[a-z0-9_]+$/.test(b),
  },
  {
    rule: 'credential-dir',
    why: 'files in .ssh/ and .gnupg/ are keys (only *.pub may ship)',
    test: (b, p) => p.slice(0, -1).some((d) => SECRET_DIRS.has(d)) && !b.endsWith('.pub'),
  },
  {
    rule: 'credential-file',
    why: 'this file holds registry or login credentials',
    test: (b) => BASENAMES.has(b),
  },
  {
    rule: 'cloud-credentials',
    why: 'this file holds cloud credentials',
    test: (b, p) =>
      b === 'credentials.json' ||
      b === 'application_default_credentials.json' ||
      SUFFIXES.some((s) => p.length >= s.length && s.every((seg, i) => p[p.length - s.length + i] === seg)),
  },
];

/** Why `path` must not be shipped (naming the rule), or null. `path` is '/'-separated. */
export function secretPathProblem(path: string): string | null {
  const parts = path
    .toLowerCase()
    .split('/')
    .filter((p) => p !== '');
  const base = parts[parts.length - 1];
  if (base === undefined) return null;
  for (const r of PATH_RULES) if (r.test(base, parts)) return `${r.why} (rule ${r.rule})`;
  return null;
}

interface TextRule {
  rule: string;
  re: RegExp;
  /** Extra veto for a match, e.g. documented example values. */
  ignore?: (match: string) => boolean;
}

// Quantifiers are bounded where the pattern could otherwise run long: detection needs a prefix only.
const TEXT_RULES: readonly TextRule[] = [
  { rule: 'private-key', re: /-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/ },
  { rule: 'aws-access-key-id', re: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/, ignore: (m) => m.endsWith('EXAMPLE') },
  {
    rule: 'github-token',
    re: /\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})(?![A-Za-z0-9_])/,
  },
  { rule: 'gitlab-token', re: /\bglpat-[A-Za-z0-9_-]{20}(?![A-Za-z0-9_-])/ },
  { rule: 'slack-token', re: /\bxox[baprs]-[0-9]{6,}-[A-Za-z0-9-]{6,}/ },
  {
    rule: 'openai-api-key',
    re: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{8,200}T3BlbkFJ[A-Za-z0-9_-]{8,}/,
  },
  { rule: 'anthropic-api-key', re: /\bsk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}/ },
  // Bare sk-<32+ alnum> (legacy OpenAI and compatible endpoints): must mix letters and digits.
  {
    rule: 'api-secret-key',
    re: /\bsk-(?=[A-Za-z0-9]{0,200}\d)(?=[A-Za-z0-9]{0,200}[A-Za-z])[A-Za-z0-9]{32,}(?![A-Za-z0-9_-])/,
  },
  { rule: 'google-api-key', re: /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/ },
  { rule: 'stripe-live-key', re: /\b(?:sk|rk)_live_[0-9A-Za-z]{24,}/ },
  { rule: 'npm-token', re: /\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])/ },
  { rule: 'huggingface-token', re: /\bhf_[A-Za-z]{34}(?![A-Za-z0-9])/ },
];

export const SECRET_TEXT_RULES: readonly string[] = [...new Set(TEXT_RULES.map((r) => r.rule))];

export interface SecretFinding {
  /** 1-based line number. */
  line: number;
  rule: string;
}

/** Every rule's literal anchor: one cheap pass rules out most lines before the rules run. */
const ANCHORS = /PRIVATE KEY|AKIA|ASIA|gh[pousr]_|github_pat_|glpat-|xox[baprs]-|sk-|AIza|_live_|npm_|hf_/;

/** Rules that match somewhere in one line (each at most once). */
function scanLine(text: string): string[] {
  const hits: string[] = [];
  if (!ANCHORS.test(text)) return hits;
  for (const r of TEXT_RULES) {
    const m = r.re.exec(text);
    if (m !== null && !(r.ignore?.(m[0]) ?? false) && !hits.includes(r.rule)) hits.push(r.rule);
  }
  return hits;
}

/** Bytes inspected for a NUL before a file is judged binary (as git does). */
export const BINARY_SNIFF_BYTES = 8000;
/** A line longer than this is scanned in windows that overlap by OVERLAP characters. */
export const MAX_LINE_CHARS = 64 * 1024;
const OVERLAP = 1024;
const MAX_FINDINGS = 1000;

export interface SecretScanner {
  /** Feed the next chunk (bytes are decoded as UTF-8 across chunk boundaries). */
  push(chunk: Uint8Array | string): void;
  /** Flush the last line and return every finding, in order. `binary` is true when the input was skipped. */
  end(): { findings: SecretFinding[]; binary: boolean };
}

/**
 * A streaming scanner: memory stays bounded (one window of MAX_LINE_CHARS) whatever the file size,
 * a line split across chunks is seen whole, and content with a NUL in its first 8000 bytes is
 * treated as binary and skipped (no text rule can be meant for it).
 */
export function createSecretScanner(): SecretScanner {
  const decoder = new StringDecoder('utf8');
  const findings: SecretFinding[] = [];
  let pending = '';
  let line = 1;
  let sniffed = 0;
  let binary = false;
  let reported = new Set<string>(); // rules already reported for the current line

  const record = (text: string) => {
    for (const rule of scanLine(text)) {
      if (reported.has(rule) || findings.length >= MAX_FINDINGS) continue;
      reported.add(rule);
      findings.push({ line, rule });
    }
  };

  const feed = (text: string) => {
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl === -1) break;
      record(pending + text.slice(start, nl));
      pending = '';
      line += 1;
      reported = new Set();
      start = nl + 1;
    }
    pending += text.slice(start);
    if (pending.length > MAX_LINE_CHARS) {
      record(pending);
      pending = pending.slice(-OVERLAP);
    }
  };

  return {
    push(chunk) {
      if (binary) return;
      if (sniffed < BINARY_SNIFF_BYTES) {
        const head =
          typeof chunk === 'string'
            ? chunk.slice(0, BINARY_SNIFF_BYTES - sniffed)
            : chunk.subarray(0, BINARY_SNIFF_BYTES - sniffed);
        const hasNul = typeof head === 'string' ? head.includes('\0') : head.includes(0);
        sniffed += head.length;
        if (hasNul) {
          binary = true;
          findings.length = 0;
          pending = '';
          return;
        }
      }
      feed(
        typeof chunk === 'string'
          ? chunk
          : decoder.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)),
      );
    },
    end() {
      if (!binary) {
        feed(decoder.end());
        if (pending.length > 0) record(pending);
        pending = '';
      }
      return { findings: [...findings], binary };
    },
  };
}

/** Findings in a whole string (the instruction, a small file). */
export function scanSecretText(text: string): SecretFinding[] {
  const scanner = createSecretScanner();
  scanner.push(text);
  return scanner.end().findings;
}

/** The error mint raises for a finding: names the file (and line) and the way out. */
export function secretError(file: string, rule: string, line?: number): UsageError {
  const where = line === undefined ? file : `${file}:${line}`;
  return new UsageError(
    'EGJ_SECRET',
    `${where}: looks like a secret (${rule}); refusing to ship it to the generator host. ` +
      `If it is not one, pass --allow-secret ${file}`,
  );
}
