// Fuzzes the auditor's parsers (issue 16): ParseBundle (then VerifyBundle,
// which must fail cleanly without a trusted key), ParseAuditEntry and
// ParseAppraisalContext. Properties: what parses re-serialises to the same
// bytes (entries and contexts are canonical) or the same bundle, and nothing
// verifies without a pinned key.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/strict_json.h"
#include "verifier/appraisal_context.h"
#include "verifier/audit_chain.h"
#include "verifier/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dpuaudit;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto e = verifier::ParseAuditEntry(text); e.ok()) {
    if (verifier::CanonicalAuditEntry(*e) != text) std::abort();
  }
  if (auto c = verifier::ParseAppraisalContext(text); c.ok()) {
    if (verifier::AppraisalContextJson(*c) != text) std::abort();
  }
  auto b = verifier::ParseBundle(text);
  if (!b.ok()) return 0;
  std::string again = strict_json::DumpJson(verifier::BundleJson(*b));
  auto b2 = verifier::ParseBundle(again);
  if (!b2.ok() || strict_json::DumpJson(verifier::BundleJson(*b2)) != again) std::abort();
  verifier::BundleVerdict v = verifier::VerifyBundle(*b, report::TrustedKeys());
  if (v.verified && !b->entries.empty()) std::abort();  // nothing is trusted
  return 0;
}
