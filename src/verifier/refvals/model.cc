#include "verifier/refvals/model.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "bluefield/bfb.h"
#include "common/bytes.h"
#include "common/strict_json.h"
#include "common/utf.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;
using strict_json::Index;
using strict_json::ObjectReader;
using strict_json::Quote;

// Limits on one manifest (far above any real BFB release set; they bound
// memory and time for hostile input).
constexpr size_t kMaxManifestBytes = 16u << 20;
constexpr int kMaxJsonDepth = 16;
constexpr size_t kMaxReleases = 10000;
constexpr size_t kMaxValues = 4096;
constexpr size_t kMaxPsids = 256;
constexpr size_t kMaxUpgradeFrom = 256;
constexpr size_t kMaxCompatibleWith = 256;
constexpr size_t kMaxHistory = 1024;
constexpr size_t kMaxLabel = 128;
constexpr size_t kMaxPsid = 64;
constexpr size_t kMaxVersion = 256;
constexpr size_t kMaxBy = 128;
constexpr size_t kMaxReason = 1024;
constexpr size_t kSha384Hex = 96;
constexpr size_t kSha512Hex = 128;

// Components matched by exact version string; all others by sha384.
constexpr std::array<std::string_view, 5> kVersionComponents = {
    "atf", "uefi", "bsp", "os", "nic-fw"};
constexpr std::array<std::string_view, 4> kOsArtefactComponents = {
    "os:kernel", "os:initrd", "os:shim", "os:grub"};

Status Invalid(std::string message) {
  return InvalidArgumentError(std::move(message));
}

bool IsVersionComponent(std::string_view c) {
  return std::find(kVersionComponents.begin(), kVersionComponents.end(), c) !=
         kVersionComponents.end();
}

bool IsLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '+' ||
         c == ':' || c == '~' || c == '-';
}

// Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF) and
// no C0 control character or DEL, so the text survives a JSON round trip
// byte for byte and cannot forge log lines.
bool IsCleanText(std::string_view s) {
  return IsValidUtf8(s) && std::none_of(s.begin(), s.end(), [](char ch) {
           auto c = static_cast<unsigned char>(ch);
           return c < 0x20 || c == 0x7f;
         });
}

bool IsPrintableAscii(std::string_view s, bool allow_space) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c > 0x20 && c < 0x7f) || (allow_space && c == ' ');
  });
}

// --- Validation (paths name the JSON member, "releases[0].values[3]") ------

Status CheckLabel(std::string_view label, const std::string& path) {
  if (label.empty() || label.size() > kMaxLabel ||
      !std::all_of(label.begin(), label.end(), IsLabelChar)) {
    return Invalid(path + " " + Quote(label) +
                   " is not a release label (1-128 characters of "
                   "A-Z a-z 0-9 . _ + : ~ -).");
  }
  return OkStatus();
}

Status CheckApprovalAt(const RefApproval& a, const std::string& path) {
  if (a.by.empty()) return Invalid(path + ".by is empty.");
  if (a.by.size() > kMaxBy || !IsCleanText(a.by)) {
    return Invalid(path +
                   ".by is not 1-128 bytes of UTF-8 text without "
                   "control characters.");
  }
  if (a.reason.size() > kMaxReason || !IsCleanText(a.reason)) {
    return Invalid(path +
                   ".reason is not at most 1024 bytes of UTF-8 text "
                   "without control characters.");
  }
  if (a.at < 0) return Invalid(path + ".at is negative.");
  return OkStatus();
}

Status CheckValue(const RefValue& v, const std::string& path) {
  if (!IsKnownComponent(v.component)) {
    return Invalid(path + ".component " + Quote(v.component) +
                   " is not a known component.");
  }
  if (!v.version.empty() &&
      (v.version.size() > kMaxVersion || !IsPrintableAscii(v.version, true) ||
       v.version.front() == ' ' || v.version.back() == ' ')) {
    return Invalid(path + ".version " + Quote(v.version) +
                   " is not 1-256 printable ASCII characters without "
                   "leading or trailing spaces.");
  }
  if (IsTpmComponent(v.component)) {
    if (!v.version.empty() || !v.sha384.empty() || !v.sha512.empty()) {
      return Invalid(path + ": component " + Quote(v.component) +
                     " takes only a sha256.");
    }
    if (!IsLowerHexOfLength(v.sha256, 64)) {
      return Invalid(path + ".sha256 is not 64 lower-case hex digits.");
    }
    return OkStatus();
  }
  if (!v.sha256.empty()) {
    return Invalid(path + ".sha256 is only for tpm-pcr:<n> and tpm-app components.");
  }
  if (IsSpdmComponent(v.component)) {
    // The measurement digest as signed: SHA-384 or SHA-512, whichever the
    // root of trust uses; exactly one.
    if (!v.version.empty()) {
      return Invalid(path + ": component " + Quote(v.component) +
                     " takes a sha384 or a sha512, not a version.");
    }
    if (v.sha384.empty() == v.sha512.empty()) {
      return Invalid(path + ": component " + Quote(v.component) +
                     " takes exactly one of sha384 and sha512.");
    }
    if (!v.sha384.empty() && !IsLowerHexOfLength(v.sha384, kSha384Hex)) {
      return Invalid(path + ".sha384 is not 96 lower-case hex digits.");
    }
    if (!v.sha512.empty() && !IsLowerHexOfLength(v.sha512, kSha512Hex)) {
      return Invalid(path + ".sha512 is not 128 lower-case hex digits.");
    }
    return OkStatus();
  }
  if (!v.sha384.empty() && !IsLowerHexOfLength(v.sha384, kSha384Hex)) {
    return Invalid(path + ".sha384 is not 96 lower-case hex digits.");
  }
  if (!v.sha512.empty()) {
    if (!IsLowerHexOfLength(v.sha512, kSha512Hex)) {
      return Invalid(path + ".sha512 is not 128 lower-case hex digits.");
    }
    if (v.sha384.empty()) {
      return Invalid(path + ".sha512 needs a sha384 (matching is by sha384).");
    }
  }
  if (v.version.empty() && v.sha384.empty()) {
    return Invalid(path + " has neither a version nor a sha384.");
  }
  if (IsVersionComponent(v.component)) {
    if (v.version.empty()) {
      return Invalid(path + ".version is missing: component " +
                     Quote(v.component) + " is matched by version.");
    }
  } else if (v.sha384.empty()) {
    return Invalid(path + ".sha384 is missing: component " +
                   Quote(v.component) + " is matched by sha384.");
  }
  return OkStatus();
}

Status CheckRelease(const RefRelease& r, const std::string& path) {
  DPA_RETURN_IF_ERROR(CheckLabel(r.release, path + ".release"));
  std::optional<std::string> canonical = CanonicalModel(r.model);
  if (!canonical || *canonical != r.model) {
    return Invalid(path + ".model " + Quote(r.model) +
                   " is not a canonical model (BlueField-2 or BlueField-3).");
  }
  if (r.psids.size() > kMaxPsids) {
    return Invalid(path + ".psids has more than " + std::to_string(kMaxPsids) +
                   " entries.");
  }
  std::set<std::string_view> psids;
  for (size_t i = 0; i < r.psids.size(); ++i) {
    const std::string& p = r.psids[i];
    std::string ppath = Index(path + ".psids", i);
    if (p.empty() || p.size() > kMaxPsid || !IsPrintableAscii(p, false)) {
      return Invalid(ppath + " " + Quote(p) +
                     " is not 1-64 printable non-space ASCII characters.");
    }
    if (!psids.insert(p).second) {
      return Invalid(ppath + " " + Quote(p) + " is listed twice.");
    }
  }
  if (r.values.empty()) return Invalid(path + ".values is empty.");
  if (r.values.size() > kMaxValues) {
    return Invalid(path + ".values has more than " +
                   std::to_string(kMaxValues) + " entries.");
  }
  std::map<std::tuple<std::string_view, std::string_view, std::string_view>,
           size_t>
      seen_values;
  for (size_t i = 0; i < r.values.size(); ++i) {
    const RefValue& v = r.values[i];
    std::string vpath = Index(path + ".values", i);
    DPA_RETURN_IF_ERROR(CheckValue(v, vpath));
    auto [it, inserted] = seen_values.emplace(
        std::tuple<std::string_view, std::string_view, std::string_view>(
            v.component, v.version, v.sha256.empty() ? v.sha384 : v.sha256),
        i);
    if (!inserted) {
      return Invalid(vpath + " repeats values[" + std::to_string(it->second) +
                     "] (same component, version and digest).");
    }
  }
  if (r.upgrade_from.size() > kMaxUpgradeFrom) {
    return Invalid(path + ".upgrade_from has more than " +
                   std::to_string(kMaxUpgradeFrom) + " entries.");
  }
  std::set<std::string_view> from;
  for (size_t i = 0; i < r.upgrade_from.size(); ++i) {
    std::string upath = Index(path + ".upgrade_from", i);
    DPA_RETURN_IF_ERROR(CheckLabel(r.upgrade_from[i], upath));
    if (r.upgrade_from[i] == r.release) {
      return Invalid(upath + " names the release itself.");
    }
    if (!from.insert(r.upgrade_from[i]).second) {
      return Invalid(upath + " " + Quote(r.upgrade_from[i]) +
                     " is listed twice.");
    }
  }
  if (r.compatible_with.size() > kMaxCompatibleWith) {
    return Invalid(path + ".compatible_with has more than " +
                   std::to_string(kMaxCompatibleWith) + " entries.");
  }
  std::set<std::string_view> compatible;
  for (size_t i = 0; i < r.compatible_with.size(); ++i) {
    std::string cpath = Index(path + ".compatible_with", i);
    DPA_RETURN_IF_ERROR(CheckLabel(r.compatible_with[i], cpath));
    if (r.compatible_with[i] == r.release) {
      return Invalid(cpath + " names the release itself.");
    }
    if (!compatible.insert(r.compatible_with[i]).second) {
      return Invalid(cpath + " " + Quote(r.compatible_with[i]) +
                     " is listed twice.");
    }
  }
  if (r.expires_at && *r.expires_at <= 0) {
    return Invalid(path + ".expires_at must be a positive Unix time.");
  }
  if (r.created_at < 0) return Invalid(path + ".created_at is negative.");
  if (r.history.empty()) {
    return Invalid(path +
                   ".history is empty (the first record is the import).");
  }
  if (r.history.size() > kMaxHistory) {
    return Invalid(path + ".history has more than " +
                   std::to_string(kMaxHistory) + " records.");
  }
  for (size_t i = 0; i < r.history.size(); ++i) {
    std::string hpath = Index(path + ".history", i);
    DPA_RETURN_IF_ERROR(CheckApprovalAt(r.history[i], hpath));
    if (i > 0 &&
        !RefTransitionAllowed(r.history[i - 1].state, r.history[i].state)) {
      return Invalid(hpath + " moves " +
                     std::string(RefStateName(r.history[i - 1].state)) +
                     " -> " + std::string(RefStateName(r.history[i].state)) +
                     ", which the lifecycle does not allow.");
    }
  }
  if (r.history.back().state != r.state) {
    return Invalid(path + ".state " + Quote(RefStateName(r.state)) +
                   " is not the state of the last history record (" +
                   std::string(RefStateName(r.history.back().state)) + ").");
  }
  return OkStatus();
}

// --- JSON reading ------------------------------------------------------------

StatusOr<std::vector<std::string>> ReadStrings(ObjectReader& o,
                                               std::string_view key,
                                               size_t max) {
  DPA_ASSIGN_OR_RETURN(const json* arr, o.Array(key));
  std::string path = o.PathOf(key);
  if (arr->size() > max) {
    return Invalid(path + " has more than " + std::to_string(max) +
                   " entries.");
  }
  std::vector<std::string> out;
  out.reserve(arr->size());
  for (size_t i = 0; i < arr->size(); ++i) {
    const json& e = (*arr)[i];
    if (!e.is_string()) return Invalid(Index(path, i) + " must be a string.");
    out.push_back(e.get<std::string>());
  }
  return out;
}

StatusOr<RefState> ReadState(ObjectReader& o, std::string_view key) {
  DPA_ASSIGN_OR_RETURN(std::string s, o.String(key));
  std::optional<RefState> state = ParseRefState(s);
  if (!state) {
    return Invalid(o.PathOf(key) + " " + Quote(s) +
                   " is not one of pending, active, obsolete, revoked.");
  }
  return *state;
}

// A present optional string member must not be "".
StatusOr<std::string> ReadNonEmptyOptional(ObjectReader& o,
                                           std::string_view key) {
  bool present = false;
  DPA_ASSIGN_OR_RETURN(std::string s, o.OptionalString(key, &present));
  if (present && s.empty()) return Invalid(o.PathOf(key) + " is empty.");
  return s;
}

StatusOr<RefValue> ReadValue(const json& j, const std::string& path) {
  DPA_ASSIGN_OR_RETURN(ObjectReader o, ObjectReader::New(j, path));
  RefValue v;
  DPA_ASSIGN_OR_RETURN(v.component, o.String("component"));
  DPA_ASSIGN_OR_RETURN(v.version, ReadNonEmptyOptional(o, "version"));
  DPA_ASSIGN_OR_RETURN(v.sha384, ReadNonEmptyOptional(o, "sha384"));
  DPA_ASSIGN_OR_RETURN(v.sha512, ReadNonEmptyOptional(o, "sha512"));
  DPA_ASSIGN_OR_RETURN(v.sha256, ReadNonEmptyOptional(o, "sha256"));
  DPA_RETURN_IF_ERROR(o.Finish());
  return v;
}

StatusOr<RefApproval> ReadHistoryRecord(const json& j,
                                        const std::string& path) {
  DPA_ASSIGN_OR_RETURN(ObjectReader o, ObjectReader::New(j, path));
  RefApproval a;
  DPA_ASSIGN_OR_RETURN(a.state, ReadState(o, "state"));
  DPA_ASSIGN_OR_RETURN(a.by, o.String("by"));
  DPA_ASSIGN_OR_RETURN(a.at, o.Int64("at"));
  bool present = false;
  DPA_ASSIGN_OR_RETURN(a.reason, o.OptionalString("reason", &present));
  DPA_RETURN_IF_ERROR(o.Finish());
  return a;
}

StatusOr<RefRelease> ReadRelease(const json& j, const std::string& path,
                                 int64_t now) {
  DPA_ASSIGN_OR_RETURN(ObjectReader o, ObjectReader::New(j, path));
  RefRelease r;
  DPA_ASSIGN_OR_RETURN(r.release, o.String("release"));
  DPA_RETURN_IF_ERROR(CheckLabel(r.release, o.PathOf("release")));
  DPA_ASSIGN_OR_RETURN(std::string model, o.String("model"));
  std::optional<std::string> canonical = CanonicalModel(model);
  if (!canonical) {
    return Invalid(o.PathOf("model") + " " + Quote(model) +
                   " is not a known model (BlueField-2 or BlueField-3).");
  }
  r.model = *canonical;
  if (o.Has("psids")) {
    DPA_ASSIGN_OR_RETURN(r.psids, ReadStrings(o, "psids", kMaxPsids));
  } else {
    o.Skip("psids");
  }
  DPA_ASSIGN_OR_RETURN(r.state, ReadState(o, "state"));
  if (o.Has("expires_at")) {
    DPA_ASSIGN_OR_RETURN(int64_t t, o.Int64("expires_at"));
    r.expires_at = t;
  } else {
    o.Skip("expires_at");
  }
  if (o.Has("upgrade_from")) {
    DPA_ASSIGN_OR_RETURN(r.upgrade_from,
                         ReadStrings(o, "upgrade_from", kMaxUpgradeFrom));
  } else {
    o.Skip("upgrade_from");
  }
  if (o.Has("compatible_with")) {
    DPA_ASSIGN_OR_RETURN(r.compatible_with,
                         ReadStrings(o, "compatible_with", kMaxCompatibleWith));
  } else {
    o.Skip("compatible_with");
  }
  {
    DPA_ASSIGN_OR_RETURN(const json* values, o.Array("values"));
    if (values->size() > kMaxValues) {
      return Invalid(o.PathOf("values") + " has more than " +
                     std::to_string(kMaxValues) + " entries.");
    }
    for (size_t i = 0; i < values->size(); ++i) {
      DPA_ASSIGN_OR_RETURN(
          RefValue v, ReadValue((*values)[i], Index(o.PathOf("values"), i)));
      r.values.push_back(std::move(v));
    }
  }
  bool has_history = o.Has("history");
  if (has_history) {
    if (o.Has("approval")) {
      return Invalid(o.PathOf("approval") +
                     " must not be given together with history (an export "
                     "carries its approvals in history).");
    }
    if (!o.Has("created_at")) {
      return Invalid(o.PathOf("created_at") +
                     " is missing (required together with history).");
    }
    DPA_ASSIGN_OR_RETURN(const json* history, o.Array("history"));
    if (history->size() > kMaxHistory) {
      return Invalid(o.PathOf("history") + " has more than " +
                     std::to_string(kMaxHistory) + " records.");
    }
    for (size_t i = 0; i < history->size(); ++i) {
      DPA_ASSIGN_OR_RETURN(
          RefApproval a,
          ReadHistoryRecord((*history)[i], Index(o.PathOf("history"), i)));
      r.history.push_back(std::move(a));
    }
    DPA_ASSIGN_OR_RETURN(r.created_at, o.Int64("created_at"));
  } else {
    if (o.Has("created_at")) {
      return Invalid(o.PathOf("created_at") +
                     " is only accepted together with history.");
    }
    o.Skip("created_at");
    DPA_ASSIGN_OR_RETURN(const json* approval_json, o.Object("approval"));
    DPA_ASSIGN_OR_RETURN(
        ObjectReader a,
        ObjectReader::New(*approval_json, o.PathOf("approval")));
    RefApproval approval;
    approval.state = r.state;
    approval.at = now;
    DPA_ASSIGN_OR_RETURN(approval.by, a.String("by"));
    bool present = false;
    DPA_ASSIGN_OR_RETURN(approval.reason, a.OptionalString("reason", &present));
    DPA_RETURN_IF_ERROR(a.Finish());
    DPA_RETURN_IF_ERROR(CheckApprovalAt(approval, o.PathOf("approval")));
    r.history.push_back(std::move(approval));
    r.created_at = now;
  }
  DPA_RETURN_IF_ERROR(o.Finish());
  DPA_RETURN_IF_ERROR(CheckRelease(r, path));
  return r;
}

}  // namespace

namespace internal {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

bool PsidMatches(const RefRelease& r, std::string_view psid) {
  return r.psids.empty() ||
         std::find(r.psids.begin(), r.psids.end(), psid) != r.psids.end();
}

}  // namespace internal

// --- Lifecycle ---------------------------------------------------------------

std::string_view RefStateName(RefState s) {
  switch (s) {
    case RefState::kPending:
      return "pending";
    case RefState::kActive:
      return "active";
    case RefState::kObsolete:
      return "obsolete";
    case RefState::kRevoked:
      return "revoked";
  }
  return "revoked";  // unreachable; fail closed
}

std::optional<RefState> ParseRefState(std::string_view s) {
  if (s == "pending") return RefState::kPending;
  if (s == "active") return RefState::kActive;
  if (s == "obsolete") return RefState::kObsolete;
  if (s == "revoked") return RefState::kRevoked;
  return std::nullopt;
}

bool RefTransitionAllowed(RefState from, RefState to) {
  switch (from) {
    case RefState::kPending:
      return to == RefState::kActive || to == RefState::kRevoked;
    case RefState::kActive:
      return to == RefState::kObsolete || to == RefState::kRevoked;
    case RefState::kObsolete:
      return to == RefState::kActive || to == RefState::kRevoked;
    case RefState::kRevoked:
      return false;
  }
  return false;
}

std::optional<std::string> CanonicalModel(std::string_view model) {
  std::string m = internal::Lower(model);
  if (m == "bf3" || m == "bluefield-3" || m == "bluefield3") {
    return std::string("BlueField-3");
  }
  if (m == "bf2" || m == "bluefield-2" || m == "bluefield2") {
    return std::string("BlueField-2");
  }
  return std::nullopt;
}

bool IsTpmComponent(std::string_view component) {
  if (component == "tpm-app") return true;
  constexpr std::string_view kPcr = "tpm-pcr:";
  if (component.substr(0, kPcr.size()) != kPcr) return false;
  std::string_view n = component.substr(kPcr.size());
  if (n.empty() || n.size() > 2 || (n.size() == 2 && n[0] == '0')) return false;
  int v = 0;
  for (char c : n) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  return v <= 23;
}

bool IsSpdmComponent(std::string_view component, std::string* target, uint8_t* index) {
  for (std::string_view t : {std::string_view("irot"), std::string_view("erot")}) {
    const std::string prefix = "spdm-" + std::string(t) + ":";
    if (component.substr(0, prefix.size()) != prefix) continue;
    std::string_view n = component.substr(prefix.size());
    if (n.empty() || n.size() > 3 || n[0] == '0') return false;
    int v = 0;
    for (char c : n) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    if (v < 1 || v > 254) return false;
    if (target != nullptr) *target = std::string(t);
    if (index != nullptr) *index = static_cast<uint8_t>(v);
    return true;
  }
  return false;
}

bool IsKnownComponent(std::string_view component) {
  if (IsVersionComponent(component)) return true;
  if (IsTpmComponent(component)) return true;
  if (IsSpdmComponent(component)) return true;
  if (std::find(kOsArtefactComponents.begin(), kOsArtefactComponents.end(),
                component) != kOsArtefactComponents.end()) {
    return true;
  }
  constexpr std::string_view kBfb = "bfb:";
  if (component.substr(0, kBfb.size()) == kBfb) {
    std::string_view name = component.substr(kBfb.size());
    // "unknown-<id>" is what the parser calls an id outside the table; it
    // must never be a reference value.
    if (name.substr(0, 8) == "unknown-") return false;
    return bluefield::BfbImageIdByName(name).has_value();
  }
  return false;
}

Status ValidateRefApproval(const RefApproval& a) {
  return CheckApprovalAt(a, "approval");
}

Status ValidateRelease(const RefRelease& r) {
  return CheckRelease(r, "release");
}

StatusOr<std::vector<RefRelease>> ParseRefManifest(std::string_view json_text,
                                                   int64_t now) {
  if (json_text.size() > kMaxManifestBytes) {
    return ResourceExhaustedError("reference manifest is larger than " +
                                  std::to_string(kMaxManifestBytes) +
                                  " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(
      json doc, strict_json::ParseStrictJson(
                    AsBytes(json_text), "reference manifest", kMaxJsonDepth));
  DPA_ASSIGN_OR_RETURN(ObjectReader root, ObjectReader::New(doc, ""));
  DPA_ASSIGN_OR_RETURN(std::string schema, root.String("schema"));
  if (schema != kRefManifestSchema) {
    return Invalid("schema " + Quote(schema) + " is not \"" +
                   std::string(kRefManifestSchema) + "\".");
  }
  DPA_ASSIGN_OR_RETURN(const json* releases, root.Array("releases"));
  DPA_RETURN_IF_ERROR(root.Finish());
  if (releases->size() > kMaxReleases) {
    return Invalid("releases has more than " + std::to_string(kMaxReleases) +
                   " entries.");
  }
  std::vector<RefRelease> out;
  out.reserve(releases->size());
  std::map<std::string, size_t, std::less<>> labels;
  for (size_t i = 0; i < releases->size(); ++i) {
    std::string path = Index("releases", i);
    DPA_ASSIGN_OR_RETURN(RefRelease r, ReadRelease((*releases)[i], path, now));
    auto [it, inserted] = labels.emplace(r.release, i);
    if (!inserted) {
      return Invalid(path + ".release " + Quote(r.release) +
                     " repeats releases[" + std::to_string(it->second) + "].");
    }
    out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json RefManifestJson(const std::vector<RefRelease>& releases) {
  json list = json::array();
  for (const RefRelease& r : releases) {
    json o = json::object();
    o["release"] = r.release;
    o["model"] = r.model;
    o["psids"] = r.psids;
    o["state"] = std::string(RefStateName(r.state));
    if (r.expires_at) o["expires_at"] = *r.expires_at;
    o["upgrade_from"] = r.upgrade_from;
    o["compatible_with"] = r.compatible_with;
    json values = json::array();
    for (const RefValue& v : r.values) {
      json jv = json::object();
      jv["component"] = v.component;
      if (!v.version.empty()) jv["version"] = v.version;
      if (!v.sha384.empty()) jv["sha384"] = v.sha384;
      if (!v.sha512.empty()) jv["sha512"] = v.sha512;
      if (!v.sha256.empty()) jv["sha256"] = v.sha256;
      values.push_back(std::move(jv));
    }
    o["values"] = std::move(values);
    json history = json::array();
    for (const RefApproval& a : r.history) {
      history.push_back({{"state", std::string(RefStateName(a.state))},
                         {"by", a.by},
                         {"at", a.at},
                         {"reason", a.reason}});
    }
    o["history"] = std::move(history);
    o["created_at"] = r.created_at;
    list.push_back(std::move(o));
  }
  return json{{"schema", std::string(kRefManifestSchema)},
              {"releases", std::move(list)}};
}

std::string EffectiveState(const RefRelease& r, int64_t now) {
  if (r.state == RefState::kRevoked) return "revoked";
  if (r.expires_at && now >= *r.expires_at) return "expired";
  return std::string(RefStateName(r.state));
}

}  // namespace dpuaudit::verifier
