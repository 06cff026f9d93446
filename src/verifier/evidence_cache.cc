#include "verifier/evidence_cache.h"

#include <utility>

namespace dpuaudit::verifier {

std::string EvidenceCache::OwnerKey(const std::string& node_id,
                                    const std::string& key_thumbprint) {
  // Node ids never contain '\n' (report::ValidateNodeId).
  return node_id + "\n" + key_thumbprint;
}

std::shared_ptr<const report::HeldEvidence> EvidenceCache::Get(
    const std::string& owner, const std::string& base_sha256) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(owner);
  if (it == entries_.end() || it->second.base_sha256 != base_sha256) {
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.held;
}

void EvidenceCache::EraseLocked(std::map<std::string, Entry>::iterator it) {
  bytes_ -= it->second.held->bytes;
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

void EvidenceCache::Put(const std::string& owner,
                        const std::string& base_sha256,
                        std::shared_ptr<const report::HeldEvidence> held) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(owner); it != entries_.end()) EraseLocked(it);
  if (held == nullptr || held->bytes > limits_.max_node_bytes ||
      held->bytes > limits_.max_bytes || limits_.max_nodes == 0) {
    return;
  }
  while (!lru_.empty() && (entries_.size() + 1 > limits_.max_nodes ||
                           bytes_ + held->bytes > limits_.max_bytes)) {
    EraseLocked(entries_.find(lru_.back()));
  }
  lru_.push_front(owner);
  bytes_ += held->bytes;
  entries_.emplace(owner, Entry{base_sha256, std::move(held), lru_.begin()});
}

size_t EvidenceCache::nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t EvidenceCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

StatusOr<std::shared_ptr<const report::HeldEvidence>> LoadBaseEvidence(
    Store& store, const NodeRecord& node, const Verifier& verifier,
    const std::string& base_sha256, size_t max_report_bytes, std::string* why) {
  auto stored = store.GetAcceptedReport(node.node_id, base_sha256);
  if (!stored.ok()) {
    if (stored.status().code() != StatusCode::kNotFound) return stored.status();
    *why = "no accepted report " + base_sha256.substr(0, 16) + "… of this node is stored";
    return std::shared_ptr<const report::HeldEvidence>();
  }
  if (stored->jws.empty()) {
    *why = "the base report's body is no longer stored";
    return std::shared_ptr<const report::HeldEvidence>();
  }
  auto base = report::VerifyReport(stored->jws, verifier, max_report_bytes);
  if (!base.ok()) {
    *why = "the base report does not verify under the node's current key";
  } else if (base->claims.node_id != node.node_id) {
    *why = "the base report is not this node's";
  } else if (!base->claims.by_digest.empty()) {
    *why = "the base report carries evidence by digest itself";
  } else {
    return std::make_shared<const report::HeldEvidence>(
        report::IndexHeldEvidence(std::move(base->claims.evidence)));
  }
  return std::shared_ptr<const report::HeldEvidence>();
}

}  // namespace dpuaudit::verifier
