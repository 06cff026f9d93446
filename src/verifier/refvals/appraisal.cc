#include "verifier/refvals/appraisal.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "common/bytes.h"
#include "common/safe_text.h"
#include "common/strict_json.h"

namespace dpuaudit::verifier {
namespace {

using internal::Lower;
using internal::PsidMatches;
using strict_json::Quote;

constexpr std::string_view kRuleArm = "refval.arm_firmware";
constexpr std::string_view kRuleOs = "refval.os_release";
constexpr std::string_view kRuleNic = "refval.nic_firmware";
constexpr std::string_view kRuleBoot = "refval.boot_stream";
constexpr std::string_view kRuleOsBoot = "refval.os_boot";
constexpr std::string_view kRuleUpgrade = "refval.upgrade_path";

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
           (c.by_digest ? (v.sha384 == c.value || v.sha256 == c.value ||
                           (v.sha384.empty() && v.sha512 == c.value))
                        : v.version == c.value);
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
                 std::set<std::string>* matched, const Unit* unit = nullptr) {
  int worst = kRankActive;
  bool psid_unknown = false;
  std::vector<CheckResult> results;
  for (const Check& c : checks) {
    CheckResult r = RunCheck(index, model, psid, c, now);
    worst = std::max(worst, r.rank);
    psid_unknown = psid_unknown || r.psid_unknown;
    if (matched != nullptr && r.best != nullptr) matched->insert(r.best->release);
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

// A fact is present only with a non-empty value ("" is what a parser leaves
// when the line was absent).
bool Has(const std::optional<std::string>& v) { return v && !v->empty(); }

}  // namespace

const std::vector<std::string_view>& RefRuleIds() {
  static const auto* kIds = new std::vector<std::string_view>{
      kRuleArm, kRuleOs, kRuleNic, kRuleBoot, kRuleOsBoot, kRuleUpgrade};
  return *kIds;
}

std::vector<Finding> AppraiseReferenceValues(const FirmwareFacts& facts,
                                             const RefIndex& index,
                                             int64_t now,
                                             std::set<std::string>* matched) {
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
                             psid, now, matched, &kArmUnit));
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
                           index, *model, psid, now, matched));
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
                           *model, psid, now, matched));
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
                            HexNumber(img.offset),
                        Lower(img.sha384), true});
    }
    out.push_back(Appraise(kRuleBoot, facts.boot_stream_source, checks, index,
                           *model, psid, now, matched, &kBootUnit));
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
                           psid, now, matched, &kOsBootUnit));
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
                                   int64_t now, std::set<std::string>* matched) {
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
  return Appraise(kTpmRefRuleId, source, checks, index, facts.model, facts.psid, now,
                  matched);
}

std::set<uint8_t> SpdmReferencedIndices(const RefIndex& index, std::string_view model,
                                        std::string_view target) {
  std::set<uint8_t> out;
  for (const RefRelease& r : index.releases()) {
    if (r.model != model) continue;
    for (const RefValue& v : r.values) {
      std::string t;
      uint8_t i = 0;
      if (IsSpdmComponent(v.component, &t, &i) && t == target) out.insert(i);
    }
  }
  return out;
}

Finding AppraiseSpdmReferenceValues(const SpdmFacts& facts, const RefIndex& index,
                                    int64_t now, std::set<std::string>* matched) {
  const std::string id = facts.target + ".reference_values";
  if (facts.model.empty()) return Unknown(id, facts.source, "the device model is unknown");
  std::set<uint8_t> listed = SpdmReferencedIndices(index, facts.model, facts.target);
  if (listed.empty()) {
    return Unknown(id, facts.source,
                   "no spdm-" + facts.target + " reference values for " + facts.model);
  }
  std::vector<Check> checks;
  for (uint8_t i : listed) {
    const std::string component = "spdm-" + facts.target + ":" + std::to_string(i);
    auto it = facts.values.find(i);
    std::string digest;
    // A DMTF digest (value type without the raw bit) of 48 or 64 bytes.
    if (it != facts.values.end() && (it->second.size() == 3 + 96 || it->second.size() == 3 + 128) &&
        it->second[2] == ':' && it->second[0] >= '0' && it->second[0] <= '7') {
      digest = it->second.substr(3);
    }
    const std::string label =
        "SPDM index " + std::to_string(i) +
        (digest.empty() ? (it == facts.values.end() ? " (not measured)" : " (not a digest)")
                        : (digest.size() == 96 ? " sha384 " : " sha512 ") +
                              AbbreviatedDigest(digest));
    checks.push_back({component, label, digest.empty() ? "-" : Lower(digest), true});
  }
  return Appraise(id, facts.source, checks, index, facts.model, facts.psid, now,
                  matched);
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
