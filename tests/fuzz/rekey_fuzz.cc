// Fuzzes the re-key request parser (report/rekey.h). The input is used as a
// whole request (refused unless it verifies, which random bytes never do),
// as the payload of a request signed with the fixed current key, so the
// strict payload parse and VerifyNewKey after the signature check are
// reached, and directly as a payload (ParseRekeyPayload). Properties: no
// crash; an accepted request has node_id == kid and a 22-64 character jti;
// a new key that VerifyNewKey accepts differs from the current key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "common/crypto.h"
#include "report/jws.h"
#include "report/rekey.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  static const EcPrivateKey* key = new EcPrivateKey(*EcPrivateKey::Generate());
  static const Signer* signer = Es256Signer::New(*key)->release();
  static const Verifier* verifier = Es256Verifier::New(key->public_key())->release();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)report::VerifyRekeyRequest(text, *verifier);
  (void)report::ParseRekeyPayload(ByteView(data, size), "node-a");
  report::JwsHeader header;
  header.kid = "node-a";
  header.typ = std::string(report::kRekeyTyp);
  auto jws = report::SignCompact(ByteView(data, size), *signer, header);
  if (!jws.ok()) return 0;
  auto r = report::VerifyRekeyRequest(*jws, *verifier);
  if (!r.ok()) return 0;
  if (r->node_id != "node-a" || r->jti.size() < 22 || r->jti.size() > 64) std::abort();
  auto fresh = report::VerifyNewKey(*r, key->public_key());
  if (fresh.ok() && *fresh == key->public_key()) std::abort();
  return 0;
}
