// Store::RegisterSigningKey / ExtendSigningKeyUse / ListSigningKeys and
// Store::RekeyNode on the SQLite store (issue 15, keys part).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "testing/temp_dir.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using TempDir = ::dpuaudit::testing::TempDir;

SigningKeyRecord Key(const std::string& kid, int64_t at, int64_t ttl = 300) {
  return SigningKeyRecord{kid, "{\"jwk\":\"" + kid + "\"}", at, at + 60, ttl, 0};
}

class SigningKeyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    auto store = db_.Open();
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  ::dpuaudit::testing::TestStoreDb db_;
  TempDir dir_;
  std::unique_ptr<SqlStore> store_;
};

TEST_F(SigningKeyStoreTest, LatestRegistrationIsCurrentAndUseOnlyGrows) {
  ASSERT_TRUE(store_->RegisterSigningKey(Key("A", 1000)).ok());
  ASSERT_TRUE(store_->RegisterSigningKey(Key("B", 2000, 100)).ok());
  ASSERT_TRUE(store_->ExtendSigningKeyUse("B", 2500).ok());
  ASSERT_TRUE(store_->ExtendSigningKeyUse("B", 2100).ok());  // never lowers
  EXPECT_EQ(store_->ExtendSigningKeyUse("C", 1).code(), StatusCode::kNotFound);
  auto keys = store_->ListSigningKeys();
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].kid, "B");
  EXPECT_EQ((*keys)[0].last_used_at, 2500);
  EXPECT_EQ((*keys)[1].kid, "A");
  EXPECT_EQ((*keys)[1].published_until(), 1060 + 300);
  // Back to A: current again, first use kept, TTL the larger.
  auto again = store_->RegisterSigningKey(Key("A", 3000, 200));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->first_used_at, 1000);
  EXPECT_EQ(again->last_used_at, 3060);
  EXPECT_EQ(again->max_result_ttl_seconds, 300);
  keys = store_->ListSigningKeys();
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ((*keys)[0].kid, "A");
  // The same kid with another public key is refused.
  SigningKeyRecord other = Key("A", 4000);
  other.public_jwk = "{}";
  EXPECT_EQ(store_->RegisterSigningKey(other).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(SigningKeyStoreTest, RekeyReplacesTheKeyAtomicallyOnlyForApprovedNodes) {
  NodeRecord n;
  n.node_id = "n1";
  n.public_key_pem = "old-pem";
  n.key_thumbprint = "old";
  n.enrolled_at = 900;
  ASSERT_TRUE(store_->CreateNode(n).ok());
  NodeRekey r{"old", "new-pem", "new", "ES256", 1000};
  EXPECT_EQ(store_->RekeyNode("n1", r).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->ApproveNode("n1", 950).ok());
  NodeRekey stale = r;
  stale.old_thumbprint = "someone-else";
  EXPECT_EQ(store_->RekeyNode("n1", stale).status().code(),
            StatusCode::kFailedPrecondition);
  auto done = store_->RekeyNode("n1", r);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  auto got = store_->GetNode("n1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->key_thumbprint, "new");
  EXPECT_EQ(got->public_key_pem, "new-pem");
  EXPECT_EQ(got->state, NodeState::kApproved);
  EXPECT_EQ(*got, *done);
  auto history = store_->NodeHistory("n1");
  ASSERT_TRUE(history.ok());
  ASSERT_FALSE(history->empty());
  EXPECT_EQ(history->back().event, "key_rotated");
  // The old key no longer matches: a second re-key from it is refused.
  EXPECT_EQ(store_->RekeyNode("n1", r).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(store_->RevokeNode("n1").ok());
  NodeRekey after{"new", "newer-pem", "newer", "ES256", 1100};
  EXPECT_EQ(store_->RekeyNode("n1", after).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(store_->GetNode("n1")->key_thumbprint, "new");
}

}  // namespace
}  // namespace dpuaudit::verifier
