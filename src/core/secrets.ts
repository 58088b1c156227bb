// Nothing secret leaves the machine: mint refuses to ship a path that is a credential file by
// name, or text holding a high-confidence credential pattern, unless `--allow-secret PATH` says so.
// Rules match the basename or a path suffix, case-insensitively; text patterns are chosen so a
// hit is almost surely a live secret (no entropy guessing, no JWTs). Findings never carry the
// matched text, so reporting a secret cannot leak it. Pure: the caller streams bytes in.
import { StringDecoder } from 'node:string_decoder';
import { UsageError } from './errors.js';

/** Template suffixes: `.env.example`, `.env.local.example`, … conventionally hold no secrets. */
const ENV_TEMPLATE_SUFFIXES = ['.example', '.sample', '.template', '.dist', '.defaults'];
const isEnvTemplate = (b: string) => ENV_TEMPLATE_SUFFIXES.some((s) => b.endsWith(s));

interface PathRule {
  rule: string;
  why: string;
  /** `head` gives the file's first bytes, when there is a file, for a rule that a format can clear. */
  test: (base: string, parts: readonly string[], head: () => Uint8Array | undefined) => boolean;
}

/** A zip archive (a Keynote .key document is one): its first bytes are 'PK\x03\x04'. */
function isZip(head: Uint8Array | undefined): boolean {
  return head !== undefined && head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04;
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
    test: (b) => (b === '.env' || b === '.envrc' || b.startsWith('.env.')) && !isEnvTemplate(b),
  },
  {
    rule: 'key-file',
    why: `a ${KEY_EXTENSIONS.join('/')} file holds a private key or certificate`,
    test: (b, _p, head) =>
      KEY_EXTENSIONS.some((ext) => b.endsWith(ext) && b.length > ext.length) &&
      !(b.endsWith('.key') && isZip(head())), // a Keynote document is a zip, not a key
  },
  {
    rule: 'ssh-private-key',
    why: 'an id_<type> file is a private ssh key',
    test: (b) => /^id_(?:rsa|dsa|ecdsa|ed25519|ecdsa_sk|ed25519_sk|xmss)(?:[_-][a-z0-9_-]+)?$/.test(b),
  },
  {
    rule: 'terraform-state',
    why: 'Terraform state holds every secret of its resources in plain text',
    test: (b) => b.endsWith('.tfstate') || b.endsWith('.tfstate.backup'),
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

/**
 * Why `path` must not be shipped (naming the rule), or null. `path` is '/'-separated; `head`, when
 * the file exists, returns its first bytes (a .key file that is a zip is a Keynote document).
 */
export function secretPathProblem(
  path: string,
  head: () => Uint8Array | undefined = () => undefined,
): string | null {
  const parts = path
    .toLowerCase()
    .split('/')
    .filter((p) => p !== '');
  const base = parts[parts.length - 1];
  if (base === undefined) return null;
  for (const r of PATH_RULES) if (r.test(base, parts, head)) return `${r.why} (rule ${r.rule})`;
  return null;
}

interface TextRule {
  rule: string;
  re: RegExp;
  /** Extra veto for a match, e.g. documented example values. */
  ignore?: (match: string) => boolean;
}

// Quantifiers are bounded where the pattern could otherwise run long: detection needs a prefix only.
const PEM_BEGIN = /-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/;
// A key's body: base64 right after the BEGIN line (in JSON, after a literal \n), or an encrypted PEM's headers.
const PEM_INLINE_BODY = /PRIVATE KEY(?: BLOCK)?-----(?:\\n|\s)*(?:[A-Za-z0-9+/]{40}|Proc-Type:)/;
const PEM_BODY_LINE = /^[\s"'`]*(?:[A-Za-z0-9+/]{40,}={0,2}|Proc-Type:)/;

/** A base64 run that decodes to a PEM private key header (a Kubernetes Secret's `tls.key: LS0t…`). */
function isBase64Pem(m: string): boolean {
  const head = m.slice(0, 120);
  return PEM_BEGIN.test(
    Buffer.from(head.slice(0, head.length - (head.length % 4)), 'base64').toString('latin1'),
  );
}

/** Fewer than 6 distinct characters in the 16 after the prefix: a placeholder such as AKIAXXXXXXXXXXXXXXXX. */
const isPlaceholderAwsId = (m: string) => m.includes('EXAMPLE') || new Set(m.slice(4)).size < 6;

const TEXT_RULES: readonly TextRule[] = [
  // confirmed by its body (same line or the next, see the scanner), so code and docs quoting it pass
  { rule: 'private-key', re: PEM_BEGIN },
  { rule: 'private-key', re: /LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}/, ignore: (m) => !isBase64Pem(m) },
  // AWS key ids are base32: A-Z and 2-7
  { rule: 'aws-access-key-id', re: /\b(?:AKIA|ASIA)[A-Z2-7]{16}\b/, ignore: isPlaceholderAwsId },
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
  // Bare sk-<32+ alnum> (legacy OpenAI and compatible endpoints): must mix letters and digits, and not
  // be a URL path segment (/guides/sk-<hex>) or part of a longer dotted or hyphenated name.
  {
    rule: 'api-secret-key',
    re: /(?<![\w/.-])sk-(?=[A-Za-z0-9]{0,200}\d)(?=[A-Za-z0-9]{0,200}[A-Za-z])[A-Za-z0-9]{32,}(?![A-Za-z0-9_-])/,
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
const ANCHORS =
  /PRIVATE KEY|LS0tLS1CRUdJTi|AKIA|ASIA|gh[pousr]_|github_pat_|glpat-|xox[baprs]-|sk-|AIza|_live_|npm_|hf_/;

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

/** 'utf16le' / 'utf16be' for text with a UTF-16 byte-order mark, or ASCII-range UTF-16LE without one. */
function utf16Of(head: Uint8Array): 'utf16le' | 'utf16be' | null {
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf16le';
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf16be';
  const n = Math.min(head.length, BINARY_SNIFF_BYTES) & ~1;
  if (n < 16) return null;
  let oddZero = 0;
  let evenZero = 0;
  for (let i = 0; i < n; i += 2) {
    if (head[i] === 0) evenZero++;
    if (head[i + 1] === 0) oddZero++;
  }
  return oddZero >= 0.9 * (n / 2) && evenZero === 0 ? 'utf16le' : null;
}

/** A UTF-16BE decoder: swaps each byte pair (carrying an odd byte over) and decodes as UTF-16LE. */
function utf16beDecoder(): { write(b: Buffer): string; end(): string } {
  const le = new StringDecoder('utf16le');
  let carry: number | undefined;
  return {
    write(b) {
      const bytes = carry === undefined ? b : Buffer.concat([Buffer.of(carry), b]);
      const even = bytes.length & ~1;
      carry = even < bytes.length ? bytes[even] : undefined;
      const swapped = Buffer.from(bytes.subarray(0, even));
      swapped.swap16();
      return le.write(swapped);
    },
    end: () => le.end(),
  };
}

/**
 * A streaming scanner: memory stays bounded (one window of MAX_LINE_CHARS) whatever the file size,
 * a line split across chunks is seen whole, UTF-16 text (a BOM, or ASCII-range UTF-16LE) is decoded
 * as such, and other content with a NUL in its first 8000 bytes is treated as binary and skipped. A
 * PEM BEGIN line counts only when a key body follows it (same line or the next), so code and docs
 * that merely quote the line pass.
 */
export function createSecretScanner(): SecretScanner {
  let decoder: { write(b: Buffer): string; end(): string } = new StringDecoder('utf8');
  const findings: SecretFinding[] = [];
  let pending = '';
  let line = 1;
  let sniffed = 0;
  let binary = false;
  let reported = new Set<string>(); // rules already reported for the current line
  let pemCandidate: number | null = null; // line of a BEGIN … PRIVATE KEY line awaiting its body

  const add = (at: number, rule: string) => {
    if (findings.length < MAX_FINDINGS) findings.push({ line: at, rule });
  };

  const record = (text: string) => {
    if (pemCandidate !== null && pemCandidate < line) {
      // PGP armor (and encrypted PEM) may put "Key: value" headers and a blank line before the body
      const header = text.trim() === '' || /^[A-Za-z][A-Za-z-]*: /.test(text);
      if (PEM_BODY_LINE.test(text)) {
        add(pemCandidate, 'private-key');
        pemCandidate = null;
      } else if (!header || line - pemCandidate > 8) pemCandidate = null;
    }
    for (const rule of scanLine(text)) {
      if (reported.has(rule)) continue;
      if (rule === 'private-key' && PEM_BEGIN.test(text) && !PEM_INLINE_BODY.test(text)) {
        if (!/LS0tLS1CRUdJTi/.test(text)) {
          pemCandidate ??= line;
          continue;
        }
      }
      reported.add(rule);
      add(line, rule);
    }
  };

  const feed = (text: string) => {
    // No anchor in the open line plus this text, and no BEGIN line awaiting its body: no rule can hit
    // any line of it, so only count its lines (one regex pass instead of one call per line).
    if (pemCandidate === null && !ANCHORS.test(pending + text)) {
      const last = text.lastIndexOf('\n');
      if (last === -1) pending += text;
      else {
        for (let nl = text.indexOf('\n'); nl !== -1 && nl <= last; nl = text.indexOf('\n', nl + 1)) line += 1;
        reported = new Set();
        pending = text.slice(last + 1);
      }
      if (pending.length > MAX_LINE_CHARS) pending = pending.slice(-OVERLAP);
      return;
    }
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
      if (typeof chunk !== 'string' && sniffed === 0 && chunk.length >= 2) {
        const utf16 = utf16Of(chunk);
        if (utf16 === 'utf16le') decoder = new StringDecoder('utf16le');
        if (utf16 === 'utf16be') decoder = utf16beDecoder();
        if (utf16 !== null) sniffed = BINARY_SNIFF_BYTES; // its NULs are text
      }
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
