#include "verifier/bmc_monitor.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "bmc/collect.h"
#include "common/bytes.h"
#include "common/files.h"
#include "common/strict_json.h"
#include "verifier/refvals/appraisal.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;
using strict_json::ObjectReader;

constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr size_t kMaxAnchorBytes = 1 << 20;
// The BMC path is BlueField-3's: its reference values are that model's.
constexpr std::string_view kBmcModel = "BlueField-3";

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

bool IsHex64(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

StatusOr<int64_t> OptionalInt(ObjectReader& r, std::string_view key, int64_t fallback,
                              int64_t lo, int64_t hi) {
  if (!r.Has(key)) {
    r.Skip(key);
    return fallback;
  }
  DPA_ASSIGN_OR_RETURN(int64_t v, r.Int64(key));
  if (v < lo || v > hi) {
    return InvalidArgumentError(r.PathOf(key) + " " + std::to_string(v) + " is outside [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "].");
  }
  return v;
}

StatusOr<BmcNodeConfig> ParseNode(const json& j, const std::string& path,
                                  const std::string& base_dir) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, path));
  BmcNodeConfig n;
  DPA_ASSIGN_OR_RETURN(n.endpoint.base_url, r.String("url"));
  if (n.endpoint.base_url.rfind("https://", 0) != 0) {
    return InvalidArgumentError(r.PathOf("url") + " must be an https:// URL.");
  }
  bool has_pin = false, has_ca = false, has_auth = false;
  DPA_ASSIGN_OR_RETURN(n.endpoint.pinned_key_sha256, r.OptionalString("pin_sha256", &has_pin));
  DPA_ASSIGN_OR_RETURN(std::string ca, r.OptionalString("ca_file", &has_ca));
  if (has_pin == has_ca) {
    return InvalidArgumentError(path + " needs exactly one of pin_sha256 and ca_file.");
  }
  if (has_pin && !IsHex64(n.endpoint.pinned_key_sha256)) {
    return InvalidArgumentError(r.PathOf("pin_sha256") +
                                " must be 64 lower-case hex digits (SHA-256 of the key).");
  }
  if (has_ca) n.endpoint.ca_file = Resolve(base_dir, ca);
  DPA_ASSIGN_OR_RETURN(std::string auth, r.OptionalString("auth", &has_auth));
  if (!has_auth || auth == "session") {
    n.endpoint.auth = bmc::BmcAuth::kSession;
  } else if (auth == "basic") {
    n.endpoint.auth = bmc::BmcAuth::kBasic;
  } else {
    return InvalidArgumentError(r.PathOf("auth") + " must be \"session\" or \"basic\".");
  }
  DPA_ASSIGN_OR_RETURN(std::string creds, r.String("credentials_file"));
  n.credentials_file = Resolve(base_dir, creds);
  DPA_ASSIGN_OR_RETURN(int64_t timeout_ms, OptionalInt(r, "timeout_ms", 10000, 100, 120000));
  n.endpoint.timeout = std::chrono::milliseconds(timeout_ms);
  n.endpoint.connect_timeout = std::chrono::milliseconds(std::min<int64_t>(timeout_ms, 3000));
  DPA_RETURN_IF_ERROR(r.Finish());
  return n;
}

std::optional<MeasurementBaseline> ParseStoredBaseline(const HardwareRecord& r, Status* error) {
  StatusOr<MeasurementBaseline> b = ParseBaseline(r.value_json);
  if (!b.ok()) {
    *error = DataLossError("stored " + r.kind + " of node " + r.node_id +
                           " does not parse: " + b.status().message());
    return std::nullopt;
  }
  return *b;
}

}  // namespace

StatusOr<BmcConfig> ParseBmcConfig(std::string_view text, const std::string& base_dir) {
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(text), "BMC configuration"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  DPA_ASSIGN_OR_RETURN(std::string schema, r.String("schema"));
  if (schema != kBmcConfigSchema) {
    return InvalidArgumentError("schema must be \"" + std::string(kBmcConfigSchema) + "\", not " +
                                strict_json::Quote(schema) + ".");
  }
  BmcConfig c;
  DPA_ASSIGN_OR_RETURN(const json* anchors, r.Array("trust_anchors"));
  for (size_t i = 0; i < anchors->size(); ++i) {
    if (!(*anchors)[i].is_string()) {
      return InvalidArgumentError(strict_json::Index("trust_anchors", i) + " must be a string.");
    }
    c.trust_anchor_files.push_back(Resolve(base_dir, (*anchors)[i].get<std::string>()));
  }
  DPA_ASSIGN_OR_RETURN(c.interval_seconds, OptionalInt(r, "interval_seconds", 300, 5, 86400));
  DPA_ASSIGN_OR_RETURN(c.max_age_seconds, OptionalInt(r, "max_age_seconds",
                                                      3 * c.interval_seconds,
                                                      c.interval_seconds, 7 * 86400));
  DPA_ASSIGN_OR_RETURN(c.min_repull_seconds,
                       OptionalInt(r, "min_repull_seconds", std::min<int64_t>(30, c.interval_seconds),
                                   0, c.interval_seconds));
  DPA_ASSIGN_OR_RETURN(c.pull_deadline_ms,
                       OptionalInt(r, "pull_deadline_ms", 60000, 1000, 600000));
  DPA_ASSIGN_OR_RETURN(const json* nodes, r.Object("nodes"));
  for (const auto& [id, node] : nodes->items()) {
    DPA_ASSIGN_OR_RETURN(BmcNodeConfig n, ParseNode(node, strict_json::Join("nodes", id), base_dir));
    c.nodes[id] = std::move(n);
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return c;
}

StatusOr<BmcConfig> LoadBmcConfigFile(const std::string& path) {
  DPA_ASSIGN_OR_RETURN(Bytes raw, ReadFileLimited(path, kMaxConfigBytes));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  StatusOr<BmcConfig> c = ParseBmcConfig(ToString(raw), dir);
  if (!c.ok()) return Status(c.status().code(), path + ": " + c.status().message());
  return c;
}

StatusOr<std::unique_ptr<BmcMonitor>> BmcMonitor::New(BmcConfig config, Store& store,
                                                      const Clock& clock) {
  std::vector<std::string> pems;
  for (const std::string& f : config.trust_anchor_files) {
    DPA_ASSIGN_OR_RETURN(Bytes raw, ReadFileLimited(f, kMaxAnchorBytes));
    pems.emplace_back(ToString(raw));
  }
  spdm::TrustAnchors anchors;
  if (!pems.empty()) {
    DPA_ASSIGN_OR_RETURN(anchors, spdm::TrustAnchors::FromPem(pems, config.trust_anchor_files));
  }
  for (const auto& [id, n] : config.nodes) {
    StatusOr<bmc::BmcCredentials> c = bmc::LoadCredentialsFile(n.credentials_file);
    if (!c.ok()) {
      return Status(c.status().code(), "BMC of node " + id + ": " + c.status().message());
    }
  }
  if (config.max_age_seconds == 0) config.max_age_seconds = 3 * config.interval_seconds;
  return std::unique_ptr<BmcMonitor>(
      new BmcMonitor(std::move(config), std::move(anchors), store, clock));
}

BmcMonitor::BmcMonitor(BmcConfig config, spdm::TrustAnchors anchors, Store& store,
                       const Clock& clock)
    : config_(std::move(config)), anchors_(std::move(anchors)), store_(store), clock_(clock) {}

BmcMonitor::~BmcMonitor() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BmcMonitor::Start(Listener listener) {
  listener_ = std::move(listener);
  {
    std::lock_guard<std::mutex> l(mu_);
    const int64_t now = clock_.NowUnixSeconds();
    for (const auto& [id, n] : config_.nodes) {
      auto last = last_pull_.find(id);
      due_[id] = last == last_pull_.end() ? 0 : now + config_.interval_seconds;
    }
  }
  thread_ = std::thread([this] { Run(); });
}

std::vector<std::string> BmcMonitor::NodeIds() const {
  std::vector<std::string> ids;
  for (const auto& [id, n] : config_.nodes) ids.push_back(id);
  return ids;
}

bool BmcMonitor::Configured(const std::string& node_id) const {
  return config_.nodes.count(node_id) != 0;
}

const std::string& BmcMonitor::bmc_key_sha256(const std::string& node_id) const {
  static const std::string kNone;
  auto it = config_.nodes.find(node_id);
  return it == config_.nodes.end() ? kNone : it->second.endpoint.pinned_key_sha256;
}

std::shared_ptr<const BmcVerdict> BmcMonitor::Latest(const std::string& node_id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = latest_.find(node_id);
  return it == latest_.end() ? nullptr : it->second;
}

void BmcMonitor::Schedule(const std::string& node_id) {
  if (!Configured(node_id)) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    const int64_t earliest = last_pull_.count(node_id)
                                 ? last_pull_[node_id] + config_.min_repull_seconds
                                 : 0;
    int64_t& due = due_[node_id];
    due = std::min(due, std::max(earliest, clock_.NowUnixSeconds()));
  }
  cv_.notify_all();
}

void BmcMonitor::ScheduleAll() {
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [id, due] : due_) due = 0;
  }
  cv_.notify_all();
}

void BmcMonitor::Run() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    const int64_t now = clock_.NowUnixSeconds();
    std::string next;
    int64_t next_due = INT64_MAX;
    for (const auto& [id, due] : due_) {
      if (due < next_due) {
        next_due = due;
        next = id;
      }
    }
    if (next.empty() || next_due > now) {
      // Wake at least every second: the clock may be stepped, and
      // Schedule() notifies.
      cv_.wait_for(l, std::chrono::seconds(1));
      continue;
    }
    due_[next] = now + config_.interval_seconds;
    l.unlock();
    StatusOr<std::shared_ptr<const BmcVerdict>> v = PullNow(next);
    if (v.ok() && listener_) listener_(next);
    l.lock();
  }
}

std::optional<MeasurementBaseline> BmcMonitor::StoredBaseline(const std::string& node_id,
                                                              const std::string& target,
                                                              Status* error) {
  StatusOr<HardwareRecord> r = store_.GetHardwareRecord(node_id, target + "-baseline");
  if (!r.ok()) {
    if (r.status().code() != StatusCode::kNotFound) *error = r.status();
    return std::nullopt;
  }
  return ParseStoredBaseline(*r, error);
}

StatusOr<std::shared_ptr<const BmcVerdict>> BmcMonitor::PullNow(const std::string& node_id) {
  auto cfg = config_.nodes.find(node_id);
  if (cfg == config_.nodes.end()) {
    return NotFoundError("node " + node_id + " has no BMC configured.");
  }
  std::lock_guard<std::mutex> one_at_a_time(pull_mu_);
  DPA_RETURN_IF_ERROR(store_.GetNode(node_id).status());
  const int64_t now = clock_.NowUnixSeconds();
  {
    std::lock_guard<std::mutex> l(mu_);
    last_pull_[node_id] = now;
  }
  bmc::BmcEvidence evidence;
  evidence.base_url = cfg->second.endpoint.base_url;
  evidence.collected_at = now;
  StatusOr<bmc::BmcCredentials> creds = bmc::LoadCredentialsFile(cfg->second.credentials_file);
  std::unique_ptr<bmc::RedfishClient> client;
  if (!creds.ok()) {
    evidence.errors[""] = creds.status().message();
  } else {
    StatusOr<std::unique_ptr<bmc::RedfishClient>> c =
        bmc::RedfishClient::Connect(cfg->second.endpoint, *std::move(creds));
    if (!c.ok()) {
      evidence.errors[""] = c.status().message();
    } else {
      client = *std::move(c);
    }
  }
  if (client) {
    bmc::CollectOptions co;
    co.now = now;
    co.deadline = std::chrono::milliseconds(config_.pull_deadline_ms);
    co.task_timeout = std::min(co.task_timeout, co.deadline);
    evidence = bmc::CollectBmcEvidence(*client, co);
  }
  if (!client) {
    // No session: both SPDM targets are unknown with the connection's reason.
    for (const char* id : {bmc::kIrotTarget, bmc::kErotTarget}) {
      bmc::SpdmTargetEvidence t;
      t.id = id;
      t.status = UnavailableError("the BMC could not be reached: " + evidence.errors[""]);
      evidence.targets.push_back(std::move(t));
    }
  }

  Status read_error;
  JudgeBmcInput in;
  in.node_id = node_id;
  in.evidence = &evidence;
  in.anchors = &anchors_;
  in.chain_cache = &chain_cache_;
  in.bmc_key_sha256 = cfg->second.endpoint.pinned_key_sha256;
  if (refs_) {
    if (std::shared_ptr<const RefIndex> refs = refs_()) {
      in.irot_referenced = SpdmReferencedIndices(*refs, kBmcModel, "irot");
      in.erot_referenced = SpdmReferencedIndices(*refs, kBmcModel, "erot");
    }
  }
  in.irot_baseline = StoredBaseline(node_id, "irot", &read_error);
  in.erot_baseline = StoredBaseline(node_id, "erot", &read_error);
  StatusOr<HardwareRecord> binding = store_.GetHardwareRecord(node_id, "bmc-binding");
  if (binding.ok()) {
    StatusOr<BmcBinding> b = ParseBmcBinding(binding->value_json);
    if (!b.ok()) return DataLossError("stored BMC binding of node " + node_id +
                                      " does not parse: " + b.status().message());
    in.binding = *b;
  } else if (binding.status().code() != StatusCode::kNotFound) {
    return binding.status();
  }
  DPA_RETURN_IF_ERROR(read_error);
  in.now = now;
  auto verdict = std::make_shared<BmcVerdict>(JudgeBmcPull(in));

  // First sight: record the baselines and the binding (never replaced by
  // a pull). A failure to store is the pull's error: nothing is cached.
  for (const SpdmTargetVerdict& t : verdict->targets) {
    if (t.first_seen && t.proposed) {
      DPA_RETURN_IF_ERROR(store_
                              .PutHardwareRecordIfAbsent(HardwareRecord{
                                  node_id, t.target + "-baseline", BaselineJson(*t.proposed),
                                  now, "first-seen",
                                  std::to_string(t.proposed->values.size()) +
                                      " signed measurements first seen from " + t.redfish_id})
                              .status());
    }
  }
  if (!in.binding && verdict->observed) {
    DPA_RETURN_IF_ERROR(
        store_
            .PutHardwareRecordIfAbsent(HardwareRecord{
                node_id, "bmc-binding", BmcBindingJson(*verdict->observed), now, "first-seen",
                "bound on first sight to IRoT DeviceID " +
                    verdict->observed->irot_deviceid_sha256.substr(0, 16) + " via " +
                    verdict->observed->bmc_url})
            .status());
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    latest_[node_id] = verdict;
  }
  return std::shared_ptr<const BmcVerdict>(verdict);
}

StatusOr<HardwareRecord> BmcMonitor::Rebind(const std::string& node_id, const std::string& by,
                                            const std::string& reason) {
  if (!Configured(node_id)) return NotFoundError("node " + node_id + " has no BMC configured.");
  std::shared_ptr<const BmcVerdict> v = Latest(node_id);
  if (!v || !v->observed) {
    return FailedPreconditionError("node " + node_id +
                                   " has no verified IRoT identity from its BMC yet; "
                                   "nothing to bind to.");
  }
  DPA_ASSIGN_OR_RETURN(HardwareRecord r,
                       store_.ReplaceHardwareRecord(HardwareRecord{
                           node_id, "bmc-binding", BmcBindingJson(*v->observed),
                           clock_.NowUnixSeconds(), by, reason}));
  Schedule(node_id);
  {
    std::lock_guard<std::mutex> l(mu_);
    due_[node_id] = 0;  // an administrator's change is re-checked at once
  }
  cv_.notify_all();
  return r;
}

StatusOr<HardwareRecord> BmcMonitor::ApproveBaseline(const std::string& node_id,
                                                     const std::string& target,
                                                     const std::string& by,
                                                     const std::string& reason) {
  if (target != "irot" && target != "erot") {
    return InvalidArgumentError("target must be \"irot\" or \"erot\", not " +
                                strict_json::Quote(target) + ".");
  }
  if (!Configured(node_id)) return NotFoundError("node " + node_id + " has no BMC configured.");
  std::shared_ptr<const BmcVerdict> v = Latest(node_id);
  const SpdmTargetVerdict* t = v ? v->Target(target) : nullptr;
  if (t == nullptr || !t->verified || !t->proposed) {
    return FailedPreconditionError("node " + node_id + " has no verified " + target +
                                   " measurements from its BMC yet; nothing to approve.");
  }
  DPA_ASSIGN_OR_RETURN(HardwareRecord r,
                       store_.ReplaceHardwareRecord(HardwareRecord{
                           node_id, target + "-baseline", BaselineJson(*t->proposed),
                           clock_.NowUnixSeconds(), by, reason}));
  {
    std::lock_guard<std::mutex> l(mu_);
    due_[node_id] = 0;
  }
  cv_.notify_all();
  return r;
}

}  // namespace dpuaudit::verifier
