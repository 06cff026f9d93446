// DerivationCache: the verifier's re-derivation of a report's evidence,
// kept by the digest of everything it reads (docs/architecture.md#report-format).
//
// isolation::CollectDeviceFacts over a report's evidence and its parsed
// boot chain is pure: the same evidence items (by item digest,
// report::EvidenceItemDigest, in the same order) and the same boot chain
// give the same DeviceFacts from the same build. KeyOf hashes exactly these
// inputs with kDerivationVersion; the cache lives in memory, so the probe
// code cannot change under it. What depends on anything else — the identity
// and consistency checks, the firmware facts' comparison with reference
// values, the TPM steps, the BMC path, the policy — is not cached and runs
// on the (cached) facts for every report.
//
// Guarantees: at most `max_entries` entries, the least recently used
// evicted first; entries are immutable (shared). Thread-safe.
// Does not: check the inputs. KeyOf trusts each item's sha256 to be the
// digest of its bytes, which report::ParseClaims (full items) and
// report::ResolveEvidence (by-digest items) established; claims built any
// other way must not be keyed.
#ifndef DPUAUDIT_VERIFIER_DERIVATION_CACHE_H_
#define DPUAUDIT_VERIFIER_DERIVATION_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "isolation/device_facts.h"
#include "report/claims.h"

namespace dpuaudit::verifier {

// Bump when what CollectDeviceFacts derives from the same inputs changes
// in a way a long-running process could see (it cannot today: the cache is
// per process).
inline constexpr std::string_view kDerivationVersion = "dpuaudit-derivation/1";

class DerivationCache {
 public:
  explicit DerivationCache(size_t max_entries = 4096) : max_entries_(max_entries) {}
  static std::string KeyOf(const report::ReportClaims& claims);
  std::shared_ptr<const isolation::DeviceFacts> Get(const std::string& key);
  void Put(const std::string& key, std::shared_ptr<const isolation::DeviceFacts> facts);
  size_t size() const;
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  struct Entry {
    std::shared_ptr<const isolation::DeviceFacts> facts;
    std::list<std::string>::iterator lru;
  };
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recent first
  std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_DERIVATION_CACHE_H_
