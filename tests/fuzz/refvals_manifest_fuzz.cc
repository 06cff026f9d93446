// Fuzz target: ParseRefManifest on arbitrary bytes. Must never crash, throw
// or abort on input; an accepted manifest must uphold the invariants below
// (a violation calls abort(), which the fuzzer reports as a crash):
//  - every release passes ValidateRelease;
//  - RefManifestJson of the result parses back (at another `now`) to an
//    equal result, and exporting that again gives the same JSON;
//  - appraisal over the parsed releases yields one finding per rule, and an
//    unknown or failing finding always has a reason.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "verifier/refvals/appraisal.h"
#include "verifier/refvals/index.h"
#include "verifier/refvals/model.h"

namespace {

using dpuaudit::Verdict;
using dpuaudit::verifier::AppraiseReferenceValues;
using dpuaudit::verifier::FirmwareFacts;
using dpuaudit::verifier::ParseRefManifest;
using dpuaudit::verifier::RefIndex;
using dpuaudit::verifier::RefManifestJson;
using dpuaudit::verifier::RefRelease;
using dpuaudit::verifier::ValidateRelease;

constexpr int64_t kNow = 1'800'000'000;

const FirmwareFacts& Facts() {
  static const auto* kFacts = [] {
    auto* f = new FirmwareFacts;
    f->model = "BlueField-3";
    f->psid = "MT_0000000884";
    f->atf = "v2.2(release):4.9.1-21-gfc25b08d9";
    f->uefi = "4.9.1-36-g0c3239837a";
    f->bsp = "4.9.1.13442";
    f->os_release = "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod";
    f->nic_fw = "32.43.1008";
    f->boot_stream =
        std::vector<FirmwareFacts::Image>{{"bl31", std::string(96, 'a'), 0x18}};
    f->os_artefacts = std::vector<FirmwareFacts::Artefact>{
        {"kernel", "/boot/vmlinuz", std::string(96, 'b')}};
    return f;
  }();
  return *kFacts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = ParseRefManifest(text, kNow);
  if (!parsed.ok()) {
    if (parsed.status().message().empty()) std::abort();
    return 0;
  }
  for (const RefRelease& r : *parsed) {
    if (!ValidateRelease(r).ok()) std::abort();
  }
  nlohmann::json exported = RefManifestJson(*parsed);
  std::string dumped = exported.dump();
  auto again = ParseRefManifest(dumped, kNow + 12345);
  if (!again.ok()) std::abort();
  if (*again != *parsed) std::abort();
  if (RefManifestJson(*again) != exported) std::abort();

  RefIndex index(*parsed);
  auto findings = AppraiseReferenceValues(Facts(), index, kNow);
  if (findings.size() != 5) std::abort();
  for (const auto& f : findings) {
    if (f.verdict != Verdict::kPass && f.reason.empty()) std::abort();
    if (f.verdict == Verdict::kPass && f.observed != "active") std::abort();
  }
  return 0;
}
