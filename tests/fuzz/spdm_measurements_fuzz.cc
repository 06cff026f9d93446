// Fuzz target: dpuaudit::spdm::ParseTranscript (GET_MEASUREMENTS ||
// MEASUREMENTS, src/spdm/measurements.h) with both signature sizes, and
// VerifySignedMeasurements, which must refuse every input it cannot verify
// without parsing it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "common/bytes.h"
#include "common/openssl.h"
#include "spdm/measurements.h"

namespace {

const dpuaudit::spdm::SpdmPublicKey& Key() {
  static const dpuaudit::spdm::SpdmPublicKey* key = [] {
    dpuaudit::EvpPkeyPtr pkey(EVP_EC_gen("P-384"));
    dpuaudit::X509Ptr cert(X509_new());
    X509_set_pubkey(cert.get(), pkey.get());
    auto k = dpuaudit::spdm::SpdmPublicKey::FromCertificate(cert.get());
    if (!k.ok()) std::abort();
    return new dpuaudit::spdm::SpdmPublicKey(std::move(k).value());
  }();
  return *key;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dpuaudit::ByteView in(data, data == nullptr ? 0 : size);
  for (size_t sig : {size_t{64}, size_t{96}}) {
    auto t = dpuaudit::spdm::ParseTranscript(in, sig);
    if (t.ok()) {
      if (t->signed_size > in.size()) std::abort();
      for (const auto& b : t->response.blocks) {
        if (b.index == 0 || b.index == 0xFF) std::abort();
        if (b.dmtf && b.dmtf->value.size() + 3 != b.measurement.size()) std::abort();
      }
    } else if (t.status().message().empty()) {
      std::abort();
    }
  }
  auto v = dpuaudit::spdm::VerifySignedMeasurements(
      in, Key(), dpuaudit::spdm::SigningAlgorithm::kEcdsaP384,
      dpuaudit::spdm::HashingAlgorithm::kSha384, dpuaudit::Bytes(32, 0));
  if (v.ok()) std::abort();  // no input is signed by a key made just now
  return 0;
}
