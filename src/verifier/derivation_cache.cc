#include "verifier/derivation_cache.h"

#include <utility>

#include "common/crypto.h"
#include "common/strict_json.h"

namespace dpuaudit::verifier {

std::string DerivationCache::KeyOf(const report::ReportClaims& claims) {
  std::string in(kDerivationVersion);
  in += "\n";
  for (const device::Evidence& e : claims.evidence) {
    in += report::EvidenceItemDigest(e);
    in += "\n";
  }
  // The boot chain as parsed JSON, canonical (sorted, compact).
  in += strict_json::DumpJson(claims.boot_chain);
  return Sha256Hex(AsBytes(in));
}

std::shared_ptr<const isolation::DeviceFacts> DerivationCache::Get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.facts;
}

void DerivationCache::Put(const std::string& key,
                          std::shared_ptr<const isolation::DeviceFacts> facts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (max_entries_ == 0 || facts == nullptr || entries_.count(key) != 0) return;
  while (!lru_.empty() && entries_.size() + 1 > max_entries_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_.emplace(key, Entry{std::move(facts), lru_.begin()});
}

size_t DerivationCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace dpuaudit::verifier
