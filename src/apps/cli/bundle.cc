#include "apps/cli/bundle.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "apps/cli/cli_util.h"
#include "apps/shared/colour.h"
#include "apps/shared/exit_code.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "common/strict_json.h"
#include "verifier/bundle.h"
#include "verifier/policy.h"
#include "verifier/service.h"

namespace dpuaudit::apps {
namespace {

constexpr int kOk = 0;

int64_t Now() { return SystemClock::Get().NowUnixSeconds(); }

// Unix seconds, or RFC 3339 UTC ("2026-12-01T00:00:00Z" / "2026-12-01").
StatusOr<int64_t> ParseTime(const std::string& s, const char* what) {
  if (!s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos) {
    return std::stoll(s);
  }
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') {
    tm = {};
    end = strptime(s.c_str(), "%Y-%m-%d", &tm);
  }
  if (end == nullptr || *end != '\0') {
    return InvalidArgumentError(std::string(what) + " " + strict_json::Quote(s) +
                                " is neither Unix seconds nor an RFC 3339 UTC time "
                                "(2026-12-01T00:00:00Z or 2026-12-01).");
  }
  return static_cast<int64_t>(timegm(&tm));
}

StatusOr<report::TrustedKeys> Keys(const std::string& trust, const PinnedKeySource& pins,
                                   std::string* described) {
  if (trust.empty()) return LoadPinnedKeys(pins, described);
  DPA_ASSIGN_OR_RETURN(Bytes bytes, ReadFileLimited(trust, 1 << 20));
  *described = trust;
  StatusOr<report::TrustedKeys> keys = report::TrustedKeys::FromAnyFile(bytes, trust, Now());
  if (!keys.ok()) return keys.status().WithPrefix("--trust " + trust);
  return keys;
}

StatusOr<verifier::Bundle> ReadBundle(const std::string& path) {
  DPA_ASSIGN_OR_RETURN(Bytes bytes, ReadBytes(path, verifier::kMaxBundleBytes));
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  StatusOr<verifier::Bundle> b = verifier::ParseBundle(text);
  if (!b.ok()) return b.status().WithPrefix(path == "-" ? "stdin" : path);
  return b;
}

nlohmann::json VerdictJson(const verifier::BundleVerdict& v, const verifier::Bundle& b) {
  nlohmann::json failures = nlohmann::json::array();
  for (const auto& f : v.failures) failures.push_back({{"item", f.item}, {"why", f.why}});
  return {{"verified", v.verified},
          {"node_id", b.node_id},
          {"since", b.since},
          {"until", b.until},
          {"exported_at", b.exported_at},
          {"checkpoint",
           {{"size", v.checkpoint.size},
            {"head_hash", v.checkpoint.head_hash},
            {"time", v.checkpoint.time},
            {"kid", v.checkpoint_kid}}},
          {"entries", v.entries},
          {"reports", v.reports},
          {"results", v.results},
          {"reappraised_full", v.reappraised_full},
          {"reappraised_partial", v.reappraised_partial},
          {"not_reappraisable", v.not_reappraisable},
          {"pruned", v.pruned},
          {"failures", std::move(failures)}};
}

}  // namespace

int BundleExport(const BundleExportFlags& f, const ReadTarget& target) {
  std::string path = "/v1/nodes/" + f.node + "/bundle";
  std::string sep = "?";
  for (auto [value, name] : {std::pair{&f.since, "since"}, std::pair{&f.until, "until"}}) {
    if (value->empty()) continue;
    auto t = ParseTime(*value, name[0] == 's' ? "--since" : "--until");
    if (!t.ok()) return Fail(t.status());
    path += sep + name + "=" + std::to_string(*t);
    sep = "&";
  }
  if (f.out.empty()) return Fail(InvalidArgumentError("--out FILE (or -) is required."));
  auto body = CallVerifierRaw(target, "GET", path, "", verifier::kMaxBundleBytes);
  if (!body.ok()) return FailApi(body.status());
  // Check what came back is a bundle before writing it anywhere.
  auto parsed = verifier::ParseBundle(*body);
  if (!parsed.ok()) {
    return Fail(UnavailableError("the verifier's reply is not a bundle: " +
                                 parsed.status().message()));
  }
  if (f.out == "-") {
    std::cout << *body;
    std::cout.flush();
  } else {
    std::error_code ec;
    std::filesystem::remove(f.out, ec);  // replace an earlier export
    Status w = WriteNewFile(f.out, AsBytes(*body), 0600);
    if (!w.ok()) return Fail(w);
  }
  const verifier::Bundle& b = *parsed;
  nlohmann::json j = {{"node_id", b.node_id},
                      {"out", f.out},
                      {"bytes", static_cast<int64_t>(body->size())},
                      {"reports", static_cast<int64_t>(b.reports.size())},
                      {"results", static_cast<int64_t>(b.results.size())},
                      {"entries", static_cast<int64_t>(b.entries.size())},
                      {"sha256", Sha256Hex(AsBytes(*body))}};
  std::ostream& os = f.out == "-" ? std::cerr : std::cout;
  if (f.json) {
    os << j.dump() << "\n";  // docs/schemas/bundle-export.schema.json
  } else {
    os << "wrote " << (f.out == "-" ? "stdout" : f.out) << ": node " << b.node_id << ", "
       << b.reports.size() << " reports, " << b.results.size() << " results, "
       << b.entries.size() << " audit log entries, " << body->size() << " bytes\n";
  }
  return kOk;
}

int BundleVerify(const BundleVerifyFlags& f, const PinnedKeySource& pins) {
  auto b = ReadBundle(f.file);
  if (!b.ok()) return Fail(b.status());
  std::string described;
  auto keys = Keys(f.trust, pins, &described);
  if (!keys.ok()) return Fail(keys.status());
  verifier::BundleVerdict v = verifier::VerifyBundle(*b, *keys);
  if (f.json) {
    nlohmann::json j = VerdictJson(v, *b);
    j["keys"] = described;
    std::cout << j.dump() << "\n";  // docs/schemas/bundle-verify.schema.json
    return v.verified ? kOk : kRefusedExit;
  }
  for (const auto& fl : v.failures) {
    std::cout << Paint(Colour::kRed, "FAIL") << "  " << fl.item << "\n"
              << Wrap(fl.why, 100, "      ", "      ");
  }
  std::cout << (v.verified ? Paint(Colour::kGreen, "VERIFIED") : Paint(Colour::kRed, "NOT VERIFIED")) << "  bundle of node "
            << b->node_id << ", checked against " << described << "\n";
  if (v.checkpoint_kid.empty()) {
    std::cout << "  checkpoint: not verified\n";
  } else {
    std::cout << "  checkpoint: size " << v.checkpoint.size << ", head "
              << v.checkpoint.head_hash.substr(0, 16) << "…, signed at "
              << TimeString(v.checkpoint.time) << " by key " << v.checkpoint_kid.substr(0, 16)
              << "\n";
  }
  std::cout << "  audit log: " << v.entries << " entries chained to it\n";
  std::cout << "  reports: " << v.reports << ", results: " << v.results
            << "; re-appraised: " << v.reappraised_full << " identical"
            << (v.reappraised_partial > 0
                    ? ", " + std::to_string(v.reappraised_partial) +
                          " identical except the BMC path (taken from the EAR)"
                    : "")
            << (v.not_reappraisable > 0
                    ? ", " + std::to_string(v.not_reappraisable) + " not re-appraisable"
                    : "")
            << (v.pruned > 0 ? "; " + std::to_string(v.pruned) + " items removed by retention"
                             : "")
            << "\n";
  return v.verified ? kOk : kRefusedExit;
}

int PolicyTest(const PolicyTestFlags& f, const PinnedKeySource& pins) {
  auto text = ReadBytes(f.candidate, verifier::Policy::kMaxBytes + 1);
  if (!text.ok()) return Fail(text.status());
  auto candidate = verifier::Policy::Create(
      std::string_view(reinterpret_cast<const char*>(text->data()), text->size()),
      verifier::KnownRules());
  if (!candidate.ok()) {
    return Fail(candidate.status().WithPrefix("candidate policy " + f.candidate));
  }
  std::vector<std::string> files = f.bundles;
  if (!f.reports_dir.empty()) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(f.reports_dir, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".json") found.push_back(e.path());
    }
    if (ec) return Fail(NotFoundError("--reports " + f.reports_dir + ": " + ec.message()));
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  if (files.empty()) {
    return Fail(InvalidArgumentError("give --bundle FILE or --reports DIR (bundles written "
                                     "by `dpuaudit bundle export`)."));
  }
  std::string described;
  auto keys = Keys(f.trust, pins, &described);
  if (!keys.ok()) return Fail(keys.status());
  nlohmann::json nodes = nlohmann::json::array();
  int64_t results = 0, changed = 0, to_deny = 0, to_admit = 0, errors = 0;
  struct Row {
    std::string node, change, why;
    int64_t result_id, at;
  };
  std::vector<Row> rows;
  for (const std::string& file : files) {
    auto b = ReadBundle(file);
    if (!b.ok()) return Fail(b.status());
    verifier::BundleVerdict v = verifier::VerifyBundle(*b, *keys);
    if (!v.verified) {
      std::cerr << "dpuaudit: " << file << " does not verify ("
                << v.failures.front().item << ": " << v.failures.front().why
                << "); run `dpuaudit bundle verify " << file << "`.\n";
      return kRefusedExit;
    }
    std::vector<verifier::WhatIf> w = verifier::WhatIfUnder(*b, *candidate);
    results += static_cast<int64_t>(w.size());
    nlohmann::json list = nlohmann::json::array();
    const verifier::WhatIf* latest = nullptr;
    for (const auto& x : w) {
      if (!x.error.empty()) ++errors;
      bool differs = x.error.empty() && x.candidate != x.recorded;
      if (differs) {
        ++changed;
        (x.candidate == "deny" ? to_deny : to_admit)++;
      }
      list.push_back({{"result_id", x.result_id}, {"created_at", x.created_at},
                      {"recorded", x.recorded}, {"candidate", x.candidate},
                      {"changed", differs}, {"newly_failing", x.newly_failing},
                      {"no_longer_failing", x.no_longer_failing}, {"error", x.error}});
      if (x.error.empty()) latest = &x;
    }
    bool node_changes = latest != nullptr && latest->candidate != latest->recorded;
    nodes.push_back({{"node_id", b->node_id}, {"file", file},
                     {"latest_changes", node_changes}, {"results", std::move(list)}});
    for (const auto& x : w) {
      if (!f.wide && &x != latest) continue;
      std::string change = x.error.empty() ? x.recorded + " -> " + x.candidate : "error";
      std::string why;
      if (!x.error.empty()) {
        why = x.error;
      } else {
        if (!x.newly_failing.empty()) {
          why = "newly failing: ";
          for (size_t i = 0; i < x.newly_failing.size(); ++i) {
            why += (i ? ", " : "") + x.newly_failing[i];
          }
        }
        if (!x.no_longer_failing.empty()) {
          why += std::string(why.empty() ? "" : "; ") + "no longer failing: ";
          for (size_t i = 0; i < x.no_longer_failing.size(); ++i) {
            why += (i ? ", " : "") + x.no_longer_failing[i];
          }
        }
      }
      rows.push_back({b->node_id, change, why, x.result_id, x.created_at});
    }
  }
  const bool any_change = changed > 0;
  if (f.json) {
    // docs/schemas/policy-test.schema.json
    std::cout << nlohmann::json{{"candidate", {{"name", candidate->name()},
                                                {"sha256", candidate->sha256()}}},
                                {"bundles", static_cast<int64_t>(files.size())},
                                {"results", results},
                                {"changed", changed},
                                {"admit_to_deny", to_deny},
                                {"deny_to_admit", to_admit},
                                {"errors", errors},
                                {"nodes", std::move(nodes)}}
                     .dump()
              << "\n";
    return any_change ? kRefusedExit : kOk;
  }
  std::cout << "policy test: candidate " << candidate->name() << " (sha256 "
            << candidate->sha256().substr(0, 16) << "…) against " << files.size()
            << " bundles, " << results << " results, verified under " << described << "\n";
  // Changes first, then errors, then unchanged.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    auto rank = [](const Row& r) {
      if (r.change == "error") return 1;
      return r.change.substr(0, r.change.find(' ')) !=
                     r.change.substr(r.change.rfind(' ') + 1)
                 ? 0
                 : 2;
    };
    return rank(a) < rank(b);
  });
  for (const Row& r : rows) {
    bool differs = r.change != "error" && r.change.substr(0, r.change.find(' ')) !=
                                              r.change.substr(r.change.rfind(' ') + 1);
    std::string tag = r.change == "error" ? Paint(Colour::kYellow, "ERROR  ")
                      : differs           ? Paint(Colour::kRed, "CHANGES")
                                          : "same   ";
    std::string line = tag + "  " + r.node + "  result " + std::to_string(r.result_id) +
                       "  " + TimeString(r.at) + "  " + r.change;
    std::cout << line << "\n";
    if (!r.why.empty()) std::cout << Wrap(r.why, 100, "         ", "         ");
  }
  std::cout << "would change: " << changed << " of " << results << " results (admit -> deny "
            << to_deny << ", deny -> admit " << to_admit << ")"
            << (errors > 0 ? "; not re-appraisable: " + std::to_string(errors) : "") << "\n";
  return any_change ? kRefusedExit : kOk;
}

}  // namespace dpuaudit::apps
