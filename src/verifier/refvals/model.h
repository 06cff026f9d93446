// Reference values, the manifest model (issue 4, docs/bluefield.md#releases):
// what firmware each device model / PSID may run, grouped in releases with a
// lifecycle. The matching index is verifier/refvals/index.h; the refval.* and
// tpm.reference_values findings are verifier/refvals/appraisal.h.
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
//   "spdm-irot:<1..254>"              an SPDM measurement digest (sha384) of
//   "spdm-erot:<1..254>"              the BlueField-3 IRoT / ERoT at that
//                                     index (issue 14)
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
#ifndef DPUAUDIT_VERIFIER_REFVALS_MODEL_H_
#define DPUAUDIT_VERIFIER_REFVALS_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

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
// "spdm-irot:<n>" / "spdm-erot:<n>", n in 1..254 without leading zeros:
// matched by sha384. Sets *target ("irot"/"erot") and *index when given.
bool IsSpdmComponent(std::string_view component, std::string* target = nullptr,
                     uint8_t* index = nullptr);

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

// Shared by the parts of verifier/refvals/ (model, index, appraisal); not an
// API for other code.
namespace internal {
// ASCII upper case to lower case; every other byte unchanged.
std::string Lower(std::string_view s);
// `r` lists no PSID (any PSID of the model) or lists `psid`.
bool PsidMatches(const RefRelease& r, std::string_view psid);
}  // namespace internal

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_REFVALS_MODEL_H_
