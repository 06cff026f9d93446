// Independent JOSE check of an audit bundle (tests/integration/bundle_test.cc):
// with npm's jose, every report JWS verifies under the node key its
// appraisal context pins, and every EAR under the verifier JWKS.
// usage: node bundle_jose.mjs BUNDLE.json JWKS.json
// prints {"reports_verified": N, "ears_verified": M, "report_typ": T}
import { readFileSync } from 'node:fs';
import * as jose from 'jose';

const bundle = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const jwks = jose.createLocalJWKSet(JSON.parse(readFileSync(process.argv[3], 'utf8')));
const out = { reports_verified: 0, ears_verified: 0, report_typ: '' };
const keyOf = new Map();
for (const r of bundle.results) {
  const ctx = JSON.parse(r.context);
  keyOf.set(r.report_sha256, ctx.node.public_key_pem);
  const ear = await jose.jwtVerify(r.ear, jwks, {
    algorithms: ['ES256'], typ: 'JWT', currentDate: new Date(r.created_at * 1000),
  });
  if (ear.payload.dpuaudit.decision !== r.decision) throw new Error('decision differs');
  out.ears_verified++;
}
for (const r of bundle.reports) {
  if (!r.accepted || r.jws === '') continue;
  const key = await jose.importSPKI(keyOf.get(r.sha256), 'ES256');
  const v = await jose.compactVerify(r.jws, key, { algorithms: ['ES256'] });
  out.report_typ = v.protectedHeader.typ;
  out.reports_verified++;
}
console.log(JSON.stringify(out));
