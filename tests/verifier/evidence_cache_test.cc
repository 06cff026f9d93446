#include "verifier/evidence_cache.h"

#include <gtest/gtest.h>

namespace dpuaudit::verifier {
namespace evidence_cache_test {

std::shared_ptr<const report::HeldEvidence> Held(size_t bytes) {
  device::Evidence e;
  e.id = "file:/x";
  e.kind = device::EvidenceKind::kFile;
  e.path = "/x";
  e.raw = Bytes(bytes, 'x');
  std::vector<device::Evidence> v = {e};
  return std::make_shared<const report::HeldEvidence>(report::IndexHeldEvidence(v));
}

TEST(EvidenceCacheTest, BoundedPerNodeAndAcrossNodes) {
  EvidenceCacheLimits limits;
  limits.max_nodes = 3;
  limits.max_bytes = 1000;
  limits.max_node_bytes = 400;
  EvidenceCache cache(limits);
  const std::string a = EvidenceCache::OwnerKey("a", "ka");
  // Keyed by base: another base of the same node is a miss.
  cache.Put(a, "base1", Held(100));
  EXPECT_NE(cache.Get(a, "base1"), nullptr);
  EXPECT_EQ(cache.Get(a, "base2"), nullptr);
  // Keyed by node and key: another node, or the same node under another key, misses.
  EXPECT_EQ(cache.Get(EvidenceCache::OwnerKey("b", "ka"), "base1"), nullptr);
  EXPECT_EQ(cache.Get(EvidenceCache::OwnerKey("a", "kb"), "base1"), nullptr);
  // One base per node: a new one replaces the old.
  cache.Put(a, "base2", Held(200));
  EXPECT_EQ(cache.Get(a, "base1"), nullptr);
  EXPECT_NE(cache.Get(a, "base2"), nullptr);
  EXPECT_EQ(cache.nodes(), 1u);
  EXPECT_EQ(cache.bytes(), 200u);
  // Over the per-node limit: not kept (and the old entry is gone).
  cache.Put(a, "huge", Held(401));
  EXPECT_EQ(cache.Get(a, "huge"), nullptr);
  EXPECT_EQ(cache.Get(a, "base2"), nullptr);
  EXPECT_EQ(cache.bytes(), 0u);
  // Across nodes: least recently used evicted first, by count and by bytes.
  for (const char* n : {"n1", "n2", "n3"}) cache.Put(EvidenceCache::OwnerKey(n, "k"), "b", Held(300));
  EXPECT_EQ(cache.nodes(), 3u);
  EXPECT_EQ(cache.bytes(), 900u);
  ASSERT_NE(cache.Get(EvidenceCache::OwnerKey("n1", "k"), "b"), nullptr);  // n1 now recent
  cache.Put(EvidenceCache::OwnerKey("n4", "k"), "b", Held(300));  // evicts n2 (bytes)
  EXPECT_EQ(cache.Get(EvidenceCache::OwnerKey("n2", "k"), "b"), nullptr);
  EXPECT_NE(cache.Get(EvidenceCache::OwnerKey("n1", "k"), "b"), nullptr);
  EXPECT_NE(cache.Get(EvidenceCache::OwnerKey("n3", "k"), "b"), nullptr);
  EXPECT_NE(cache.Get(EvidenceCache::OwnerKey("n4", "k"), "b"), nullptr);
  EXPECT_LE(cache.bytes(), 1000u);
  cache.Put(EvidenceCache::OwnerKey("n5", "k"), "b", Held(10));  // count: evicts the LRU (n1)
  EXPECT_EQ(cache.nodes(), 3u);
  EXPECT_EQ(cache.Get(EvidenceCache::OwnerKey("n1", "k"), "b"), nullptr);
}

}  // namespace evidence_cache_test
}  // namespace dpuaudit::verifier
