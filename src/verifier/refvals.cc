#include "verifier/refvals.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "bluefield/bfb.h"
#include "common/bytes.h"
#include "common/safe_text.h"
#include "common/strict_json.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;
using strict_json::AsInt64;
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

constexpr std::string_view kRuleArm = "refval.arm_firmware";
constexpr std::string_view kRuleOs = "refval.os_release";
constexpr std::string_view kRuleNic = "refval.nic_firmware";
constexpr std::string_view kRuleBoot = "refval.boot_stream";
constexpr std::string_view kRuleOsBoot = "refval.os_boot";
constexpr std::string_view kRuleUpgrade = "refval.upgrade_path";

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

bool IsLowerHex(std::string_view s, size_t len) {
  if (s.size() != len) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

// Valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF) and
// no C0 control character or DEL, so the text survives a JSON round trip
// byte for byte and cannot forge log lines.
bool IsCleanText(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      cp = c & 0x07u;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // sequence cut short
    for (size_t k = 1; k <= n; ++k) {
      auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0u) != 0x80u) return false;
      cp = (cp << 6) | (d & 0x3fu);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

bool IsPrintableAscii(std::string_view s, bool allow_space) {
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return (c > 0x20 && c < 0x7f) || (allow_space && c == ' ');
  });
}

// An untrusted device value made safe for a human sentence: non-printable
// bytes become '?', long values are cut.
std::string Printable(std::string_view s, size_t max_chars = 128) {
  std::string out;
  for (char c : s.substr(0, std::min(s.size(), max_chars))) {
    out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  }
  if (s.size() > max_chars) out += "...";
  return out;
}

std::string Hex(uint64_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v & 0xf]);
    v >>= 4;
  } while (v != 0);
  return "0x" + out;
}

// RFC 3339 UTC ("2026-11-30T10:00:00Z"), for years 1..9999; other values
// are printed as "unix time N" (no libc call, so any int64 is safe).
std::string FormatTime(int64_t t) {
  constexpr int64_t kMin = -62135596800;  // 0001-01-01T00:00:00Z
  constexpr int64_t kMax = 253402300799;  // 9999-12-31T23:59:59Z
  if (t < kMin || t > kMax) return "unix time " + std::to_string(t);
  int64_t days = t / 86400;
  int64_t secs = t % 86400;
  if (secs < 0) {
    secs += 86400;
    days -= 1;
  }
  // Howard Hinnant's civil_from_days.
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = yoe + era * 400;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  if (m <= 2) ++y;
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                static_cast<long long>(y), static_cast<long long>(m),
                static_cast<long long>(d), static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60),
                static_cast<long long>(secs % 60));
  return buf;
}

std::string JoinStrings(const std::vector<std::string>& v,
                        std::string_view sep) {
  std::string out;
  for (const std::string& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
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
    if (!IsLowerHex(v.sha256, 64)) {
      return Invalid(path + ".sha256 is not 64 lower-case hex digits.");
    }
    return OkStatus();
  }
  if (!v.sha256.empty()) {
    return Invalid(path + ".sha256 is only for tpm-pcr:<n> and tpm-app components.");
  }
  if (!v.sha384.empty() && !IsLowerHex(v.sha384, kSha384Hex)) {
    return Invalid(path + ".sha384 is not 96 lower-case hex digits.");
  }
  if (!v.sha512.empty()) {
    if (!IsLowerHex(v.sha512, kSha512Hex)) {
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

// --- Matching ----------------------------------------------------------------

// Lower is better; kRefObservedValues order.
int RankOf(std::string_view effective) {
  for (size_t i = 0; i < std::size(kRefObservedValues); ++i) {
    if (kRefObservedValues[i] == effective) return static_cast<int>(i);
  }
  return 5;  // unmatched
}
constexpr int kRankActive = 0;
constexpr int kRankUnmatched = 5;
constexpr int kRankMixed = 6;
static_assert(std::size(kRefObservedValues) == 7);

// The best of `matches`: best effective state, then the newest, then the
// smallest label (so the choice is deterministic).
const RefRelease* Best(const std::vector<const RefRelease*>& matches,
                       int64_t now) {
  const RefRelease* best = nullptr;
  int best_rank = kRankUnmatched + 1;
  for (const RefRelease* r : matches) {
    int rank = RankOf(EffectiveState(*r, now));
    if (best == nullptr || rank < best_rank ||
        (rank == best_rank &&
         (r->created_at > best->created_at ||
          (r->created_at == best->created_at && r->release < best->release)))) {
      best = r;
      best_rank = rank;
    }
  }
  return best;
}

// "revoked by bob at 2026-11-30T10:00:00Z: CVE-2026-1234" / "expired at T".
std::string StateDetail(const RefRelease& r, int64_t now) {
  std::string effective = EffectiveState(r, now);
  if (effective == "expired") {
    return "expired at " + FormatTime(*r.expires_at) + ", was " +
           std::string(RefStateName(r.state));
  }
  if (r.history.empty()) return effective;
  const RefApproval& last = r.history.back();
  std::string out =
      effective + " by " + Printable(last.by) + " at " + FormatTime(last.at);
  if (!last.reason.empty()) out += ": " + Printable(last.reason, 256);
  return out;
}

struct Check {
  std::string component;  // "atf", "bfb:bl31"
  std::string label;      // how the reason names it, with its value
  std::string value;      // version or sha384
  bool by_digest = false;
};

struct CheckResult {
  int rank = kRankUnmatched;
  bool psid_unknown = false;  // only a PSID-restricted release could match
  std::string text;
  std::vector<const RefRelease*> matches;  // the candidates (model, PSID)
  const RefRelease* best = nullptr;        // the one `text` names
};

bool HasValue(const RefRelease& r, const Check& c) {
  return std::any_of(r.values.begin(), r.values.end(), [&](const RefValue& v) {
    return v.component == c.component &&
           (c.by_digest ? (v.sha384 == c.value || v.sha256 == c.value) : v.version == c.value);
  });
}

CheckResult RunCheck(const RefIndex& index, const std::string& model,
                     const std::string& psid, const Check& c, int64_t now) {
  CheckResult out;
  if (!IsKnownComponent(c.component)) {
    out.text = c.label +
               " is not a known component, so no reference value "
               "can match it";
    return out;
  }
  std::vector<const RefRelease*> matches =
      c.by_digest ? index.FindDigest(model, psid, c.component, c.value)
                  : index.FindVersion(model, psid, c.component, c.value);
  if (!matches.empty()) {
    const RefRelease* best = Best(matches, now);
    out.rank = RankOf(EffectiveState(*best, now));
    out.text = c.label + " matches release " + best->release + " (" +
               StateDetail(*best, now) + ")";
    if (matches.size() > 1) {
      out.text += ", the best of " + std::to_string(matches.size()) +
                  " matching releases";
    }
    out.best = best;
    out.matches = std::move(matches);
    return out;
  }
  // Nothing matched for this PSID: say whether a release for other PSIDs has
  // the value, so the reader sees why.
  std::vector<std::string> elsewhere;
  for (const RefRelease& r : index.releases()) {
    if (r.model == model && !r.psids.empty() && HasValue(r, c)) {
      elsewhere.push_back("release " + r.release + " lists it for " +
                          JoinStrings(r.psids, ", "));
    }
  }
  if (elsewhere.empty()) {
    out.text = c.label + " has no reference value for " + model;
  } else if (psid.empty()) {
    out.psid_unknown = true;
    out.text = c.label + " has a reference value only for specific PSIDs (" +
               JoinStrings(elsewhere, "; ") +
               ") and the device PSID is unknown";
  } else {
    out.text = c.label + " has no reference value for " + model + " PSID " +
               Printable(psid) + " (" + JoinStrings(elsewhere, "; ") + ")";
  }
  return out;
}

Finding Unknown(std::string_view id, std::string source, std::string reason) {
  Finding f;
  f.id = std::string(id);
  f.verdict = Verdict::kUnknown;
  f.expected = "active";
  f.source = std::move(source);
  f.reason = std::move(reason);
  return f;
}

bool PsidMatches(const RefRelease& r, std::string_view psid);

// How a rule whose components form one unit names it in its reason.
struct Unit {
  std::string_view name;   // "boot stream"
  std::string_view items;  // "images"
};
constexpr Unit kArmUnit = {"Arm firmware", "components"};
constexpr Unit kBootUnit = {"boot stream", "images"};
constexpr Unit kOsBootUnit = {"OS boot chain", "artefacts"};

// The releases R's compatibility set holds: R, then each release its
// compatible_with names that exists for the model and PSID.
std::vector<const RefRelease*> CompatibilitySet(const RefRelease& r,
                                                const RefIndex& index,
                                                const std::string& model,
                                                const std::string& psid) {
  std::vector<const RefRelease*> out = {&r};
  for (const std::string& label : r.compatible_with) {
    const RefRelease* m = index.Find(label);
    if (m != nullptr && m->model == model && PsidMatches(*m, psid) &&
        std::find(out.begin(), out.end(), m) == out.end()) {
      out.push_back(m);
    }
  }
  return out;
}

// One compatibility set that holds every check it was asked about.
struct Cover {
  const RefRelease* by = nullptr;       // whose set it is
  std::vector<const RefRelease*> from;  // per check, the member used
  int rank = kRankUnmatched;            // worst of `by` and every member used
  size_t members_used = 0;
  bool by_used = false;  // `by` itself holds one of the checks
};

// The best compatibility set holding every check (`matches`: per check its
// candidate releases, each list non-empty). Sets considered: those of the
// releases (of the model, for the PSID) that are a candidate of some check
// or declare compatible releases. Best: lowest rank, then fewest releases
// used, then a set whose own release is used, then as Best().
std::optional<Cover> BestCover(
    const std::vector<const std::vector<const RefRelease*>*>& matches,
    const RefIndex& index, const std::string& model, const std::string& psid,
    int64_t now) {
  std::set<const RefRelease*> candidates;
  for (const auto* list : matches)
    candidates.insert(list->begin(), list->end());
  std::optional<Cover> best;
  for (const RefRelease& r : index.releases()) {
    if (r.model != model || !PsidMatches(r, psid)) continue;
    if (r.compatible_with.empty() && candidates.count(&r) == 0) continue;
    std::vector<const RefRelease*> set =
        CompatibilitySet(r, index, model, psid);
    Cover c;
    c.by = &r;
    c.rank = RankOf(EffectiveState(r, now));
    bool holds_all = true;
    for (const auto* list : matches) {
      std::vector<const RefRelease*> in;
      for (const RefRelease* m : *list) {
        if (std::find(set.begin(), set.end(), m) != set.end()) in.push_back(m);
      }
      if (in.empty()) {
        holds_all = false;
        break;
      }
      const RefRelease* member = Best(in, now);
      c.rank = std::max(c.rank, RankOf(EffectiveState(*member, now)));
      c.by_used = c.by_used || member == &r;
      c.from.push_back(member);
    }
    if (!holds_all) continue;
    c.members_used =
        std::set<const RefRelease*>(c.from.begin(), c.from.end()).size();
    auto key = [](const Cover& x) {
      return std::make_tuple(x.rank, x.members_used, !x.by_used,
                             -x.by->created_at);
    };
    if (!best || key(c) < key(*best) ||
        (key(c) == key(*best) && c.by->release < best->by->release)) {
      best = std::move(c);
    }
  }
  return best;
}

// "release a holds bfb:bl2, bfb:bl2-cert; release b holds bfb:bl31": the
// components grouped by the release given for each (most components
// first, then by label).
std::string Holdings(const std::vector<const RefRelease*>& release_of,
                     const std::vector<std::string>& components) {
  std::vector<std::pair<const RefRelease*, std::vector<std::string>>> groups;
  for (size_t i = 0; i < release_of.size(); ++i) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.first == release_of[i];
    });
    if (it == groups.end()) {
      groups.push_back({release_of[i], {}});
      it = std::prev(groups.end());
    }
    it->second.push_back(Printable(components[i]));
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) {
                     if (a.second.size() != b.second.size()) {
                       return a.second.size() > b.second.size();
                     }
                     return a.first->release < b.first->release;
                   });
  std::vector<std::string> parts;
  for (const auto& [r, names] : groups) {
    parts.push_back("release " + r->release + " holds " +
                    JoinStrings(names, ", "));
  }
  return JoinStrings(parts, "; ");
}

struct Coherence {
  int rank = kRankActive;
  std::string text;  // "" when the per-component texts say it all
};

// Whether the matched components of one unit come from one release or one
// compatibility set (components no release holds are left to their own
// "unmatched" check).
Coherence CheckCoherence(const Unit& unit, const std::vector<Check>& checks,
                         const std::vector<CheckResult>& results,
                         const RefIndex& index, const std::string& model,
                         const std::string& psid, int64_t now) {
  Coherence out;
  std::vector<const std::vector<const RefRelease*>*> lists;
  std::vector<const RefRelease*> best_of;
  std::vector<std::string> components;
  for (size_t i = 0; i < checks.size(); ++i) {
    if (results[i].matches.empty()) continue;
    lists.push_back(&results[i].matches);
    best_of.push_back(results[i].best);
    components.push_back(checks[i].component);
  }
  if (lists.size() < 2) return out;
  std::string all = "all " + std::to_string(lists.size()) + " matched " +
                    std::string(unit.items);
  std::optional<Cover> cover = BestCover(lists, index, model, psid, now);
  if (!cover) {
    out.rank = kRankMixed;
    out.text = "the " + std::string(unit.name) +
               " mixes releases: no release or declared compatibility set "
               "holds " +
               all + " (" + Holdings(best_of, components) + ")";
    return out;
  }
  out.rank = cover->rank;
  // One release is the best match of every component: it holds them all
  // at the state the per-component texts already give.
  if (std::all_of(best_of.begin(), best_of.end(),
                  [&](const RefRelease* r) { return r == best_of[0]; })) {
    return out;
  }
  if (cover->members_used == 1) {
    const RefRelease& r = *cover->from[0];
    out.text = all + " come from release " + r.release + " (" +
               StateDetail(r, now) + ")";
    if (!cover->by_used) {
      out.text += ", in the compatibility set of release " +
                  cover->by->release + " (" + StateDetail(*cover->by, now) +
                  ")";
    }
  } else {
    out.text = "the " + std::string(unit.name) +
               " combines releases that release " + cover->by->release + " (" +
               StateDetail(*cover->by, now) +
               ") declares compatible: " + Holdings(cover->from, components);
  }
  return out;
}

Finding Appraise(std::string_view id, const std::string& source,
                 const std::vector<Check>& checks, const RefIndex& index,
                 const std::string& model, const std::string& psid, int64_t now,
                 const Unit* unit = nullptr) {
  int worst = kRankActive;
  bool psid_unknown = false;
  std::vector<CheckResult> results;
  for (const Check& c : checks) {
    CheckResult r = RunCheck(index, model, psid, c, now);
    worst = std::max(worst, r.rank);
    psid_unknown = psid_unknown || r.psid_unknown;
    results.push_back(std::move(r));
  }
  std::vector<std::string> texts;
  for (const CheckResult& r : results) texts.push_back(r.text);
  if (unit != nullptr) {
    Coherence coherence =
        CheckCoherence(*unit, checks, results, index, model, psid, now);
    worst = std::max(worst, coherence.rank);
    if (!coherence.text.empty()) texts.push_back(std::move(coherence.text));
  }
  std::string reason = JoinStrings(texts, "; ") + ".";
  if (psid_unknown) return Unknown(id, source, std::move(reason));
  Finding f;
  f.id = std::string(id);
  f.expected = "active";
  f.source = source;
  f.observed = std::string(kRefObservedValues[static_cast<size_t>(worst)]);
  f.verdict = worst == kRankActive ? Verdict::kPass : Verdict::kFail;
  f.reason = std::move(reason);
  return f;
}

// The reason for a source that gave nothing: its error, else which parts
// are missing.
std::string MissingReason(const std::string& error, std::string_view what) {
  if (!error.empty()) return error;
  return std::string(what);
}

std::string AbbreviatedDigest(std::string_view hex) {
  if (hex.empty()) return "(no digest)";
  if (hex.size() <= 16) return Printable(hex);
  return Printable(hex.substr(0, 16)) + "...";
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string Key(std::string_view component, std::string_view value) {
  std::string k(component);
  k.push_back('\n');
  k.append(value);
  return k;
}

bool PsidMatches(const RefRelease& r, std::string_view psid) {
  return r.psids.empty() ||
         std::find(r.psids.begin(), r.psids.end(), psid) != r.psids.end();
}

// A fact is present only with a non-empty value ("" is what a parser leaves
// when the line was absent).
bool Has(const std::optional<std::string>& v) { return v && !v->empty(); }

std::string CanonicalOrSame(std::string_view model) {
  std::optional<std::string> c = CanonicalModel(model);
  return c ? *c : std::string(model);
}

}  // namespace

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
  std::string m = Lower(model);
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

bool IsKnownComponent(std::string_view component) {
  if (IsVersionComponent(component)) return true;
  if (IsTpmComponent(component)) return true;
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

// --- RefIndex ----------------------------------------------------------------

RefIndex::RefIndex(std::vector<RefRelease> releases)
    : releases_(std::move(releases)) {
  auto add = [](std::map<std::string, std::vector<size_t>, std::less<>>& m,
                std::string key, size_t i) {
    std::vector<size_t>& v = m[std::move(key)];
    if (v.empty() || v.back() != i) v.push_back(i);
  };
  for (size_t i = 0; i < releases_.size(); ++i) {
    by_label_.emplace(releases_[i].release, i);  // the first of a label wins
    for (const RefValue& v : releases_[i].values) {
      if (!v.version.empty()) add(by_version_, Key(v.component, v.version), i);
      if (!v.sha384.empty()) add(by_digest_, Key(v.component, v.sha384), i);
      if (!v.sha256.empty()) add(by_digest_, Key(v.component, v.sha256), i);
    }
  }
}

std::vector<const RefRelease*> RefIndex::FindVersion(
    std::string_view model, std::string_view psid, std::string_view component,
    std::string_view version) const {
  std::vector<const RefRelease*> out;
  auto it = by_version_.find(Key(component, version));
  if (it == by_version_.end()) return out;
  std::string m = CanonicalOrSame(model);
  for (size_t i : it->second) {
    const RefRelease& r = releases_[i];
    if (r.model == m && PsidMatches(r, psid)) out.push_back(&r);
  }
  return out;
}

std::vector<const RefRelease*> RefIndex::FindDigest(
    std::string_view model, std::string_view psid, std::string_view component,
    std::string_view sha384) const {
  std::vector<const RefRelease*> out;
  auto it = by_digest_.find(Key(component, Lower(sha384)));
  if (it == by_digest_.end()) return out;
  std::string m = CanonicalOrSame(model);
  for (size_t i : it->second) {
    const RefRelease& r = releases_[i];
    if (r.model == m && PsidMatches(r, psid)) out.push_back(&r);
  }
  return out;
}

const RefRelease* RefIndex::Find(std::string_view release) const {
  auto it = by_label_.find(release);
  return it == by_label_.end() ? nullptr : &releases_[it->second];
}

// --- Appraisal ---------------------------------------------------------------

const std::vector<std::string_view>& RefRuleIds() {
  static const auto* kIds = new std::vector<std::string_view>{
      kRuleArm, kRuleOs, kRuleNic, kRuleBoot, kRuleOsBoot, kRuleUpgrade};
  return *kIds;
}

std::vector<Finding> AppraiseReferenceValues(const FirmwareFacts& facts,
                                             const RefIndex& index,
                                             int64_t now) {
  std::vector<Finding> out;
  std::optional<std::string> model = CanonicalModel(facts.model);
  std::string model_reason =
      facts.model.empty()
          ? "the device model is unknown, so no reference values apply."
          : "the device model " + Quote(facts.model) +
                " is not a known BlueField model, so no reference values "
                "apply.";
  const std::string& psid = facts.psid;

  // refval.arm_firmware
  {
    std::vector<std::string> missing;
    if (!Has(facts.atf)) missing.push_back("ATF");
    if (!Has(facts.uefi)) missing.push_back("UEFI");
    if (!Has(facts.bsp)) missing.push_back("BSP");
    if (!facts.arm_error.empty() || !missing.empty()) {
      out.push_back(Unknown(
          kRuleArm, facts.arm_source,
          MissingReason(facts.arm_error, "bfver reported no " +
                                             JoinStrings(missing, ", ") +
                                             " version.")));
    } else if (!model) {
      out.push_back(Unknown(kRuleArm, facts.arm_source, model_reason));
    } else {
      std::vector<Check> checks = {
          {"atf", "atf " + Printable(*facts.atf), *facts.atf, false},
          {"uefi", "uefi " + Printable(*facts.uefi), *facts.uefi, false},
          {"bsp", "bsp " + Printable(*facts.bsp), *facts.bsp, false}};
      out.push_back(Appraise(kRuleArm, facts.arm_source, checks, index, *model,
                             psid, now, &kArmUnit));
    }
  }
  // refval.os_release
  if (!facts.arm_error.empty() || !Has(facts.os_release)) {
    out.push_back(Unknown(
        kRuleOs, facts.arm_source,
        MissingReason(facts.arm_error, "bfver reported no OS release.")));
  } else if (!model) {
    out.push_back(Unknown(kRuleOs, facts.arm_source, model_reason));
  } else {
    out.push_back(Appraise(kRuleOs, facts.arm_source,
                           {{"os", "os " + Printable(*facts.os_release),
                             *facts.os_release, false}},
                           index, *model, psid, now));
  }
  // refval.nic_firmware
  if (!facts.nic_error.empty() || !Has(facts.nic_fw)) {
    out.push_back(Unknown(
        kRuleNic, facts.nic_source,
        MissingReason(facts.nic_error, "flint reported no FW Version.")));
  } else if (!model) {
    out.push_back(Unknown(kRuleNic, facts.nic_source, model_reason));
  } else {
    std::string label = "nic-fw " + Printable(*facts.nic_fw);
    if (!psid.empty()) label += " (PSID " + Printable(psid) + ")";
    out.push_back(Appraise(kRuleNic, facts.nic_source,
                           {{"nic-fw", label, *facts.nic_fw, false}}, index,
                           *model, psid, now));
  }
  // refval.boot_stream
  if (!facts.boot_stream_error.empty() || !facts.boot_stream) {
    out.push_back(Unknown(
        kRuleBoot, facts.boot_stream_source,
        MissingReason(facts.boot_stream_error,
                      "the boot stream of the primary boot partition was not "
                      "read.")));
  } else if (facts.boot_stream->empty()) {
    out.push_back(Unknown(kRuleBoot, facts.boot_stream_source,
                          "the boot stream has no images to match."));
  } else if (!model) {
    out.push_back(Unknown(kRuleBoot, facts.boot_stream_source, model_reason));
  } else {
    std::vector<Check> checks;
    for (const FirmwareFacts::Image& img : *facts.boot_stream) {
      std::string component = "bfb:" + img.name;
      checks.push_back({component,
                        Printable(component) + " sha384 " +
                            AbbreviatedDigest(img.sha384) + " at offset " +
                            Hex(img.offset),
                        Lower(img.sha384), true});
    }
    out.push_back(Appraise(kRuleBoot, facts.boot_stream_source, checks, index,
                           *model, psid, now, &kBootUnit));
  }
  // refval.os_boot
  if (!facts.os_error.empty() || !facts.os_artefacts) {
    out.push_back(Unknown(kRuleOsBoot, facts.os_source,
                          MissingReason(facts.os_error,
                                        "the OS boot artefacts were not "
                                        "measured.")));
  } else if (facts.os_artefacts->empty()) {
    out.push_back(Unknown(kRuleOsBoot, facts.os_source,
                          "no OS boot artefact was measured."));
  } else if (!model) {
    out.push_back(Unknown(kRuleOsBoot, facts.os_source, model_reason));
  } else {
    std::vector<Check> checks;
    for (const FirmwareFacts::Artefact& a : *facts.os_artefacts) {
      std::string component = "os:" + a.role;
      checks.push_back({component,
                        Printable(component) + " " + Printable(a.path) +
                            " sha384 " + AbbreviatedDigest(a.sha384),
                        Lower(a.sha384), true});
    }
    out.push_back(Appraise(kRuleOsBoot, facts.os_source, checks, index, *model,
                           psid, now, &kOsBootUnit));
  }
  return out;
}

std::string MatchedArmRelease(const FirmwareFacts& facts, const RefIndex& index,
                              int64_t now) {
  std::optional<std::string> model = CanonicalModel(facts.model);
  if (!model || !Has(facts.atf) || !Has(facts.uefi) || !Has(facts.bsp)) {
    return "";
  }
  std::vector<const RefRelease*> atf =
      index.FindVersion(*model, facts.psid, "atf", *facts.atf);
  std::vector<const RefRelease*> uefi =
      index.FindVersion(*model, facts.psid, "uefi", *facts.uefi);
  std::vector<const RefRelease*> bsp =
      index.FindVersion(*model, facts.psid, "bsp", *facts.bsp);
  if (atf.empty() || uefi.empty() || bsp.empty()) return "";
  std::optional<Cover> cover =
      BestCover({&atf, &uefi, &bsp}, index, *model, facts.psid, now);
  return cover ? cover->by->release : std::string();
}

Finding AppraiseUpgradePath(std::string_view previous_release,
                            std::string_view current_release,
                            const RefIndex& index) {
  Finding f;
  f.id = std::string(kRuleUpgrade);
  f.expected = "unchanged|first-seen|allowed";
  f.source = "node release history";
  std::string prev = Printable(previous_release);
  std::string cur = Printable(current_release);
  if (current_release.empty()) {
    f.verdict = Verdict::kUnknown;
    f.reason =
        "the running Arm firmware (atf, uefi and bsp together) matches no "
        "reference release, so the upgrade path cannot be checked.";
    return f;
  }
  if (previous_release.empty()) {
    f.verdict = Verdict::kPass;
    f.observed = "first-seen";
    f.reason = "first release recorded for this node: " + cur + ".";
    return f;
  }
  if (previous_release == current_release) {
    f.verdict = Verdict::kPass;
    f.observed = "unchanged";
    f.reason = "the node still runs release " + cur + ".";
    return f;
  }
  const RefRelease* r = index.Find(current_release);
  if (r != nullptr && std::find(r->upgrade_from.begin(), r->upgrade_from.end(),
                                previous_release) != r->upgrade_from.end()) {
    f.verdict = Verdict::kPass;
    f.observed = "allowed";
    f.reason = "release " + cur + " may be reached from " + prev +
               " (its upgrade_from lists it).";
    return f;
  }
  f.verdict = Verdict::kFail;
  f.observed = "not-allowed";
  if (r == nullptr) {
    f.reason = "the node moved from " + prev + " to " + cur +
               ", which is not a known reference release.";
  } else {
    f.reason = "the node moved from " + prev + " to " + cur + ", but " + cur +
               " lists " +
               (r->upgrade_from.empty()
                    ? std::string("no release in upgrade_from")
                    : "only " + JoinStrings(r->upgrade_from, ", ") +
                          " in upgrade_from") +
               ".";
  }
  return f;
}

Finding AppraiseTpmReferenceValues(const TpmFacts& facts, const RefIndex& index,
                                   int64_t now) {
  const std::string source = "TPM quote and event log";
  if (facts.model.empty()) {
    return Unknown(kTpmRefRuleId, source, "the device model is unknown");
  }
  std::set<uint32_t> listed;  // PCRs some release of the model names
  bool any_app = false;
  for (const RefRelease& r : index.releases()) {
    if (r.model != facts.model) continue;
    for (const RefValue& v : r.values) {
      if (v.component == "tpm-app") any_app = true;
      if (IsTpmComponent(v.component) && v.component != "tpm-app") {
        listed.insert(static_cast<uint32_t>(std::stoi(v.component.substr(8))));
      }
    }
  }
  std::vector<Check> checks;
  for (uint32_t pcr : listed) {
    auto it = facts.sha256_pcrs.find(pcr);
    std::string component = "tpm-pcr:" + std::to_string(pcr);
    if (it == facts.sha256_pcrs.end()) {
      return Unknown(kTpmRefRuleId, source,
                     "reference values name sha256 PCR " + std::to_string(pcr) +
                         ", which the quote does not cover");
    }
    checks.push_back({component,
                      "sha256 PCR " + std::to_string(pcr) + " " + AbbreviatedDigest(it->second),
                      Lower(it->second), true});
  }
  if (any_app) {
    for (const TpmFacts::App& a : facts.boot_apps) {
      checks.push_back({"tpm-app",
                        "boot application " + Printable(a.path) + " sha256 " +
                            AbbreviatedDigest(a.sha256),
                        Lower(a.sha256), true});
    }
  }
  if (checks.empty()) {
    return Unknown(kTpmRefRuleId, source,
                   "no tpm-pcr or tpm-app reference values for " + facts.model);
  }
  return Appraise(kTpmRefRuleId, source, checks, index, facts.model, facts.psid, now);
}

void MakeSafe(FirmwareFacts& facts) {
  auto safe = [](std::string& s) {
    if (!IsSafeText(s)) s = SafeText(s);
  };
  auto safe_opt = [&](std::optional<std::string>& s) {
    if (s) safe(*s);
  };
  safe(facts.model);
  safe(facts.psid);
  safe_opt(facts.atf);
  safe_opt(facts.uefi);
  safe_opt(facts.bsp);
  safe_opt(facts.os_release);
  safe(facts.arm_source);
  safe(facts.arm_error);
  safe_opt(facts.nic_fw);
  safe(facts.nic_source);
  safe(facts.nic_error);
  if (facts.boot_stream) {
    for (auto& img : *facts.boot_stream) {
      safe(img.name);
      safe(img.sha384);
    }
  }
  safe(facts.boot_stream_source);
  safe(facts.boot_stream_error);
  if (facts.os_artefacts) {
    for (auto& a : *facts.os_artefacts) {
      safe(a.role);
      safe(a.path);
      safe(a.sha384);
    }
  }
  safe(facts.os_source);
  safe(facts.os_error);
}

}  // namespace dpuaudit::verifier
