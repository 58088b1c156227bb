// A signed check record checked by an implementation that is not genjob's: Debian's
// python3-securesystemslib verifies the ed25519 signature (its SSlibKey; the DSSE pre-authentication
// encoding is computed in the Python script from the DSSE spec, since Debian's 0.26 ships no envelope
// class), and the Statement inside is held to the in-toto Statement v1 layout and the test-result
// predicate's fields. A payload changed by one byte fails that same verification.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CALC_GOOD, checkRepo, records } from './check-helpers.js';
import { publicKeyOfFile } from './trust-helpers.js';

const VERIFY = `
import base64, json, re, sys
from securesystemslib.signer import SSlibKey, Signature
from securesystemslib.exceptions import UnverifiedSignatureError

record, public_b64, keyid = sys.argv[1], sys.argv[2], sys.argv[3]
env = json.load(open(record))
payload = base64.b64decode(env["payload"])
ptype = env["payloadType"].encode()
# DSSE v1: PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
key = SSlibKey(keyid, "ed25519", "ed25519", {"public": base64.b64decode(public_b64).hex()})
sig = env["signatures"][0]
try:
    key.verify_signature(Signature(sig["keyid"], base64.b64decode(sig["sig"]).hex()), pae)
except UnverifiedSignatureError:
    print("REJECTED"); sys.exit(0)

# the in-toto Statement v1 layout, and the test-result v0.1 predicate's fields
assert env["payloadType"] == "application/vnd.in-toto+json", env["payloadType"]
st = json.loads(payload)
assert st["_type"] == "https://in-toto.io/Statement/v1"
assert isinstance(st["subject"], list) and st["subject"]
for s in st["subject"]:
    assert isinstance(s["name"], str) and s["digest"]
    for alg, value in s["digest"].items():
        assert re.fullmatch(r"[0-9a-f]+", value), (alg, value)
assert st["predicateType"] == "https://in-toto.io/attestation/test-result/v0.1"
p = st["predicate"]
assert p["result"] in ("PASSED", "WARNED", "FAILED")
for field in ("passedTests", "warnedTests", "failedTests"):
    assert all(isinstance(t, str) for t in p[field])
assert all(c["digest"]["sha256"] for c in p["configuration"])
print("VERIFIED", p["result"], p["genjob"]["verdict"], ",".join(sorted(s["name"] for s in st["subject"])))
`;

async function python(args: string[]): Promise<string> {
  // Debian's interpreter: python3-securesystemslib is installed for it
  const r = await execa('/usr/bin/python3', ['-c', VERIFY, ...args], { reject: false });
  if (r.exitCode !== 0) throw new Error(`python3 exited ${r.exitCode}: ${r.stderr}`);
  return String(r.stdout).trim();
}

describe('a signed check record, verified by python3-securesystemslib', () => {
  it('verifies the DSSE signature and reads an in-toto v1 Statement; one changed byte is rejected', async () => {
    const r = await checkRepo();
    const keyFile = join(r.outside, 'check.key');
    expect((await r.genjob(['keygen', '--out', keyFile])).exitCode).toBe(0);
    const key = await r.generate('Document add', { 'calc.py': CALC_GOOD });
    const run = await r.genjob(['check', key, '--sign-key', keyFile]);
    expect(run.exitCode, run.stderr).toBe(0);
    const [name] = records(r.repo, key, 'tests');
    const file = join(r.repo, '.gen', 'checks', key, 'tests', name!);
    const { publicKey, keyid } = publicKeyOfFile(keyFile);
    const b64 = publicKey.slice('ed25519:'.length);
    expect(await python([file, b64, keyid])).toBe(
      `VERIFIED PASSED pass calc.py,genjob-receipt:${key},genjob-result-tree`,
    );

    const env = JSON.parse(readFileSync(file, 'utf8'));
    const payload = Buffer.from(env.payload, 'base64')
      .toString('utf8')
      .replace('"verdict":"pass"', '"verdict":"fail"');
    const tampered = join(r.outside, 'tampered.json');
    writeFileSync(tampered, JSON.stringify({ ...env, payload: Buffer.from(payload).toString('base64') }));
    expect(await python([tampered, b64, keyid])).toBe('REJECTED');
  });
});
