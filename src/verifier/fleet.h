// The fleet drift report (issue 16 §7, docs/fleet-report.md): what GET
// /v1/fleet serves as a "dpuaudit-fleet/1" JSON document and `dpuaudit
// fleet report` renders as JSON, Markdown or HTML.
//
// Three layers, so that the part that decides is pure and testable:
//  - DeriveFleetNodeFacts: one node's firmware versions, boot-stream digest
//    and model, re-derived from the raw evidence of its latest accepted
//    report the way the verifier appraises it (isolation::CollectDeviceFacts
//    over device::NewEvidenceDeviceSource, the report's boot chain). The
//    report is verified under the node's pinned key BEFORE a byte of it is
//    parsed; a report that does not verify gives no facts, only the reason.
//  - BuildFleetReport: pure, from what the store holds (nodes, statuses,
//    latest results' posture, node releases, reference releases, decision
//    counts) and the derived facts to the document: nodes grouped by model,
//    per model and attribute the majority value and the nodes that diverge
//    from it, decisions over time, nodes on non-active releases, stale,
//    failed and held nodes.
//  - CollectFleetReport: the glue that reads the store in one pass (one
//    query per kind, then one GetAcceptedReport per node that has a result)
//    and calls the two above; derived facts are cached by report digest and
//    key, so a repeated report only re-derives what changed.
//
// Guarantees: the document validates against
// docs/schemas/fleet-report.schema.json; every string that came from
// evidence is SafeText; nodes are in node id order, everything else in a
// documented order, so the same input gives the same bytes.
// Does not: authenticate the caller (the route checks the reader token),
// judge anything (decisions are the stored results'), or read a clock.
#ifndef DPUAUDIT_VERIFIER_FLEET_H_
#define DPUAUDIT_VERIFIER_FLEET_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "verifier/refvals/model.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

inline constexpr std::string_view kFleetFormat = "dpuaudit-fleet/1";

// What one node's latest accepted report shows, re-derived from evidence.
// A field is "" when it could not be read (the inventory's reason is in
// the report's findings; the fleet report only needs the value).
struct FleetNodeFacts {
  std::string model;  // canonical ("BlueField-3"), "" when not recognised
  std::string psid;
  std::string atf, uefi, bsp, os_release;  // bfver
  std::string nic_fw;                      // flint "FW Version"
  std::string boot_partition;              // primary, from mlxbf-bootctl
  // The agent's SHA-256 of the whole primary boot partition (measured on
  // the Arm: the partition is too large to be evidence).
  std::string boot_stream_sha256;
  int64_t issued_at = 0;
  bool operator==(const FleetNodeFacts&) const = default;
};

// Verifies `report.jws` under `node`'s pinned key (alg ES256, the key's
// thumbprint equal to the stored one), then parses its claims and derives
// the facts. UNAUTHENTICATED when the node's key or the signature does not
// verify, DATA_LOSS when the stored key does not match its thumbprint,
// FAILED_PRECONDITION when only the report's digest is kept (its body was
// pruned), INVALID_ARGUMENT when the verified claims or evidence are
// malformed. A dpuaudit-report/2 report's by-digest evidence is resolved
// against the node's base in `store` (verifier/evidence_cache.h); without a
// store, or when the base cannot supply it, FAILED_PRECONDITION: facts are
// never derived from evidence the verifier does not hold.
StatusOr<FleetNodeFacts> DeriveFleetNodeFacts(const NodeRecord& node,
                                              const ReportRecord& report,
                                              size_t max_report_bytes,
                                              Store* store = nullptr);

// The posture rules of the report: the host-isolation and mode rules, ids
// starting "host." or "dpu." (host.privilege_level, dpu.operation_mode,
// host.rshim_disabled, ...).
bool IsFleetPostureRule(std::string_view rule_id);
// rule id -> observed value of a stored result's reasons (a JSON array of
// decision reasons), for the posture rules only. INVALID_ARGUMENT when the
// text is not an array of objects with string rule_id and observed.
StatusOr<std::map<std::string, std::string>> FleetPosture(
    std::string_view reasons_json);

// One node as the builder sees it.
struct FleetNode {
  NodeRecord node;
  std::optional<NodeStatusRecord> status;  // nullopt: none stored yet
  // The latest result, when there is one.
  bool has_result = false;
  int64_t result_id = 0;
  std::string decision;  // "admit" | "deny"
  int64_t result_at = 0;
  std::string report_sha256;
  std::map<std::string, std::string> posture;  // FleetPosture of it
  // The facts of the result's report, or why there are none (facts_error
  // set iff has_result and !facts).
  std::optional<FleetNodeFacts> facts;
  std::string facts_error;
};

// The decisions-over-time window: buckets of bucket_seconds covering the
// last window_seconds before now.
struct FleetWindow {
  int64_t bucket_seconds = 3600;
  int64_t window_seconds = 7 * 86400;
};
inline constexpr int64_t kFleetMinBucketSeconds = 60;
inline constexpr int64_t kFleetMaxBucketSeconds = 31 * 86400;
inline constexpr int64_t kFleetMaxWindowSeconds = 400 * 86400;
inline constexpr int64_t kFleetMaxBuckets = 2000;
// INVALID_ARGUMENT naming the bound: bucket_seconds in [60, 31 days],
// window_seconds in [bucket_seconds, 400 days], at most 2000 buckets.
Status ValidateFleetWindow(const FleetWindow& w);
// GET /v1/fleet's ?bucket=S&window=S (decimal seconds; absent: default).
StatusOr<FleetWindow> ParseFleetWindow(
    const std::optional<std::string>& bucket,
    const std::optional<std::string>& window);
// The first bucket's start: floor((now - window_seconds) / bucket) * bucket.
int64_t FleetWindowStart(const FleetWindow& w, int64_t now);

struct FleetInput {
  std::vector<FleetNode> nodes;  // any order
  std::vector<NodeReleaseRecord> node_releases;
  std::vector<RefRelease> releases;
  std::vector<DecisionBucket> decisions;  // Store::CountDecisions
  FleetWindow window;
  int64_t now = 0;
};

// Pure: the "dpuaudit-fleet/1" document (docs/fleet-report.md).
nlohmann::json BuildFleetReport(const FleetInput& in);

// Derived facts (or the reason there are none) by report digest and node
// key, so that a report already examined is not verified and parsed again.
// Thread-safe; holds at most `max_entries` (then it starts over empty).
class FleetFactsCache {
 public:
  explicit FleetFactsCache(size_t max_entries = 50000)
      : max_entries_(max_entries) {}
  struct Entry {
    std::optional<FleetNodeFacts> facts;
    std::string error;
  };
  std::optional<Entry> Find(const std::string& key) const;
  void Put(const std::string& key, Entry entry);

 private:
  size_t max_entries_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

// Reads the store and builds the report: ListNodes, ListNodeStatuses,
// ForEachLatestResult, ListNodeReleases, ListReleases, CountDecisions, and
// one GetAcceptedReport per node whose latest result counts (made under its
// current key) and is not in `cache` (nullptr: no cache), those reports
// derived on up to 4 threads. A store error is returned; a report that
// cannot be examined is the node's facts_error.
StatusOr<nlohmann::json> CollectFleetReport(Store& store,
                                            const FleetWindow& window,
                                            int64_t now,
                                            size_t max_report_bytes,
                                            FleetFactsCache* cache);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_FLEET_H_
