// Paths refused by name: a file that is a credential by what it is called (.env, id_rsa, *.pem,
// .npmrc, terraform state …) never ships, whatever its text, unless `--allow-secret PATH` says so.
// Rules match the basename or a path suffix, case-insensitively. A name a harmless format shares is
// cleared by the file's first bytes: a Keynote `.key` is a zip, a `.pem` that opens with a certificate
// or a public key is public (its text is still scanned, so a private key after the certificate is found).

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

/** First bytes a path rule may ask for (enough for a PEM BEGIN line). */
export const SECRET_HEAD_BYTES = 64;

// PEM labels of public material (RFC 7468 and OpenSSL's): a certificate, a chain, a CRL, a request,
// a public key or parameters. Anything else, or text before the first BEGIN line, keeps the name rule.
const PUBLIC_PEM =
  /^\s*-----BEGIN (?:CERTIFICATE|TRUSTED CERTIFICATE|X509 CERTIFICATE|X509 CRL|CERTIFICATE REQUEST|NEW CERTIFICATE REQUEST|PUBLIC KEY|RSA PUBLIC KEY|DH PARAMETERS|EC PARAMETERS|PKCS7|CMS)-----/;

/** A .pem file that opens with public material (its text is scanned for a private key like any other). */
function isPublicPem(head: Uint8Array | undefined): boolean {
  return head !== undefined && PUBLIC_PEM.test(Buffer.from(head).toString('latin1'));
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
      !(b.endsWith('.key') && isZip(head())) && // a Keynote document is a zip, not a key
      !(b.endsWith('.pem') && isPublicPem(head())),
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
 * the file exists, returns its first SECRET_HEAD_BYTES bytes (a .key zip is a Keynote document, a
 * .pem certificate is public).
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
