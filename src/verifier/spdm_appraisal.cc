// SPDM measurements against the first-seen baseline (spdm_appraisal.h).
#include "verifier/spdm_appraisal.h"

#include <algorithm>
#include <set>

#include "common/bytes.h"

namespace dpuaudit::verifier {
namespace {

constexpr uint8_t kSecurityVersionKind = 7;  // DMTF mutable firmware SVN

std::string Hex2(uint8_t v) { return HexEncode(Bytes{v}); }

// The security version of a baseline entry "87:<le hex>", if it is one.
std::optional<uint64_t> SecurityVersion(const std::string& entry) {
  if (entry.size() < 3 || entry[2] != ':') return std::nullopt;
  auto type = HexDecode(entry.substr(0, 2));
  if (!type.ok() || type->size() != 1 || ((*type)[0] & 0x7F) != kSecurityVersionKind ||
      ((*type)[0] & 0x80) == 0) {
    return std::nullopt;
  }
  auto value = HexDecode(entry.substr(3));
  if (!value.ok() || value->empty() || value->size() > 8) return std::nullopt;
  uint64_t v = 0;
  for (size_t i = value->size(); i-- > 0;) v = (v << 8) | (*value)[i];
  return v;
}

}  // namespace

MeasurementBaseline BaselineOf(const spdm::VerifiedMeasurements& m) {
  MeasurementBaseline b;
  for (const spdm::MeasurementBlock& blk : m.blocks()) {
    b.values[blk.index] = blk.dmtf ? Hex2(blk.dmtf->value_type) + ":" + HexEncode(blk.dmtf->value)
                                   : "spec" + std::to_string(blk.specification) + ":" +
                                         HexEncode(blk.measurement);
  }
  return b;
}

SpdmAppraisal AppraiseMeasurements(const std::string& target, const std::string& source,
                                   const spdm::VerifiedMeasurements& m,
                                   const std::optional<MeasurementBaseline>& baseline,
                                   const std::set<uint8_t>& referenced) {
  SpdmAppraisal a;
  a.proposed = BaselineOf(m);
  Finding& f = a.finding;
  f.id = target + ".measurements";
  f.expected = "baseline";
  f.source = source;
  if (!baseline) {
    a.first_seen = true;
    f.verdict = Verdict::kPass;
    f.observed = "baseline";
    f.reason = "first seen: " + std::to_string(a.proposed.values.size()) +
               " signed measurements recorded as this device's baseline (trust on first "
               "use; no vendor reference values are published for BlueField-3)";
    return a;
  }
  std::set<uint8_t> all;
  for (const auto& [i, v] : baseline->values) all.insert(i);
  for (const auto& [i, v] : a.proposed.values) all.insert(i);
  for (uint8_t i : referenced) all.erase(i);
  for (uint8_t i : all) {
    auto was = baseline->values.find(i);
    auto now = a.proposed.values.find(i);
    if (was != baseline->values.end() && now != a.proposed.values.end() &&
        was->second == now->second) {
      continue;
    }
    a.changed.push_back(i);
    if (was != baseline->values.end() && now != a.proposed.values.end()) {
      auto before = SecurityVersion(was->second);
      auto after = SecurityVersion(now->second);
      if (before && after && *after < *before) a.rolled_back.push_back(i);
    }
  }
  if (!a.rolled_back.empty()) {
    a.contraindicated = true;
    f.verdict = Verdict::kFail;
    f.observed = "rollback";
    std::string detail;
    for (uint8_t i : a.rolled_back) {
      detail += (detail.empty() ? "" : "; ") + std::string("index ") + std::to_string(i) + " " +
                std::to_string(*SecurityVersion(baseline->values.at(i))) + " -> " +
                std::to_string(*SecurityVersion(a.proposed.values.at(i)));
    }
    f.reason = "a firmware security version went down (" + detail +
               "): a rollback to older firmware";
    return a;
  }
  if (!a.changed.empty()) {
    f.verdict = Verdict::kFail;
    f.observed = "changed";
    std::string detail;
    for (uint8_t i : a.changed) {
      const bool added = baseline->values.count(i) == 0;
      const bool removed = a.proposed.values.count(i) == 0;
      detail += (detail.empty() ? "" : "; ") + std::string("index ") + std::to_string(i) +
                (added ? " added" : removed ? " no longer reported" : " changed");
    }
    f.reason = "signed measurements differ from the approved baseline (" + detail +
               "); an administrator must approve the new values";
    return a;
  }
  f.verdict = Verdict::kPass;
  f.observed = "baseline";
  f.reason = "all " + std::to_string(all.size()) +
             " signed measurements equal the approved baseline";
  if (!referenced.empty()) {
    f.reason += " (" + std::to_string(referenced.size()) +
                " more are judged by reference values)";
  }
  return a;
}

}  // namespace dpuaudit::verifier
