// Fuzzes VerifyChallengeProof (report/challenge_proof.h). The input is used
// twice: as a whole proof (refused unless it verifies, which random bytes
// never do), and as the payload of a proof signed with a fixed key, so the
// payload parse after the signature check is reached. Properties: no crash;
// an accepted proof has node_id == kid, a 22-64 character jti, and
// re-signing its fields gives a proof that verifies to the same node_id and
// iat.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "common/crypto.h"
#include "report/challenge_proof.h"
#include "report/jws.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  static const EcPrivateKey* key = new EcPrivateKey(*EcPrivateKey::Generate());
  static const Signer* signer = Es256Signer::New(*key)->release();
  static const Verifier* verifier =
      Es256Verifier::New(key->public_key())->release();
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)report::VerifyChallengeProof(text, *verifier);
  report::JwsHeader header;
  header.kid = "node-a";
  header.typ = std::string(report::kChallengeProofTyp);
  auto jws = report::SignCompact(ByteView(data, size), *signer, header);
  if (!jws.ok()) return 0;
  auto p = report::VerifyChallengeProof(*jws, *verifier);
  if (!p.ok()) return 0;
  if (p->node_id != "node-a" || p->jti.size() < 22 || p->jti.size() > 64)
    std::abort();
  auto again = report::SignChallengeProof(p->node_id, p->iat, *signer);
  if (!again.ok()) std::abort();
  auto q = report::VerifyChallengeProof(*again, *verifier);
  if (!q.ok() || q->node_id != p->node_id || q->iat != p->iat) std::abort();
  return 0;
}
