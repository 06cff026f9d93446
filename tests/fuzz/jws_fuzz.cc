// Fuzzes VerifyJws (compact and flattened JSON) with a fixed pinned key, and
// PeekUnverifiedHeader. A second pass uses an accept-all verifier so that
// inputs get past the signature check, and feeds the exposed payload to the
// report and EAR parsers as VerifyReport/VerifyEar would.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "common/crypto.h"
#include "report/claims.h"
#include "report/ear.h"
#include "report/jws.h"

namespace {

using namespace dpuaudit;

class AcceptAll final : public Verifier {
 public:
  Status Verify(ByteView, ByteView) const override { return OkStatus(); }
};

const Verifier& PinnedVerifier() {
  // Generated once per process: no key material is committed.
  static const std::unique_ptr<Es256Verifier> verifier = [] {
    auto key = EcPrivateKey::Generate();
    if (!key.ok()) std::abort();
    auto v = Es256Verifier::New(key->public_key());
    if (!v.ok()) std::abort();
    return std::move(v).value();
  }();
  return *verifier;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // A random input verifying under a fresh key would be a forgery.
  if (report::VerifyJws(input, PinnedVerifier()).ok()) std::abort();
  (void)report::PeekUnverifiedHeader(input);
  AcceptAll accept_all;
  auto v = report::VerifyJws(input, accept_all, report::kAlgEs256, 1 << 20);
  if (v.ok()) {
    if (v->alg() != "ES256") std::abort();  // alg pinning must hold
    (void)report::ParseClaims(v->payload());
    (void)report::ParseEar(v->payload());
  }
  return 0;
}
