// Cross-checks dpuaudit's JOSE output against the jose library (used by
// tests/report/interop_test.cc). Reads one JSON input file (argv[2]), writes
// one JSON result to stdout. Keys are generated here at run time.
//
// input:  {jwk, report_jws, tampered_jws, ear_jwt, now,
//          report_payload_to_sign, ear_payload_to_sign}
// output: {report_payload, report_header, ear_claims, ear_header,
//          tampered_rejected, tampered_error, jwk_thumbprint,
//          jose_jwk, jose_report_jws, jose_ear_jwt}
import { readFileSync } from 'node:fs';
import * as jose from 'jose';

const input = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const out = {};

// 1. Our JWK imports, and our ES256 JWS verifies under it.
const ourKey = await jose.importJWK(input.jwk, 'ES256');
const report = await jose.compactVerify(input.report_jws, ourKey, {
  algorithms: ['ES256'],
});
out.report_payload = new TextDecoder().decode(report.payload);
out.report_header = report.protectedHeader;
out.jwk_thumbprint = await jose.calculateJwkThumbprint(input.jwk, 'sha256');

// 2. Our EAR is a valid JWT (signature, typ, exp checked by jose).
const ear = await jose.jwtVerify(input.ear_jwt, ourKey, {
  algorithms: ['ES256'],
  typ: 'JWT',
  currentDate: new Date(input.now * 1000),
});
out.ear_claims = ear.payload;
out.ear_header = ear.protectedHeader;

// 3. jose agrees that a tampered JWS is invalid.
try {
  await jose.compactVerify(input.tampered_jws, ourKey, {
    algorithms: ['ES256'],
  });
  out.tampered_rejected = false;
} catch (e) {
  out.tampered_rejected = true;
  out.tampered_error = e.code;
}

// 4. jose signs; dpuaudit must verify.
const { publicKey, privateKey } = await jose.generateKeyPair('ES256');
out.jose_jwk = await jose.exportJWK(publicKey);
out.jose_report_jws = await new jose.CompactSign(
  new TextEncoder().encode(input.report_payload_to_sign))
  .setProtectedHeader({ alg: 'ES256', typ: 'dpuaudit-report+jws',
                        kid: 'jose-node' })
  .sign(privateKey);
out.jose_ear_jwt = await new jose.SignJWT(JSON.parse(input.ear_payload_to_sign))
  .setProtectedHeader({ alg: 'ES256', typ: 'JWT', kid: 'jose-verifier' })
  .sign(privateKey);

process.stdout.write(JSON.stringify(out));
