// verifier/audit_chain.h: the entry format, the chain rule and signed
// checkpoints (issue 16 §1).
#include "verifier/audit_chain.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "common/crypto.h"
#include "report/report_test_util.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using report::testing::TestKey;

std::vector<ChainedEntry> Chain(int n) {
  std::vector<ChainedEntry> out;
  std::string prev(kAuditGenesisHash);
  for (int i = 1; i <= n; ++i) {
    AuditEntry e;
    e.seq = i;
    e.time = 1000 + i;
    e.kind = std::string(kAuditResult);
    e.node_id = "n1";
    e.data = {{"result_id", i}, {"decision", "admit"}};
    std::string canonical = CanonicalAuditEntry(e);
    std::string h = *AuditEntryHash(prev, canonical);
    out.push_back({i, canonical, prev, h});
    prev = h;
  }
  return out;
}

TEST(AuditChainTest, CanonicalEntryIsSortedCompactAndParsesBack) {
  AuditEntry e;
  e.seq = 7;
  e.time = 42;
  e.kind = "report.accepted";
  e.node_id = "bf3-a";
  e.data = {{"z", 1}, {"a", "x"}};
  const std::string c = CanonicalAuditEntry(e);
  EXPECT_EQ(c, R"({"data":{"a":"x","z":1},"kind":"report.accepted","node":"bf3-a","seq":7,"time":42})");
  auto back = ParseAuditEntry(c);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->seq, 7);
  EXPECT_EQ(back->data["a"], "x");
  // Whitespace, an unknown kind, a missing member: refused.
  EXPECT_THAT(ParseAuditEntry(R"({"data":{},"kind":"result","node":"n","seq":1, "time":1})")
                  .status().message(), HasSubstr("canonical"));
  EXPECT_THAT(ParseAuditEntry(R"({"data":{},"kind":"nope","node":"n","seq":1,"time":1})")
                  .status().message(), HasSubstr("not a known entry kind"));
  EXPECT_FALSE(ParseAuditEntry(R"({"data":{},"kind":"result","seq":1,"time":1})").ok());
  EXPECT_FALSE(ParseAuditEntry(R"({"data":{},"kind":"result","node":"n","seq":0,"time":1})").ok());
}

TEST(AuditChainTest, HashIsSha256OfThePreviousHashBytesAndTheEntry) {
  const std::string entry = R"({"data":{},"kind":"result","node":"n","seq":1,"time":1})";
  Bytes input(32, 0);
  input.insert(input.end(), entry.begin(), entry.end());
  EXPECT_EQ(*AuditEntryHash(kAuditGenesisHash, entry), Sha256Hex(input));
  EXPECT_FALSE(AuditEntryHash("abc", entry).ok());
}

TEST(AuditChainTest, AnIntactChainVerifiesAndEachBreakIsNamed) {
  std::vector<ChainedEntry> c = Chain(6);
  EXPECT_TRUE(VerifyAuditChain(c, kAuditGenesisHash).ok());
  // A segment verifies from its first prev_hash.
  std::vector<ChainedEntry> tail(c.begin() + 2, c.end());
  EXPECT_TRUE(VerifyAuditChain(tail, tail.front().prev_hash).ok());

  auto changed = c;
  changed[3].entry = changed[3].entry.substr(0, changed[3].entry.size() - 2) + "9}";
  Status s = VerifyAuditChain(changed, kAuditGenesisHash);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("audit log entry 4:"));

  auto removed = c;
  removed.erase(removed.begin() + 2);
  EXPECT_THAT(VerifyAuditChain(removed, kAuditGenesisHash).message(),
              HasSubstr("audit log entry 4: expected seq 3"));

  auto reordered = c;
  std::swap(reordered[1], reordered[2]);
  EXPECT_THAT(VerifyAuditChain(reordered, kAuditGenesisHash).message(),
              HasSubstr("audit log entry 3: expected seq 2"));

  // Renumbered to hide the gap: the prev_hash link breaks.
  auto renumbered = Chain(6);
  renumbered.erase(renumbered.begin() + 2);
  for (size_t i = 2; i < renumbered.size(); ++i) renumbered[i].seq -= 1;
  EXPECT_FALSE(VerifyAuditChain(renumbered, kAuditGenesisHash).ok());

  auto relinked = c;  // a consistent rewrite of entry 2 breaks entry 3's link
  relinked[1].entry = relinked[1].entry.substr(0, relinked[1].entry.size() - 2) + "7}";
  relinked[1].entry_hash = *AuditEntryHash(relinked[1].prev_hash, relinked[1].entry);
  EXPECT_THAT(VerifyAuditChain(relinked, kAuditGenesisHash).message(),
              HasSubstr("audit log entry 3: prev_hash"));
}

TEST(AuditChainTest, CheckpointVerifiesOnlyUnderThePinnedKey) {
  TestKey key = TestKey::New();
  const std::string kid = key.priv->public_key().Thumbprint();
  Checkpoint cp{6, Chain(6).back().entry_hash, 1234, "v1"};
  auto jws = SignCheckpoint(cp, *key.signer, kid);
  ASSERT_TRUE(jws.ok());
  auto pinned = report::TrustedKeys::FromPem(key.priv->public_key().ToPem(), "test", 0);
  ASSERT_TRUE(pinned.ok());
  std::string used;
  auto back = VerifyCheckpoint(*jws, *pinned, &used);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, cp);
  EXPECT_EQ(used, kid);

  TestKey other = TestKey::New();
  auto other_pins = report::TrustedKeys::FromPem(other.priv->public_key().ToPem(), "o", 0);
  EXPECT_EQ(VerifyCheckpoint(*jws, *other_pins).status().code(), StatusCode::kUnauthenticated);
  // Signed by another key under our kid: the signature fails.
  auto forged = SignCheckpoint(cp, *other.signer, kid);
  EXPECT_EQ(VerifyCheckpoint(*forged, *pinned).status().code(), StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace dpuaudit::verifier
