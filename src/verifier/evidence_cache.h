// EvidenceCache: the evidence a verifier holds in full for each node, in
// memory, in front of the store (docs/architecture.md#report-format).
//
// A dpuaudit-report/2 report may carry evidence items by digest; they are
// resolved against the node's base report, an accepted report of that node
// (admit or deny) that carried every item in full, named by the SHA-256 of
// its JWS (report::ReportClaims::evidence_base). The store holds the base
// (Store::GetAcceptedReport, shared by every replica); this cache keeps the
// latest base of each node so that resolution does not re-verify and
// re-parse it.
//
// Guarantees: entries are keyed by node id and key thumbprint, so a node
// never resolves against another node's evidence, nor against evidence
// signed under a key it no longer holds; one entry per node (the latest
// Put replaces it); at most `max_nodes` entries and `max_bytes` of raw and
// stderr bytes in all, the least recently used node evicted first; an
// entry over `max_node_bytes` is not kept (the store answers instead).
// Thread-safe.
// Does not: verify anything. Only evidence whose signature verified under
// the node's key, and that parsed, may be Put (verifier/service.cc).
#ifndef DPUAUDIT_VERIFIER_EVIDENCE_CACHE_H_
#define DPUAUDIT_VERIFIER_EVIDENCE_CACHE_H_

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/crypto.h"
#include "report/claims.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

struct EvidenceCacheLimits {
  size_t max_nodes = 16384;
  size_t max_bytes = size_t{128} << 20;
  size_t max_node_bytes = size_t{4} << 20;  // report::ClaimsLimits total
};

class EvidenceCache {
 public:
  explicit EvidenceCache(EvidenceCacheLimits limits = {}) : limits_(limits) {}
  // `owner`: node id and key thumbprint (OwnerKey).
  static std::string OwnerKey(const std::string& node_id,
                              const std::string& key_thumbprint);
  // The held evidence of `owner`'s base `base_sha256`, or nullptr.
  std::shared_ptr<const report::HeldEvidence> Get(
      const std::string& owner, const std::string& base_sha256);
  void Put(const std::string& owner, const std::string& base_sha256,
           std::shared_ptr<const report::HeldEvidence> held);
  size_t nodes() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::string base_sha256;
    std::shared_ptr<const report::HeldEvidence> held;
    std::list<std::string>::iterator lru;
  };
  void EraseLocked(std::map<std::string, Entry>::iterator it);
  const EvidenceCacheLimits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recent first
  size_t bytes_ = 0;
};

// The held evidence of `node`'s base report `base_sha256` as `store` keeps
// it: the accepted report of that node with that JWS digest, verified again
// under `verifier` (the node's current pinned key), parsed, for that node,
// with every item in full. nullptr, with the reason in *why, when there is
// no such usable report; a store failure is returned as is.
StatusOr<std::shared_ptr<const report::HeldEvidence>> LoadBaseEvidence(
    Store& store, const NodeRecord& node, const Verifier& verifier,
    const std::string& base_sha256, size_t max_report_bytes, std::string* why);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_EVIDENCE_CACHE_H_
