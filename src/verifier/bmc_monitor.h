// BmcMonitor: the verifier's own pulls of each configured node's BMC
// (issue 14, docs/redfish.md#in-the-verifier), on a schedule of their own,
// never on the per-report path (an SPDM P-384 verify costs ~0.7 ms and a
// pull ~17 ms of wall time).
//
// Configuration (`dpuaudit-verifier serve --bmc-config FILE`, schema
// "dpuaudit-bmc-config/1", docs/bmc-config-schema.md):
//   {"schema": "dpuaudit-bmc-config/1",
//    "trust_anchors": ["dice-root.pem", ...],     // DICE roots, PEM
//    "interval_seconds": 300, "max_age_seconds": 900,
//    "min_repull_seconds": 30, "pull_deadline_ms": 60000,
//    "nodes": {"<node id>": {"url": "https://192.0.2.10",
//                            "pin_sha256": "<hex SPKI SHA-256>" | "ca_file": "...",
//                            "auth": "session" | "basic",
//                            "credentials_file": "bmc-node.json",  // 0600
//                            "timeout_ms": 10000}}}
// Relative paths are relative to the configuration file's folder.
//
// Guarantees:
//  - Every configured node is pulled at start, then every interval, and
//    as soon as possible after Schedule() (enrollment, approval, a report
//    that disagrees with the cached pull), at most once per
//    min_repull_seconds. Pulls run one at a time on one thread.
//  - Credentials are read from their file (0600, bmc/redfish_client.h) at
//    each pull and never logged or kept.
//  - A pull's verdict (verifier/bmc_state.h) is cached per node; Latest()
//    hands out an immutable snapshot. A verdict older than max_age_seconds
//    is not used for decisions (the appraisal says so: unknown).
//  - First sight stores the IRoT binding and each target's baseline
//    (Store hardware records, set_by "first-seen"); they are never
//    replaced by a pull, only by Rebind / ApproveBaseline, which need an
//    administrator and a reason and take what the latest verified pull
//    showed.
//  - After each pull the listener is called with the node id (the service
//    re-judges the node's current admission with the new verdict).
// Does not: pull nodes that are not enrolled; persist verdicts (after a
// restart the first pull refills the cache; until then the BMC path is
// unknown).
#ifndef DPUAUDIT_VERIFIER_BMC_MONITOR_H_
#define DPUAUDIT_VERIFIER_BMC_MONITOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bmc/redfish_client.h"
#include "common/clock.h"
#include "common/status.h"
#include "spdm/dice.h"
#include "spdm/evidence.h"
#include "verifier/bmc_state.h"
#include "verifier/refvals/index.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

struct BmcNodeConfig {
  bmc::BmcEndpoint endpoint;
  std::string credentials_file;
};

struct BmcConfig {
  std::vector<std::string> trust_anchor_files;
  int64_t interval_seconds = 300;    // [5, 86400]
  int64_t max_age_seconds = 0;       // 0: 3 x interval
  int64_t min_repull_seconds = 30;   // [0, interval]
  // One pull, at most (bmc/collect.h CollectOptions::deadline): pulls run
  // one at a time, so a hung BMC must not hold the others back.
  int64_t pull_deadline_ms = 60000;  // [1000, 600000]
  std::map<std::string, BmcNodeConfig> nodes;
};

inline constexpr std::string_view kBmcConfigSchema = "dpuaudit-bmc-config/1";
// Strict (unknown members refused, errors name the field); `base_dir`
// resolves relative paths.
StatusOr<BmcConfig> ParseBmcConfig(std::string_view json, const std::string& base_dir);
StatusOr<BmcConfig> LoadBmcConfigFile(const std::string& path);

class BmcMonitor {
 public:
  using Listener = std::function<void(const std::string& node_id)>;

  // Loads the trust anchors (INVALID_ARGUMENT naming a file that is not
  // PEM) and checks every credentials file once (its mode and form).
  static StatusOr<std::unique_ptr<BmcMonitor>> New(BmcConfig config, Store& store,
                                                   const Clock& clock);
  ~BmcMonitor();  // stops the thread, waiting for a pull under way
  BmcMonitor(const BmcMonitor&) = delete;
  BmcMonitor& operator=(const BmcMonitor&) = delete;

  // Where the reference values come from (the service's current index):
  // SPDM indices some release lists are judged by them, not by the
  // baseline. Set before Start.
  using RefsProvider = std::function<std::shared_ptr<const RefIndex>()>;
  void SetReferenceValues(RefsProvider provider) { refs_ = std::move(provider); }
  // Every node due now (after a reference-value change).
  void ScheduleAll();

  // Starts the schedule; every node not pulled yet is due at once.
  void Start(Listener listener);

  bool Configured(const std::string& node_id) const;
  std::vector<std::string> NodeIds() const;
  std::shared_ptr<const BmcVerdict> Latest(const std::string& node_id) const;
  void Schedule(const std::string& node_id);
  // One pull now, on the caller's thread (the schedule uses it; so do the
  // tests and the admin calls). NOT_FOUND for a node without a BMC.
  StatusOr<std::shared_ptr<const BmcVerdict>> PullNow(const std::string& node_id);

  int64_t max_age_seconds() const { return config_.max_age_seconds; }
  const spdm::TrustAnchors& anchors() const { return anchors_; }
  const std::string& bmc_key_sha256(const std::string& node_id) const;

  // Administrator: bind the node to what the latest verified pull showed
  // (after a repair or re-flash). FAILED_PRECONDITION when no verified
  // pull is cached. Recorded with who and why; the node is pulled again.
  StatusOr<HardwareRecord> Rebind(const std::string& node_id, const std::string& by,
                                  const std::string& reason);
  // Administrator: make the latest verified measurements of `target`
  // ("irot" | "erot") the node's baseline.
  StatusOr<HardwareRecord> ApproveBaseline(const std::string& node_id,
                                           const std::string& target, const std::string& by,
                                           const std::string& reason);

 private:
  BmcMonitor(BmcConfig config, spdm::TrustAnchors anchors, Store& store, const Clock& clock);
  void Run();
  std::optional<MeasurementBaseline> StoredBaseline(const std::string& node_id,
                                                    const std::string& target, Status* error);

  BmcConfig config_;
  spdm::TrustAnchors anchors_;
  spdm::ChainCache chain_cache_;  // chains that validated under anchors_
  Store& store_;
  const Clock& clock_;
  Listener listener_;
  RefsProvider refs_;
  std::mutex pull_mu_;  // one pull at a time
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::string, int64_t> due_;       // node -> unix seconds
  std::map<std::string, int64_t> last_pull_;  // node -> unix seconds
  std::map<std::string, std::shared_ptr<const BmcVerdict>> latest_;
  std::thread thread_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_BMC_MONITOR_H_
