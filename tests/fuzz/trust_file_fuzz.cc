// Fuzzes the trust file parser (report::TrustedKeys::ParseTrustFile): the
// relying party's pinned verifier keys, read from a file on disk. Property:
// a file that parses serialises to one that parses to the same keys.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "report/admission.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  auto keys = report::TrustedKeys::ParseTrustFile(ByteView(data, size));
  if (!keys.ok()) return 0;
  std::string again_text = keys->SerializeTrustFile();
  auto again = report::TrustedKeys::ParseTrustFile(AsBytes(again_text));
  if (!again.ok() || again->keys().size() != keys->keys().size()) std::abort();
  for (size_t i = 0; i < keys->keys().size(); ++i) {
    const auto& a = keys->keys()[i];
    const auto& b = again->keys()[i];
    if (a.kid != b.kid || !(a.key == b.key) || a.thumbprint != b.thumbprint ||
        a.source != b.source || a.added_at != b.added_at) {
      std::abort();
    }
  }
  return 0;
}
