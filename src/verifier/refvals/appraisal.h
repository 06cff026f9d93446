// Reference values, the appraisal: the refval.* findings over what the
// verifier re-derived of a report's firmware (FirmwareFacts), the upgrade
// path, and tpm.reference_values over verified TPM evidence, each against a
// RefIndex (verifier/refvals/index.h) at a time `now`. The rules, the
// ranking of states and the coherence of one unit are stated at
// kRefObservedValues below.
#ifndef DPUAUDIT_VERIFIER_REFVALS_APPRAISAL_H_
#define DPUAUDIT_VERIFIER_REFVALS_APPRAISAL_H_

#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/finding.h"
#include "verifier/refvals/index.h"
#include "verifier/refvals/model.h"

namespace dpuaudit::verifier {

// What the verifier re-derived about one report's firmware, for appraisal.
// Each optional is empty when the source could not be read; the matching
// *_error then says why (and the finding is unknown, never pass).
struct FirmwareFacts {
  std::string model;  // canonical model of the device ("" if unknown)
  std::string psid;
  std::optional<std::string> atf, uefi, bsp, os_release;  // bfver
  std::string arm_source = "bfver";
  std::string arm_error;
  std::optional<std::string> nic_fw;  // flint FW Version
  std::string nic_source;             // "flint -d <mst> q full"
  std::string nic_error;
  struct Image {
    std::string name;    // "bl31"
    std::string sha384;  // hex
    uint64_t offset = 0;
  };
  std::optional<std::vector<Image>> boot_stream;  // primary partition
  std::string boot_stream_source;  // "boot partition /dev/mmcblk0boot1"
  std::string boot_stream_error;
  struct Artefact {
    std::string role;  // "kernel"...
    std::string path;
    std::string sha384;
  };
  std::optional<std::vector<Artefact>> os_artefacts;  // measured ones only
  std::string os_source = "os boot artefacts";
  std::string os_error;
};

// Every string of `facts` replaced by SafeText of it (common/safe_text.h):
// the versions, sources and errors come from tool output on the device.
void MakeSafe(FirmwareFacts& facts);

// Rule ids produced by AppraiseReferenceValues, in this order. Each finding's
// observed value is one of kRefObservedValues; expected is "active"; the
// reason names every component, its value, the release it matched (or that
// none did) and the approval record ("revoked by bob at 2026-..: CVE-...").
// When several releases match, the best state wins (active > pending >
// obsolete > expired > revoked); across the components of one rule the
// worst wins (unmatched and revoked worst). A source that could not be
// read gives verdict unknown with its error as the reason.
//
// Coherence (arm_firmware, boot_stream, os_boot): the matched components of
// one rule form one unit and must all come from ONE release, or from one
// compatibility set (a release R and the releases R.compatible_with names,
// same model and PSID; R's own state counts even when none of its values is
// used). The unit's state is the best over the sets that hold every matched
// component of the worst state a member contributes; never better than the
// per-component result. When no set holds them all, observed is "mixed"
// (worse than unmatched: AR4SI 96) and the reason groups the components by
// the release each matched ("release A holds bfb:bl2; release B holds
// bfb:bl31"). Not checked: coherence across rules (the Arm firmware, the
// boot stream, NIC firmware and the OS are updated separately), nor within
// tpm.reference_values.
//   refval.arm_firmware   atf + uefi + bsp from bfver
//   refval.os_release     os (the /etc/mlnx-release line bfver prints)
//   refval.nic_firmware   nic-fw for the device PSID
//   refval.boot_stream    every image of the primary boot partition, by
//                         sha384 ("bfb:<name>")
//   refval.os_boot        every measured OS artefact, by sha384 ("os:<role>")
//   refval.upgrade_path   see AppraiseUpgradePath
inline constexpr std::string_view kRefObservedValues[] = {
    "active",  "pending",   "obsolete", "expired",
    "revoked", "unmatched", "mixed"};
const std::vector<std::string_view>& RefRuleIds();

// Step 8 of the TPM appraisal (attest/quote.h): finding "tpm.reference_values"
// over verified TPM evidence only. Each quoted sha256 PCR for which some
// release of the model lists a "tpm-pcr:<n>" value, and each verified boot
// application (by its sha256), is a check like the firmware ones (best
// state per check, worst across checks). Unknown when there is nothing to
// check ("no tpm-pcr or tpm-app reference values for BlueField-3").
struct TpmFacts {
  std::string model;  // canonical, "" if unknown
  std::string psid;
  std::map<uint32_t, std::string> sha256_pcrs;  // quoted, hex
  struct App {
    std::string path;
    std::string sha256;
  };
  std::vector<App> boot_apps;  // from the VerifiedBootLog
};
inline constexpr std::string_view kTpmRefRuleId = "tpm.reference_values";
// `matched` (optional): receives the label of every release a check of the
// findings matched (the best of each check), for the EAR's collateral.
Finding AppraiseTpmReferenceValues(const TpmFacts& facts, const RefIndex& index,
                                   int64_t now,
                                   std::set<std::string>* matched = nullptr);

// "<target>.reference_values" (target "irot" or "erot") over a root of
// trust's verified SPDM measurements: each index for which some release of
// the model lists "spdm-<target>:<index>" is a check of the measurement's
// digest, by sha384 or sha512 as signed (best state per check, worst across
// checks; an index the evidence lacks, or whose value is not a 48- or
// 64-byte digest, is unmatched). Unknown when no release lists any index of the target ("no
// spdm-irot reference values for BlueField-3"): the first-seen baseline
// (verifier/spdm_appraisal.h) then judges every index.
struct SpdmFacts {
  std::string target;  // "irot" | "erot"
  std::string model;   // canonical
  std::string psid;
  std::string source;
  // index -> "<value type, 2 hex>:<value hex>" (verifier/spdm_appraisal.h)
  std::map<uint8_t, std::string> values;
};
Finding AppraiseSpdmReferenceValues(const SpdmFacts& facts, const RefIndex& index,
                                    int64_t now,
                                    std::set<std::string>* matched = nullptr);
// The indices of `target` that some release of `model` lists (those the
// reference values judge instead of the baseline).
std::set<uint8_t> SpdmReferencedIndices(const RefIndex& index, std::string_view model,
                                        std::string_view target);

std::vector<Finding> AppraiseReferenceValues(
    const FirmwareFacts& facts, const RefIndex& index, int64_t now,
    std::set<std::string>* matched = nullptr);

// The release a node runs, for upgrade edges: the best-state release that
// matches ALL of atf, uefi and bsp, or whose compatibility set does (the
// declaring release is named); "" when none does.
std::string MatchedArmRelease(const FirmwareFacts& facts, const RefIndex& index,
                              int64_t now);

// refval.upgrade_path: observed "unchanged" (same release as last time),
// "first-seen" (no previous release recorded), "allowed" (previous release
// is in the current release's upgrade_from), "not-allowed" (anything else,
// e.g. a downgrade), or unknown when the current release is "". expected is
// "unchanged|first-seen|allowed".
Finding AppraiseUpgradePath(std::string_view previous_release,
                            std::string_view current_release,
                            const RefIndex& index);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_REFVALS_APPRAISAL_H_
