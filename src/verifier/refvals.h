// Reference values for firmware and boot-chain appraisal (issue 4,
// docs/bluefield.md#releases): what firmware each device model / PSID may run,
// grouped in releases with a lifecycle.
//
// Lifecycle of a release (all its values move together):
//   pending -> active -> obsolete -> revoked
//   pending -> revoked, active -> revoked, obsolete -> active (re-instated)
// revoked is terminal. Every transition appends an approval record (who,
// when, why); a release also has an optional expiry, after which its values
// match as "expired" (never as active), allowed upgrade edges
// (`upgrade_from`: the releases a node may move from to this one), and the
// releases an administrator declared compatible with it (`compatible_with`:
// whose images may run together with this release's in one boot stream).
//
// Components a value may name (IsKnownComponent):
//   "atf" "uefi" "bsp" "os"          bfver versions (exact strings)
//   "nic-fw"                          flint FW Version (per PSID)
//   "bfb:<image name>"                a boot-stream image digest
//                                     (bluefield::BfbImageTypes names)
//   "os:kernel" "os:initrd" "os:shim" "os:grub"   OS boot artefact digests
//   "tpm-pcr:<0..23>"                 a quoted sha256 PCR value (issue 5)
//   "tpm-app"                         a UEFI boot application's sha256
//                                     (EV_EFI_BOOT_SERVICES_APPLICATION)
// A value has a version, a sha384 (and optional sha512), or both; the tpm
// components have exactly a sha256 instead.
//
// Manifest JSON (docs/refvals-schema.md), schema "dpuaudit-refvals/1":
// {"schema": "dpuaudit-refvals/1",
//  "releases": [{"release": "bf-bundle-2.9.1-40", "model": "BlueField-3",
//                "psids": ["MT_0000000884"],   // optional; [] = any PSID
//                "state": "pending",
//                "approval": {"by": "alice", "reason": "Q4 rollout"},
//                "expires_at": 1798761600,       // optional, unix s
//                "upgrade_from": ["bf-bundle-2.9.0-90"],  // optional
//                "compatible_with": ["bf-fw-hotfix-1"],   // optional
//                "values": [{"component": "nic-fw", "version": "32.43.1008"},
//                           {"component": "bfb:bl31", "sha384": "<96 hex>"}],
//                "history": [...], "created_at": N   // export only; accepted
//               }]}
//
// Guarantees: every type here is validated once (ParseRefManifest,
// ValidateRelease): release labels 1-128 chars of [A-Za-z0-9._+:~-]; model
// canonicalised by CanonicalModel; psids 1-64 printable non-space chars;
// unknown members, duplicate keys, unknown components, hex that is not
// lower-case of the right length, a value with neither version nor digest,
// duplicate (component, version, digest) values, an approval without "by"
// are INVALID_ARGUMENT naming the JSON path
// ("releases[0].values[3].sha384 is not 96 lower-case hex digits.").
// Does not: fetch or verify vendor signatures on manifests (CoRIM import is
// a later issue); the admin who imports is trusted.
#ifndef DPUAUDIT_VERIFIER_REFVALS_H_
#define DPUAUDIT_VERIFIER_REFVALS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/finding.h"
#include "common/status.h"

namespace dpuaudit::verifier {

inline constexpr std::string_view kRefManifestSchema = "dpuaudit-refvals/1";

enum class RefState { kPending, kActive, kObsolete, kRevoked };
std::string_view RefStateName(RefState s);  // "pending" | "active" | ...
std::optional<RefState> ParseRefState(std::string_view s);
bool RefTransitionAllowed(RefState from, RefState to);

// "BF3", "bf3", "BlueField-3", "BlueField3" -> "BlueField-3" (same for 2);
// nullopt for anything else.
std::optional<std::string> CanonicalModel(std::string_view model);

bool IsKnownComponent(std::string_view component);
// "tpm-pcr:<n>" / "tpm-app": matched by sha256.
bool IsTpmComponent(std::string_view component);

struct RefApproval {
  RefState state = RefState::kPending;  // the state this record moved to
  std::string by;
  int64_t at = 0;
  std::string reason;
  bool operator==(const RefApproval&) const = default;
};

struct RefValue {
  std::string component;  // see above
  std::string version;    // "" when digest-only
  std::string sha384;     // lower-case hex, "" when version-only
  std::string sha512;     // optional
  std::string sha256;     // tpm-pcr:N and tpm-app only (and required there)
  bool operator==(const RefValue&) const = default;
};

struct RefRelease {
  std::string release;
  std::string model;               // canonical
  std::vector<std::string> psids;  // empty = any PSID of the model
  RefState state = RefState::kPending;
  std::vector<RefValue> values;
  std::vector<std::string> upgrade_from;
  // Releases whose values may be combined with this release's within one
  // unit (boot stream, Arm firmware, OS boot chain); see "Coherence" below.
  // Labels need not be known releases.
  std::vector<std::string> compatible_with;
  std::optional<int64_t> expires_at;
  std::vector<RefApproval> history;  // oldest first; [0] is the import
  int64_t created_at = 0;
  bool operator==(const RefRelease&) const = default;
};

Status ValidateRelease(const RefRelease& r);
// One approval record: `by` 1-128 bytes and `reason` at most 1024 bytes of
// valid UTF-8 without control characters; `at` >= 0. (Used by
// ValidateRelease for every history record and by Store::TransitionRelease.)
Status ValidateRefApproval(const RefApproval& a);

// Parses a manifest. When a release has no "history" (an import), `now`
// fills created_at and the time of the first history record, which is built
// from its "approval" ({"by", "reason"}) and its "state".
StatusOr<std::vector<RefRelease>> ParseRefManifest(std::string_view json_text,
                                                   int64_t now);
// Canonical manifest of the given releases (with history and created_at),
// which ParseRefManifest accepts back unchanged.
nlohmann::json RefManifestJson(const std::vector<RefRelease>& releases);

// The lifecycle state a value matches as, at time `now`:
// "active" | "pending" | "obsolete" | "revoked" | "expired".
std::string EffectiveState(const RefRelease& r, int64_t now);

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

// An index over releases for matching; cheap to query, immutable.
class RefIndex {
 public:
  RefIndex() = default;
  explicit RefIndex(std::vector<RefRelease> releases);
  const std::vector<RefRelease>& releases() const { return releases_; }
  // Releases of `model` (and matching `psid` when they list PSIDs) having a
  // value with this component and exact version / sha384.
  std::vector<const RefRelease*> FindVersion(std::string_view model,
                                             std::string_view psid,
                                             std::string_view component,
                                             std::string_view version) const;
  std::vector<const RefRelease*> FindDigest(std::string_view model,
                                            std::string_view psid,
                                            std::string_view component,
                                            std::string_view sha384) const;
  const RefRelease* Find(std::string_view release) const;

 private:
  std::vector<RefRelease> releases_;
  std::map<std::string, size_t, std::less<>> by_label_;
  // "<component>\n<version or sha384>" -> indices into releases_ (each
  // release once, ascending).
  std::map<std::string, std::vector<size_t>, std::less<>> by_version_;
  std::map<std::string, std::vector<size_t>, std::less<>> by_digest_;
};

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
Finding AppraiseTpmReferenceValues(const TpmFacts& facts, const RefIndex& index,
                                   int64_t now);

std::vector<Finding> AppraiseReferenceValues(const FirmwareFacts& facts,
                                             const RefIndex& index,
                                             int64_t now);

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

#endif  // DPUAUDIT_VERIFIER_REFVALS_H_
