// Fake credentials in real formats for the secret-scan corpus, made at run time: the committed files
// hold `{{name}}` placeholders, so the repository itself holds no credential-shaped string, and a
// format with a checksum (GitHub's and npm's CRC32) gets a valid one. Values are drawn from a PRNG
// seeded by the file's path, so a failure names a value that the next run makes again. Keys (RSA, EC,
// ed25519) come from node:crypto and are made once per run.
import { createHmac, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mulberry32 } from '../helpers/prng.js';

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const BASE62 = DIGITS + UPPER + LOWER;
const HEX = '0123456789abcdef';
const URLSAFE = `${ALNUM}-_`;

type Draw = (alphabet: string, n: number) => string;

function crc32(s: string): number {
  let c = 0xffffffff;
  for (const b of Buffer.from(s)) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

function base62(n: number, width: number): string {
  let out = '';
  for (let v = n; v > 0; v = Math.floor(v / 62)) out = BASE62[v % 62] + out;
  return out.padStart(width, '0');
}

/** GitHub's token format (also npm's): prefix, 30 random base62, the CRC32 of those 30 in 6 base62. */
const checksummed = (draw: Draw, prefix: string) => {
  const body = draw(ALNUM, 30);
  return `${prefix}${body}${base62(crc32(body), 6)}`;
};

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const uuid = (draw: Draw) =>
  [draw(HEX, 8), draw(HEX, 4), `4${draw(HEX, 3)}`, `a${draw(HEX, 3)}`, draw(HEX, 12)].join('-');
const bytes = (draw: Draw, n: number) => Buffer.from(draw(HEX, 2 * n), 'hex');
/** Alnum that ends in a letter or digit and mixes cases and digits, like a random key. */
const mixed = (draw: Draw, alphabet: string, n: number) =>
  `${draw(UPPER, 1)}${draw(DIGITS, 1)}${draw(alphabet, n - 3)}${draw(LOWER, 1)}`;

// ---- keys, once per run ----
let keys: Record<string, string> | undefined;
function pemKeys(): Record<string, string> {
  if (keys) return keys;
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ed = generateKeyPairSync('ed25519');
  const lines = (s: string, w: number) => s.match(new RegExp(`.{1,${w}}`, 'g'))!.join('\n');
  // OpenSSH's format (node cannot write it): the magic "openssh-key-v1\0", then length-prefixed
  // fields (cipher, kdf, kdf options, key count, public key, private section)
  const field = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  const openssh = Buffer.concat([
    Buffer.from('openssh-key-v1\0', 'latin1'),
    field(Buffer.from('none')),
    field(Buffer.from('none')),
    field(Buffer.alloc(0)),
    Buffer.from([0, 0, 0, 1]),
    field(Buffer.concat([field(Buffer.from('ssh-ed25519')), field(randomBytes(32))])),
    field(randomBytes(140)),
  ]);
  // OpenPGP: a secret-key packet (old format, tag 5, two length bytes), then key material
  const pgp = Buffer.concat([Buffer.from([0x95, 0x03, 0x98, 0x04]), randomBytes(600)]);
  const pkcs8Rsa = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  keys = {
    'rsa-pkcs1': rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string,
    'rsa-pkcs8': pkcs8Rsa,
    'ec-sec1': ec.privateKey.export({ type: 'sec1', format: 'pem' }) as string,
    'ed25519-pkcs8': ed.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    'encrypted-pkcs8': ec.privateKey.export({
      type: 'pkcs8',
      format: 'pem',
      cipher: 'aes-256-cbc',
      passphrase: 'corpus',
    }) as string,
    'openssh-key': `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines(openssh.toString('base64'), 70)}\n-----END OPENSSH PRIVATE KEY-----\n`,
    'pgp-private': `-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: corpus\n\n${lines(pgp.toString('base64'), 64)}\n=${randomBytes(3).toString('base64')}\n-----END PGP PRIVATE KEY BLOCK-----\n`,
    'rsa-public': rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string,
    // in a JSON string (a service account's private_key) and base64 of the PEM (a Kubernetes Secret)
    'pkcs8-json': JSON.stringify(pkcs8Rsa).slice(1, -1),
    'pkcs8-base64': Buffer.from(pkcs8Rsa).toString('base64'),
    'jwt-rs256': (() => {
      const head = `${b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT', kid: 'k1' }))}.${b64url(JSON.stringify({ sub: 'svc-deploy', aud: 'api', iat: 1767225600 }))}`;
      return `${head}.${sign('sha256', Buffer.from(head), rsa.privateKey).toString('base64url')}`;
    })(),
  };
  return keys;
}

/** Generators by placeholder name; `draw` is the file's PRNG. */
const GENERATORS: Record<string, (draw: Draw) => string> = {
  'aws-key-id': (d) => `AKIA${d('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}`,
  'aws-key-id-digits': (d) => `AKIA${d(UPPER, 6)}0189${d(UPPER + DIGITS, 6)}`,
  'aws-session-key-id': (d) => `ASIA${d('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}`,
  'aws-secret': (d) => mixed(d, `${ALNUM}/+`, 40),
  'aws-secret-slash': (d) => `${mixed(d, `${ALNUM}/+`, 39)}/`,
  ghp: (d) => checksummed(d, 'ghp_'),
  gho: (d) => checksummed(d, 'gho_'),
  ghs: (d) => checksummed(d, 'ghs_'),
  ghu: (d) => checksummed(d, 'ghu_'),
  'github-pat': (d) => `github_pat_11${d(UPPER + DIGITS, 20)}_${d(ALNUM, 59)}`,
  'github-hex': (d) => d(HEX, 40),
  npm: (d) => checksummed(d, 'npm_'),
  gitlab: (d) => `glpat-${d(URLSAFE, 20)}`,
  'slack-bot': (d) => `xoxb-${d(DIGITS, 12)}-${d(DIGITS, 13)}-${d(ALNUM, 24)}`,
  'slack-user': (d) => `xoxp-${d(DIGITS, 12)}-${d(DIGITS, 12)}-${d(DIGITS, 13)}-${d(HEX, 32)}`,
  'slack-app': (d) => `xapp-1-A${d(UPPER + DIGITS, 10)}-${d(DIGITS, 13)}-${d(HEX, 64)}`,
  'slack-webhook': (d) =>
    `https://hooks.slack.com/services/T${d(UPPER + DIGITS, 10)}/B${d(UPPER + DIGITS, 10)}/${d(ALNUM, 24)}`,
  'slack-workflow-webhook': (d) =>
    `https://hooks.slack.com/workflows/T${d(UPPER + DIGITS, 10)}/A${d(UPPER + DIGITS, 10)}/${d(DIGITS, 18)}/${d(ALNUM, 24)}`,
  'stripe-live': (d) => `sk_live_51${d(ALNUM, 97)}`,
  'stripe-restricted': (d) => `rk_live_51${d(ALNUM, 97)}`,
  'stripe-test': (d) => `sk_test_51${d(ALNUM, 97)}`,
  'openai-proj': (d) => `sk-proj-${d(URLSAFE, 73)}${d(ALNUM, 1)}T3BlbkFJ${d(URLSAFE, 73)}${d(ALNUM, 1)}`,
  'openai-legacy': (d) => `sk-${d(ALNUM, 20)}T3BlbkFJ${d(ALNUM, 20)}`,
  anthropic: (d) => `sk-ant-api03-${d(URLSAFE, 93)}AA`,
  'anthropic-admin': (d) => `sk-ant-admin01-${d(URLSAFE, 93)}AA`,
  'google-api': (d) => `AIza${d(URLSAFE, 35)}`,
  hf: (d) => `hf_${d(UPPER + LOWER, 34)}`,
  sendgrid: (d) => `SG.${d(ALNUM, 22)}.${d(ALNUM, 43)}`,
  shopify: (d) => `shpat_${d(HEX, 32)}`,
  'grafana-cloud': (d) =>
    `glc_${Buffer.from(JSON.stringify({ o: d(DIGITS, 6), n: 'stack-read', k: d(ALNUM, 24), m: { r: 'us' } }))
      .toString('base64')
      .replace(/=+$/, '')}`,
  'grafana-sa': (d) => `glsa_${d(ALNUM, 32)}_${d(HEX, 8)}`,
  groq: (d) => `gsk_${d(ALNUM, 52)}`,
  linear: (d) => `lin_api_${d(ALNUM, 40)}`,
  notion: (d) => `ntn_${d(DIGITS, 11)}${d(ALNUM, 35)}`,
  '1password': (d) => {
    // base64 of a JSON object whose length is 1 mod 3, so the base64 ends in "fQ=="
    const token = {
      email: `${d(LOWER, 13)}@1passwordserviceaccounts.com`,
      muk: { alg: 'A256GCM', k: d(URLSAFE, 43) },
      secretKey: d(UPPER + DIGITS, 26),
      srpX: d(HEX, 64),
      p: '',
    };
    while (JSON.stringify(token).length % 3 !== 1) token.p += 'x';
    return `ops_${Buffer.from(JSON.stringify(token)).toString('base64')}`;
  },
  vault: (d) => `hvs.${d(URLSAFE, 95)}`,
  vercel: (d) => `vcp_${d(ALNUM, 56)}`,
  databricks: (d) => `dapi${d(HEX, 32)}`,
  'docker-pat': (d) => `dckr_pat_${d(URLSAFE.replace('-', ''), 26)}${d(ALNUM, 1)}`,
  figma: (d) => `figd_${d(URLSAFE, 40)}`,
  cloudflare: (d) => `cfat_${d(ALNUM, 40)}${d(HEX, 8)}`,
  tailscale: (d) => `tskey-auth-k${d(ALNUM, 10)}CNTRL-${d(ALNUM, 33)}`,
  'db-password': (d) => mixed(d, `${ALNUM}!*-_`, 22),
  'basic-password': (d) => mixed(d, ALNUM, 22),
  'jwt-hs256': (d) => {
    const head = `${b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))}.${b64url(JSON.stringify({ sub: d(DIGITS, 8), name: 'corpus', iat: 1767225600, exp: 1767229200 }))}`;
    return `${head}.${createHmac('sha256', d(ALNUM, 32)).update(head).digest('base64url')}`;
  },
  'azure-storage-key': (d) => bytes(d, 64).toString('base64'),
  'azure-sb-key': (d) => bytes(d, 32).toString('base64'),
  'azure-sas-sig': (d) => encodeURIComponent(bytes(d, 32).toString('base64')),
  'azure-ad-secret': (d) => `${d(ALNUM, 3)}${d(DIGITS, 1)}Q~${d(`${ALNUM}_~.-`, 33)}${d(ALNUM, 1)}`,
  'sk-compat': (d) => `sk-${d(HEX, 32)}`,
  pypi: (d) => `pypi-AgEIcHlwaS5vcmc${d(URLSAFE, 150)}`,
  digitalocean: (d) => `dop_v1_${d(HEX, 64)}`,
  'discord-webhook': (d) => `https://discord.com/api/webhooks/${d(DIGITS, 19)}/${d(URLSAFE, 68)}`,
  telegram: (d) => `${d('123456789', 1)}${d(DIGITS, 9)}:AA${d(URLSAFE, 33)}`,
  age: (d) => `AGE-SECRET-KEY-1${d('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58)}`,
  gocspx: (d) => `GOCSPX-${d(URLSAFE, 28)}`,
  'teams-webhook': (d) =>
    `https://contoso.webhook.office.com/webhookb2/${uuid(d)}@${uuid(d)}/IncomingWebhook/${d(HEX, 32)}/${uuid(d)}`,
  postman: (d) => `PMAK-${d(HEX, 24)}-${d(HEX, 34)}`,
  newrelic: (d) => `NRAK-${d(UPPER + DIGITS, 27)}`,
  heroku: (d) => `HRKU-AA${d(URLSAFE, 58)}`,
  mapbox: (d) => `sk.${b64url(JSON.stringify({ u: d(LOWER, 10), a: d(ALNUM, 25) }))}.${d(URLSAFE, 22)}`,
  rubygems: (d) => `rubygems_${d(HEX, 48)}`,
  sentry: (d) => `sntryu_${d(HEX, 64)}`,
  ...Object.fromEntries(
    [
      'rsa-pkcs1',
      'rsa-pkcs8',
      'ec-sec1',
      'ed25519-pkcs8',
      'encrypted-pkcs8',
      'openssh-key',
      'pgp-private',
      'rsa-public',
      'pkcs8-json',
      'pkcs8-base64',
      'jwt-rs256',
    ].map((k) => [k, () => pemKeys()[k]!]),
  ),
};

export const CORPUS_GENERATORS: readonly string[] = Object.keys(GENERATORS);

function seedOf(path: string): number {
  let h = 2166136261;
  for (const c of Buffer.from(path)) h = Math.imul(h ^ c, 16777619);
  return h >>> 0;
}

/** Lines of ordinary code, `n` bytes, to push a credential past the first blocks of a file. */
function padding(n: number): string {
  const line = 'export const values = [1, 2, 3].map((v) => v * 2); // filler for the corpus\n';
  return line.repeat(Math.ceil(n / line.length)).slice(0, n);
}

/**
 * The file `path` from its template: `{{name}}` becomes a generated value (the same name twice in
 * one file, the same value), `{{name:N}}` that value with its lines after the first indented N
 * spaces (a YAML block scalar), `{{pad:N}}` N bytes of code, `{{nul}}` a NUL byte.
 */
export function renderCorpusFile(path: string, template: string): string {
  const rand = mulberry32(seedOf(path));
  const draw: Draw = (alphabet, n) => {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(rand() * alphabet.length)];
    return s;
  };
  const made = new Map<string, string>();
  return template.replace(/\{\{([a-z0-9-]+)(?::(\d+))?\}\}/g, (whole, name: string, arg?: string) => {
    if (name === 'pad') return padding(Number(arg));
    if (name === 'nul') return '\0';
    const gen = GENERATORS[name];
    if (gen === undefined) throw new Error(`corpus: ${path}: no generator for ${whole}`);
    if (!made.has(name)) made.set(name, gen(draw));
    const value = made.get(name)!;
    return arg === undefined ? value : value.replace(/\n(?=.)/g, `\n${' '.repeat(Number(arg))}`);
  });
}

export type CorpusEncoding = 'utf8' | 'utf16le' | 'utf16le-bom' | 'utf16be' | 'utf16be-bom';

/** The rendered text as the bytes the file holds. */
export function encodeCorpusFile(text: string, encoding: CorpusEncoding = 'utf8'): Buffer {
  if (encoding === 'utf8') return Buffer.from(text, 'utf8');
  const le = Buffer.from(text, 'utf16le');
  const body = encoding.startsWith('utf16be') ? Buffer.from(le).swap16() : le;
  if (!encoding.endsWith('-bom')) return body;
  return Buffer.concat([Buffer.from(encoding.startsWith('utf16be') ? [0xfe, 0xff] : [0xff, 0xfe]), body]);
}

/** One generated value by placeholder name (tests of single rules), drawn with `seed`. */
export function corpusValue(name: string, seed = 'unit'): string {
  return renderCorpusFile(seed, `{{${name}}}`);
}
