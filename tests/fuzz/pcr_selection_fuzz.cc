// Fuzz target: attest::PcrSelection::Parse (the tpm2-tools "sha256:0,1+sha1:7"
// syntax, with our "a-b" ranges and "all"), which the agent applies to the
// "pcr_selection" of a verifier's challenge, and MarshalPcrSelection.
// Invariants: an accepted selection is non-empty, every bank a supported
// hash with PCRs in [0, 23]; ToString is canonical (it parses back to an
// equal selection and is a fixed point); a selection covers itself; Covers
// agrees with set inclusion against the policy default (sha256 0-15); the
// marshalled TPML_PCR_SELECTION decodes (Tss2_MU) to the same banks; errors
// are INVALID_ARGUMENT with a message.
#include <tss2/tss2_mu.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

#include "attest/tpm_structs.h"
#include "attest/tpm_types.h"

namespace {

using namespace dpuaudit;

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data),
                        data == nullptr ? 0 : size);
  auto sel = attest::PcrSelection::Parse(text);
  if (!sel.ok()) {
    Check(sel.status().code() == StatusCode::kInvalidArgument &&
          !sel.status().message().empty());
    return 0;
  }
  Check(!sel->banks().empty());
  for (const auto& [alg, pcrs] : sel->banks()) {
    Check(attest::HashAlgDigestSize(alg).has_value() && !pcrs.empty());
    Check(*pcrs.rbegin() <= attest::kMaxPcrIndex);
  }
  std::string canonical = sel->ToString();
  auto again = attest::PcrSelection::Parse(canonical);
  Check(again.ok() && *again == *sel && again->ToString() == canonical);
  Check(sel->Covers(*sel));
  auto created = attest::PcrSelection::Create(sel->banks());
  Check(created.ok() && *created == *sel);

  const attest::PcrSelection policy = attest::PcrSelection::DefaultSha256();
  auto sha256 = sel->banks().find(attest::kTpmAlgSha256);
  bool covers_default = sha256 != sel->banks().end();
  for (uint32_t i = 0; covers_default && i < 16; ++i) {
    covers_default = sha256->second.count(i) != 0;
  }
  Check(sel->Covers(policy) == covers_default);

  Bytes marshalled = attest::MarshalPcrSelection(*sel);
  TPML_PCR_SELECTION list{};
  size_t offset = 0;
  Check(Tss2_MU_TPML_PCR_SELECTION_Unmarshal(marshalled.data(),
                                             marshalled.size(), &offset,
                                             &list) == TSS2_RC_SUCCESS &&
        offset == marshalled.size());
  std::map<uint16_t, std::set<uint32_t>> decoded;
  for (uint32_t i = 0; i < list.count; ++i) {
    const TPMS_PCR_SELECTION& s = list.pcrSelections[i];
    for (uint32_t pcr = 0; pcr < 8u * s.sizeofSelect; ++pcr) {
      if (s.pcrSelect[pcr / 8] & (1u << (pcr % 8))) decoded[s.hash].insert(pcr);
    }
  }
  Check(decoded == sel->banks());
  return 0;
}
