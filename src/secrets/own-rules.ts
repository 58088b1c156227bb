// genjob's own text rules, for credential kinds secretlint's recommended preset does not know: JWTs,
// Azure connection strings and SAS tokens, ADO.NET/JDBC connection-string passwords, GitHub's classic
// 40-hex tokens (told from a commit hash by the name they are assigned to, as scanners do), Google API
// keys, private keys in forms the preset's rule skips (PGP armor, encrypted PEM, base64 of PEM), and
// tokens with their own documented prefix. Each names a format a live credential has; placeholders
// (few distinct characters) are ignored.
import { type Gate, type Keyword, runGate } from './keywords.js';

export interface OwnRule {
  name: string;
  keywords: readonly Keyword[];
  /** A cheap necessary condition, tested before `find` once a keyword is seen. */
  gate?: Gate;
  /** Start indices of the credentials in `text`. */
  find(text: string): number[];
}

const literal = (...texts: string[]): Keyword[] => texts.map((text) => ({ text }));
const anyCase = (...texts: string[]): Keyword[] => texts.map((text) => ({ text, anyCase: true }));

/** At least `n` distinct characters: a live token, not `xxxx…` or `1234…`. */
const varied = (s: string, n = 8) => new Set(s).size >= n;

/** The secret part of a match: its last group that matched, or the whole match. */
const secretOf = (m: RegExpMatchArray) => m.slice(1).findLast((g) => g !== undefined) ?? m[0];

/** Start indices of `re`'s matches (global) that `accept` keeps (by default: those whose secret part is varied). */
function matches(re: RegExp, accept: (m: RegExpMatchArray) => boolean = (m) => varied(secretOf(m))) {
  return (text: string): number[] => {
    const at: number[] = [];
    for (const m of text.matchAll(re)) if (accept(m)) at.push(m.index!);
    return at;
  };
}

/** A prefixed token: its prefix is its keyword, its pattern the rule. */
const prefixed = (name: string, keywords: string[], re: RegExp): OwnRule => ({
  name,
  keywords: literal(...keywords),
  find: matches(re),
});

// A name that says "this is a credential", then an assignment (`=`, `:`, `:=`, `=>`) and the value.
const ASSIGN = String.raw`[\w.-]{0,25}?["'\x60\]]{0,2}\s{0,4}(?::=|=>|[:=])\s{0,4}["'\x60]?`;

// -- private keys ------------------------------------------------------------------------------

const PEM_BEGIN = /-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----/g;
// the body right after the BEGIN line (in JSON or an env value, after a literal \n), or encrypted PEM's headers
const PEM_BODY_INLINE = /^(?:\\[rn]|\s){0,8}(?:[A-Za-z0-9+/]{40}|Proc-Type:)/;
// (tested on the line without its indentation, which is unbounded: a YAML block scalar nested deep in a
// manifest; then a bounded prefix: a comment or string-concatenation mark, never a long run to backtrack over)
const PEM_BODY_LINE = /^[\s"'`#/*+]{0,12}(?:[A-Za-z0-9+/]{40}|Proc-Type:)/;
const ARMOR_HEADER = /^\s*(?:[A-Za-z][A-Za-z-]*: .*)?$/;

/** BEGIN … PRIVATE KEY followed by a key body within a few lines (PGP armor has headers and a blank line first). */
function findPemKeys(text: string): number[] {
  const at: number[] = [];
  for (const m of text.matchAll(PEM_BEGIN)) {
    const after = m.index! + m[0].length;
    if (PEM_BODY_INLINE.test(text.slice(after, after + 256))) {
      at.push(m.index!);
      continue;
    }
    const lines = text
      .slice(after, after + 4096)
      .split('\n', 10)
      .slice(1);
    for (const line of lines) {
      if (PEM_BODY_LINE.test(line.trimStart())) {
        at.push(m.index!);
        break;
      }
      if (!ARMOR_HEADER.test(line)) break;
    }
  }
  return at;
}

const PEM_BEGIN_ONE = new RegExp(PEM_BEGIN.source);
/** A base64 run that decodes to a PEM private key header (a Kubernetes Secret's `tls.key: LS0t…`). */
const isBase64Pem = (m: RegExpMatchArray) => {
  const head = m[0].slice(0, 120);
  return PEM_BEGIN_ONE.test(
    Buffer.from(head.slice(0, head.length - (head.length % 4)), 'base64').toString('latin1'),
  );
};

// -- JSON Web Tokens -----------------------------------------------------------------------------

const JWT = /(?<![\w-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{32,}(?![\w-])/g;

function jsonObject(part: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A signed JWT: its header is JSON naming an algorithm other than none (its payload opens a JSON
 * object, `eyJ` being `{"`, which the pattern asks for; the payload need not parse, a fake may not).
 */
const isSignedJwt = (m: RegExpMatchArray) => {
  const alg = jsonObject(m[0].slice(0, m[0].indexOf('.')))?.['alg'];
  return typeof alg === 'string' && alg.toLowerCase() !== 'none';
};

// -- Azure ---------------------------------------------------------------------------------------

/** The storage emulator's documented account key (Azurite, `UseDevelopmentStorage=true`): public by design. */
const AZURITE_KEY =
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/** A SAS token's signature (`sig=`) in a URL or connection string that also carries its service version (`sv=`). */
function findSasTokens(text: string): number[] {
  const at: number[] = [];
  for (const m of text.matchAll(/[?&;]sig=[A-Za-z0-9%+/]{40,}/g)) {
    const start = text.lastIndexOf('\n', m.index!) + 1;
    const end = text.indexOf('\n', m.index!);
    const line = text.slice(Math.max(start, m.index! - 2048), end === -1 ? m.index! + 2048 : end);
    if (/[?&;]sv=\d{4}-\d{2}-\d{2}/.test(line)) at.push(m.index!);
  }
  return at;
}

/** Words that make a GitHub-named variable a credential (not `GITHUB_SHA` or `github_commit`). */
const GH_WORDS = ['token', 'pat', 'secret', 'pass', 'pwd', 'auth', 'key', 'cred'];

// -- connection strings ------------------------------------------------------------------------

const CONN_PASSWORD = /(?<![\w])(?:password|pwd)\s*=\s*("[^"]{4,128}"|'[^']{4,128}'|[^;"'\s<>]{4,128})/gi;
const CONN_SERVER = /(?:^|[;"'\s])(?:server|data source|host|address|addr)\s*=\s*[^;\s]|sqlserver:\/\//i;
/** A placeholder or a reference, not a password: {x}, ${x}, %x%, <x>, $X, my…/your…, "password". */
const PLACEHOLDER_PASSWORD = /^(?:\$|\{|%|<|\*{3}|x{3}|my|your|\.{3})|password|changeme|secret$/i;

/** Password= in a string that also names its server (same line), unless it is a placeholder. */
function findConnectionStringPasswords(text: string): number[] {
  const at: number[] = [];
  for (const m of text.matchAll(CONN_PASSWORD)) {
    const value = m[1]!.replace(/^["']|["']$/g, '');
    if (PLACEHOLDER_PASSWORD.test(value) || !varied(value, 4)) continue;
    const start = text.lastIndexOf('\n', m.index!) + 1;
    const end = text.indexOf('\n', m.index!);
    if (
      CONN_SERVER.test(
        text.slice(Math.max(start, m.index! - 1024), end === -1 ? undefined : Math.min(end, m.index! + 1024)),
      )
    )
      at.push(m.index!);
  }
  return at;
}

// -- rules ---------------------------------------------------------------------------------------

export const OWN_RULES: readonly OwnRule[] = [
  { name: 'private-key', keywords: literal('PRIVATE KEY'), find: findPemKeys },
  {
    name: 'private-key',
    keywords: literal('LS0tLS1CRUdJTi'),
    find: matches(/LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}/g, isBase64Pem),
  },
  { name: 'jwt', keywords: literal('eyJ'), find: matches(JWT, isSignedJwt) },
  {
    name: 'azure-storage-account-key',
    keywords: anyCase('accountkey'),
    find: matches(/AccountKey\s*=\s*([A-Za-z0-9+/]{86}==)/gi, (m) => m[1] !== AZURITE_KEY && varied(m[1]!)),
  },
  {
    // Service Bus, Event Hubs, IoT Hub, Relay: a 256-bit key
    name: 'azure-shared-access-key',
    keywords: anyCase('sharedaccesskey'),
    find: matches(/SharedAccessKey\s*=\s*([A-Za-z0-9+/]{42,43}=)/gi),
  },
  { name: 'azure-sas-token', keywords: literal('sig='), find: findSasTokens },
  {
    // an app registration's client secret: 3 characters, a digit, "Q~", 31 to 34 more
    name: 'azure-ad-client-secret',
    keywords: literal('Q~'),
    find: matches(/(?<![\w~.-])([A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34})(?![\w~.-])/g),
  },
  {
    // an ADO.NET / JDBC connection string (a server and a password in one string): .NET's
    // appsettings.json and web.config, Java's properties
    name: 'connection-string-password',
    keywords: anyCase('password=', 'pwd='),
    gate: /(?:server|data source|host|address|addr)\s*=|sqlserver:\/\//i,
    find: findConnectionStringPasswords,
  },
  {
    // 40 lowercase hex, the same as a commit hash: only where a GitHub credential name holds it
    // (or hub's `oauth_token`), in an Authorization header, or as the user of a github.com URL
    name: 'github-token',
    keywords: anyCase(
      'github',
      'gh_',
      'gh-',
      'gh.',
      ...GH_WORDS.map((w) => `gh${w}`),
      'authorization',
      'oauth',
    ),
    gate: runGate('0123456789abcdefABCDEF', 40),
    find: (text) => [
      ...matches(
        new RegExp(
          String.raw`(?:(?:github|\bgh(?=[_.-]|${GH_WORDS.join('|')}))[\w.-]{0,25}?(?:${GH_WORDS.join('|')})|\boauth[_-]?token)${ASSIGN}([0-9a-f]{40})(?![0-9A-Za-z_])`,
          'gi',
        ),
      )(text),
      ...matches(
        /authorization["']?\s{0,4}[:=]\s{0,4}["']?(?:token|bearer)\s+([0-9a-f]{40})(?![0-9A-Za-z_])/gi,
      )(text),
      ...matches(
        /https?:\/\/(?:[\w.-]{1,40}:)?([0-9a-f]{40})(?::x-oauth-basic)?@(?:[\w-]+\.)*github\.com\b/gi,
      )(text),
    ],
  },
  {
    name: 'google-api-key',
    keywords: literal('AIza'),
    find: matches(/AIza([0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])/g),
  },
  {
    // keys of OpenAI-compatible services (`sk-` and 32+ characters) where an API-key name holds them;
    // an identifier that merely starts with sk- is not one
    name: 'sk-api-key',
    keywords: literal('sk-'),
    gate: /sk-[A-Za-z0-9_-]{32}/,
    find: (text) =>
      [
        ...matches(
          new RegExp(
            `(?:api[_-]?key|secret|token|openai|deepseek|dashscope|moonshot|llm[_-]?key|auth)${ASSIGN}(sk-[A-Za-z0-9_-]{32,200})(?![A-Za-z0-9_-])`,
            'gi',
          ),
          (m) => isKeyLike(m[1]!),
        )(text),
        ...matches(/bearer\s+(sk-[A-Za-z0-9_-]{32,200})(?![A-Za-z0-9_-])/gi, (m) => isKeyLike(m[1]!))(text),
      ].sort((a, b) => a - b),
  },
  {
    name: 'anthropic-admin-key',
    keywords: literal('sk-ant-admin'),
    find: matches(/sk-ant-admin\d\d-([A-Za-z0-9_-]{80,})/g),
  },
  {
    // AWS secret keys under names secretlint's rule does not spell (aws_secret_key, AWS-SECRET-KEY and so on),
    // or that end in / or + (its pattern then finds no word boundary after them)
    name: 'aws-secret-key',
    keywords: anyCase('secret'),
    gate: runGate('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+', 40),
    find: matches(
      new RegExp(
        String.raw`(?:aws[\w.-]{0,20}?secret|secret[_.-]?access[_.-]?key)${ASSIGN}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])`,
        'gi',
      ),
      (m) => /[a-z]/.test(m[1]!) && /[A-Z]/.test(m[1]!) && /\d/.test(m[1]!) && !m[1]!.includes('EXAMPLEKEY'),
    ),
  },
  prefixed('pypi-token', ['pypi-AgEIcHlwaS5vcmc'], /pypi-AgEIcHlwaS5vcmc([A-Za-z0-9_-]{50,})/g),
  prefixed('digitalocean-token', ['dop_v1_', 'doo_v1_', 'dor_v1_'], /\bdo[opr]_v1_([a-f0-9]{64})\b/g),
  prefixed(
    'discord-webhook',
    ['api/webhooks/'],
    /https:\/\/(?:(?:ptb|canary)\.)?discord(?:app)?\.com\/api\/webhooks\/\d{17,20}\/([A-Za-z0-9_-]{60,68})/gi,
  ),
  prefixed('telegram-bot-token', [':AA'], /(?<![\w:])\d{8,10}:(AA[0-9A-Za-z_-]{33})(?![\w-])/g),
  prefixed(
    'age-secret-key',
    ['AGE-SECRET-KEY-1'],
    /AGE-SECRET-KEY-1([QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})/g,
  ),
  prefixed('google-oauth-client-secret', ['GOCSPX-'], /GOCSPX-([A-Za-z0-9_-]{28})(?![A-Za-z0-9_-])/g),
  {
    name: 'teams-webhook',
    keywords: anyCase('.webhook.office.com/'),
    find: matches(
      /https:\/\/[\w-]+\.webhook\.office\.com\/webhookb2\/[0-9a-f-]{36}@[0-9a-f-]{36}\/IncomingWebhook\/([0-9a-f]{32})\/[0-9a-f-]{36}/gi,
    ),
  },
  {
    name: 'slack-workflow-webhook',
    keywords: anyCase('hooks.slack.com/workflows/', 'hooks.slack.com/triggers/'),
    find: matches(
      /https:\/\/hooks\.slack\.com\/(?:workflows|triggers)\/T[A-Z0-9]{8,12}\/A[A-Z0-9]{8,12}\/\d{15,20}\/([A-Za-z0-9]{20,40})/gi,
    ),
  },
  prefixed('postman-api-key', ['PMAK-'], /PMAK-([a-f0-9]{24}-[a-f0-9]{34})(?![a-f0-9])/gi),
  prefixed('new-relic-user-key', ['NRAK-'], /NRAK-([A-Z0-9]{27})(?![A-Z0-9])/g),
  prefixed('heroku-api-key', ['HRKU-'], /HRKU-(AA[0-9A-Za-z_-]{58})(?![0-9A-Za-z_-])/g),
  prefixed('mapbox-secret-token', ['sk.eyJ'], /sk\.eyJ[A-Za-z0-9_-]{40,}\.([A-Za-z0-9_-]{20,})/g),
  prefixed('rubygems-api-key', ['rubygems_'], /rubygems_([a-f0-9]{48})(?![a-f0-9])/g),
  prefixed(
    'sentry-auth-token',
    ['sntrys_', 'sntryu_'],
    /sntrys_(eyJ[A-Za-z0-9+/=_-]{60,})|sntryu_([a-f0-9]{64})/g,
  ),
];

/** `sk-` and 32+ characters mixing letters and digits: not a word joined by hyphens, not a placeholder. */
function isKeyLike(v: string): boolean {
  const body = v.slice(3);
  return /\d/.test(body) && /[A-Za-z]/.test(body) && varied(body, 12);
}

/** Every own rule's name, once. */
export const OWN_RULE_NAMES: readonly string[] = [...new Set(OWN_RULES.map((r) => r.name))];
