#!/usr/bin/env python3
"""Independent check of a dpuaudit audit bundle's log (docs/audit.md).

Not the code under test: recomputes every entry hash of the bundle's log
segment with hashlib, checks the links and that the last entry is the
checkpoint's head, and verifies the checkpoint's ES256 signature with the
`cryptography` package under a key from a JWK Set.

usage: audit_chain_check.py BUNDLE.json JWKS.json
prints one JSON line {"entries": N, "size": S, "head": H, "kid": K}; exit 1
with a message on the first problem.
"""
import base64
import hashlib
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def main():
    bundle = json.load(open(sys.argv[1], encoding="utf-8"))
    jwks = json.load(open(sys.argv[2], encoding="utf-8"))
    entries = bundle["log"]["entries"]
    if not entries:
        fail("no entries")
    prev = entries[0]["prev_hash"]
    seq = entries[0]["seq"]
    for e in entries:
        if e["seq"] != seq:
            fail(f"entry {e['seq']}: expected seq {seq}")
        if e["prev_hash"] != prev:
            fail(f"entry {e['seq']}: prev_hash does not link")
        body = json.loads(e["entry"])
        if body["seq"] != e["seq"]:
            fail(f"entry {e['seq']}: its bytes say seq {body['seq']}")
        h = hashlib.sha256(bytes.fromhex(prev) + e["entry"].encode("utf-8")).hexdigest()
        if h != e["entry_hash"]:
            fail(f"entry {e['seq']}: entry_hash differs")
        prev = h
        seq += 1
    protected, payload, signature = bundle["log"]["checkpoint"].split(".")
    header = json.loads(b64url(protected))
    if header.get("alg") != "ES256":
        fail("checkpoint alg is not ES256")
    key = next((k for k in jwks["keys"] if k.get("kid") == header.get("kid")), None)
    if key is None:
        fail("no key for the checkpoint's kid")
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(b64url(key["x"]), "big"), int.from_bytes(b64url(key["y"]), "big"),
        ec.SECP256R1()).public_key()
    raw = b64url(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        public.verify(der, (protected + "." + payload).encode("ascii"),
                      ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        fail("checkpoint signature does not verify")
    cp = json.loads(b64url(payload))
    if cp["size"] != entries[-1]["seq"] or cp["head_hash"] != prev:
        fail("the checkpoint is not the segment's head")
    print(json.dumps({"entries": len(entries), "size": cp["size"], "head": prev,
                      "kid": header["kid"]}))


if __name__ == "__main__":
    main()
