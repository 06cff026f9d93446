// SqliteStore enrollment and identity (issue 12) against real SQLite files:
// per-node enrollment tokens (hash only, single use, bound to id and
// serial, spent with the enrollment or not at all), squatter takeover,
// pending expiry and cap, approval pinned to a key and serial, rejection,
// revocation and admin re-enrollment, the history, and the added tables on
// a file made before them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <memory>
#include <optional>
#include <string>

#include "common/bytes.h"
#include "common/crypto.h"
#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::RawDb;
using ::testing::HasSubstr;

constexpr int64_t kNow = 1'700'000'000;
constexpr int64_t kTtl = 3600;

NodeRecord Node(const std::string& id, const std::string& key = "a",
                const std::string& serial = "") {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem =
      "-----BEGIN PUBLIC KEY-----\n" + key + "\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb-" + key;
  n.enrolled_at = kNow;
  n.claimed_serial = serial;
  return n;
}

TpmBinding Binding(const std::string& node_id, char ek) {
  TpmBinding b;
  b.node_id = node_id;
  b.ek_public_b64 = Base64Encode(AsBytes("ek-" + std::string(1, ek)));
  b.ek_sha256 = std::string(64, ek);
  b.ak_public_b64 = Base64Encode(AsBytes("ak"));
  b.ak_name_hex = "000b" + std::string(64, 'a');
  b.state = TpmBindingState::kPending;
  b.credential_sha256 = std::string(64, 'c');
  b.challenge_expires_at = kNow + 300;
  b.created_at = kNow;
  return b;
}

EnrollGrant Anonymous(int64_t now = kNow) {
  EnrollGrant g;
  g.now = now;
  g.pending_ttl_seconds = kTtl;
  g.max_pending = 100;
  return g;
}

class EnrollmentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }

  // Stores a token for `node_id` and returns its secret's hash.
  std::string Token(const std::string& node_id, const std::string& serial = "",
                    int64_t expires_at = kNow + 600) {
    std::string secret = "secret-" + std::to_string(++tokens_);
    EnrollmentToken t;
    t.token_sha256 = Sha256Hex(AsBytes(secret));
    t.token_id = t.token_sha256.substr(0, 16);
    t.node_id = node_id;
    t.serial = serial;
    t.created_by = "admin";
    t.created_at = kNow - 10;
    t.expires_at = expires_at;
    EXPECT_TRUE(store_->PutEnrollmentToken(t).ok());
    return t.token_sha256;
  }
  EnrollGrant WithToken(const std::string& sha, int64_t now = kNow) {
    EnrollGrant g = Anonymous(now);
    g.authority = EnrollAuthority::kBootstrapToken;
    g.token_sha256 = sha;
    return g;
  }
  bool Spent(const std::string& sha) {
    auto t = store_->GetEnrollmentToken(sha);
    EXPECT_TRUE(t.ok());
    return t.ok() && t->used_at.has_value();
  }
  ApprovalRequest Approval(const std::string& thumbprint,
                           const std::string& serial = "") {
    ApprovalRequest r;
    r.key_thumbprint = thumbprint;
    r.serial = serial;
    r.by = "op";
    r.now = kNow + 5;
    r.pending_ttl_seconds = kTtl;
    return r;
  }

  ::dpuaudit::testing::TestStoreDb db_;

  TempDir dir_;
  std::unique_ptr<SqlStore> store_;
  int tokens_ = 0;
};

TEST_F(EnrollmentStoreTest, TokenIsStoredAsItsHashOnly) {
  std::string sha = Token("n1");
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM enrollment_tokens"), 1);
  // The secrets are "secret-N"; no column holds them.
  EXPECT_EQ(raw.Int("SELECT count(*) FROM enrollment_tokens WHERE "
                    "token_sha256 LIKE 'secret%' OR token_id LIKE 'secret%'"),
            0);
  auto t = store_->GetEnrollmentToken(sha);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->token_id, sha.substr(0, 16));
  EnrollmentToken bad = *t;
  EXPECT_EQ(store_->PutEnrollmentToken(bad).code(), StatusCode::kAlreadyExists);
  bad.token_id = "0000000000000000";
  EXPECT_THAT(ValidateEnrollmentToken(bad).message(), HasSubstr("token_id"));
  EXPECT_EQ(store_->GetEnrollmentToken(std::string(64, 'f')).status().code(),
            StatusCode::kNotFound);
}

TEST_F(EnrollmentStoreTest, TokenEnrollsOnlyItsNodeAndSerialOnceAndApproves) {
  std::string sha = Token("n1");
  auto other = store_->EnrollNode(Node("n2"), std::nullopt, WithToken(sha));
  EXPECT_EQ(other.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(other.status().message(), HasSubstr("is for node \"n1\""));
  EXPECT_EQ(store_->GetNode("n2").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(Spent(sha));

  auto ok = store_->EnrollNode(Node("n1"), std::nullopt, WithToken(sha));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->state, NodeState::kApproved);
  EXPECT_EQ(ok->approved_at, kNow);
  EXPECT_THAT(ok->approved_by, HasSubstr("issued by admin"));
  EXPECT_TRUE(Spent(sha));
  auto again = store_->EnrollNode(Node("n1", "b"), std::nullopt, WithToken(sha));
  EXPECT_EQ(again.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(again.status().message(), HasSubstr("already used"));

  std::string bound = Token("s1", "MT1");
  auto no_serial = store_->EnrollNode(Node("s1"), std::nullopt, WithToken(bound));
  EXPECT_EQ(no_serial.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(no_serial.status().message(), HasSubstr("states no serial"));
  EXPECT_FALSE(Spent(bound));
  auto pinned =
      store_->EnrollNode(Node("s1", "a", "MT1"), std::nullopt, WithToken(bound));
  ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
  EXPECT_EQ(store_->GetNode("s1")->device_serial, "MT1");

  std::string old = Token("e1", "", kNow + 1);
  auto expired =
      store_->EnrollNode(Node("e1"), std::nullopt, WithToken(old, kNow + 1));
  EXPECT_EQ(expired.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(expired.status().message(), HasSubstr("expired at"));
}

TEST_F(EnrollmentStoreTest, TokenHolderTakesOverAPendingSquatterWithItsTpm) {
  ASSERT_TRUE(store_
                  ->EnrollNode(Node("x", "squat", "SQ"), Binding("x", 'e'),
                               Anonymous())
                  .ok());
  std::string sha = Token("x");
  auto taken = store_->EnrollNode(Node("x", "real"), Binding("x", 'f'),
                                  WithToken(sha, kNow + 1));
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  auto n = store_->GetNode("x");
  EXPECT_EQ(n->key_thumbprint, "thumb-real");
  EXPECT_EQ(n->state, NodeState::kApproved);
  EXPECT_EQ(n->claimed_serial, "");
  EXPECT_EQ(store_->GetTpmBinding("x")->ek_sha256, std::string(64, 'f'));
  auto h = store_->NodeHistory("x");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->size(), 3u);  // enrolled, key_replaced, approved
  EXPECT_EQ((*h)[1].event, "key_replaced");
  EXPECT_THAT((*h)[1].detail, HasSubstr("thumb-squat"));
  EXPECT_THAT((*h)[1].detail, HasSubstr("\"SQ\""));

  // An approved node with another key is not taken over; the token stays.
  std::string second = Token("x");
  auto refused =
      store_->EnrollNode(Node("x", "third"), std::nullopt, WithToken(second));
  EXPECT_EQ(refused.status().code(), StatusCode::kAlreadyExists);
  EXPECT_THAT(refused.status().message(), HasSubstr("revoke it first"));
  EXPECT_FALSE(Spent(second));
  EXPECT_EQ(store_->GetNode("x")->key_thumbprint, "thumb-real");
}

TEST_F(EnrollmentStoreTest, ApprovalPinsTheNamedKeyAndSerial) {
  ASSERT_TRUE(
      store_->EnrollNode(Node("p", "k", "MT7"), std::nullopt, Anonymous()).ok());
  auto wrong = store_->ApproveEnrollment("p", Approval("thumb-other"));
  EXPECT_EQ(wrong.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(wrong.status().message(), HasSubstr("thumb-k"));
  EXPECT_THAT(wrong.status().message(), HasSubstr("claimed serial \"MT7\""));
  auto serial = store_->ApproveEnrollment("p", Approval("thumb-k", "MT8"));
  EXPECT_EQ(serial.status().code(), StatusCode::kFailedPrecondition);
  ApprovalRequest no_by = Approval("thumb-k");
  no_by.by = "";
  EXPECT_EQ(store_->ApproveEnrollment("p", no_by).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetNode("p")->state, NodeState::kPending);

  auto ok = store_->ApproveEnrollment("p", Approval("thumb-k"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->device_serial, "MT7");
  EXPECT_EQ(store_->GetNode("p")->approved_by, "op");

  ASSERT_TRUE(store_->EnrollNode(Node("late"), std::nullopt, Anonymous()).ok());
  ApprovalRequest late = Approval("thumb-a");
  late.now = kNow + kTtl;
  auto expired = store_->ApproveEnrollment("late", late);
  EXPECT_EQ(expired.status().code(), StatusCode::kDeadlineExceeded);
}

TEST_F(EnrollmentStoreTest, PendingExpireAreCappedAndCanBeRejected) {
  EnrollGrant capped = Anonymous();
  capped.max_pending = 2;
  ASSERT_TRUE(store_->EnrollNode(Node("a"), Binding("a", 'e'), capped).ok());
  ASSERT_TRUE(store_->EnrollNode(Node("b"), std::nullopt, capped).ok());
  auto full = store_->EnrollNode(Node("c"), std::nullopt, capped);
  EXPECT_EQ(full.status().code(), StatusCode::kUnavailable);
  // Re-enrolling an existing pending node is not a new one.
  EXPECT_TRUE(store_->EnrollNode(Node("b"), std::nullopt, capped).ok());

  EXPECT_EQ(store_->RejectNode("a", "", "", kNow).code(),
            StatusCode::kInvalidArgument);
  ASSERT_TRUE(store_->RejectNode("a", "op", "squatter", kNow).ok());
  EXPECT_EQ(store_->GetNode("a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetTpmBinding("a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->NodeHistory("a")->back().event, "rejected");
  ASSERT_TRUE(store_->EnrollNode(Node("c"), std::nullopt, capped).ok());

  // Expiry: lazily for the id being enrolled, and by the purge.
  EnrollGrant later = Anonymous(kNow + kTtl);
  auto fresh = store_->EnrollNode(Node("b", "other"), std::nullopt, later);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(store_->GetNode("b")->key_thumbprint, "thumb-other");
  auto purged = store_->PurgeExpiredPendingNodes(kNow + kTtl, kTtl);
  ASSERT_TRUE(purged.ok());
  EXPECT_EQ(*purged, 1);  // c
  EXPECT_EQ(store_->GetNode("c").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(store_->GetNode("b").ok());

  std::string sha = Token("t");
  ASSERT_TRUE(store_->EnrollNode(Node("t"), std::nullopt, WithToken(sha)).ok());
  Status approved = store_->RejectNode("t", "op", "", kNow);
  EXPECT_EQ(approved.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(approved.message(), HasSubstr("use revoke"));
}

TEST_F(EnrollmentStoreTest, RevokedNodeReEnrollsOnlyWithAPerNodeToken) {
  std::string sha = Token("r");
  ASSERT_TRUE(store_->EnrollNode(Node("r"), Binding("r", 'e'), WithToken(sha)).ok());
  std::string before = Token("r");  // unused when the node is revoked
  EXPECT_EQ(store_->RevokeNodeFor("r", "alice", "", kNow).status().code(),
            StatusCode::kInvalidArgument);
  auto rv = store_->RevokeNodeFor("r", "alice", "key leaked", kNow + 1);
  ASSERT_TRUE(rv.ok());
  EXPECT_EQ(rv->state, NodeState::kRevoked);
  EXPECT_EQ(rv->revoked_at, kNow + 1);
  // Idempotent; the first record stays.
  EXPECT_EQ(store_->RevokeNodeFor("r", "bob", "again", kNow + 2)->revoked_by,
            "alice");
  EXPECT_EQ(store_->ApproveEnrollment("r", Approval("thumb-a")).status().code(),
            StatusCode::kFailedPrecondition);

  auto anon = store_->EnrollNode(Node("r"), std::nullopt, Anonymous(kNow + 3));
  EXPECT_EQ(anon.status().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(anon.status().message(), HasSubstr("key leaked"));
  EnrollGrant fleet = Anonymous(kNow + 3);
  fleet.authority = EnrollAuthority::kBootstrapToken;
  EXPECT_EQ(store_->EnrollNode(Node("r", "new"), std::nullopt, fleet)
                .status()
                .code(),
            StatusCode::kPermissionDenied);

  // A token issued before the revocation was revoked with the node.
  auto stale = store_->EnrollNode(Node("r", "new"), std::nullopt,
                                  WithToken(before, kNow + 3));
  EXPECT_EQ(stale.status().code(), StatusCode::kUnauthenticated);
  EXPECT_THAT(stale.status().message(), HasSubstr("revoked at"));
  std::string admin = Token("r");
  auto re = store_->EnrollNode(Node("r", "new"), std::nullopt,
                               WithToken(admin, kNow + 4));
  ASSERT_TRUE(re.ok()) << re.status().ToString();
  auto n = store_->GetNode("r");
  EXPECT_EQ(n->state, NodeState::kApproved);
  EXPECT_EQ(n->key_thumbprint, "thumb-new");
  EXPECT_FALSE(n->revoked_at.has_value());
  EXPECT_EQ(n->approved_at, kNow + 4);
  EXPECT_EQ(store_->GetTpmBinding("r").status().code(), StatusCode::kNotFound);
  auto h = store_->NodeHistory("r");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ((*h)[h->size() - 2].event, "re_enrolled");
  EXPECT_THAT((*h)[h->size() - 2].detail, HasSubstr("key leaked"));
}

TEST_F(EnrollmentStoreTest, AFileMadeBeforeTheEnrollmentTablesGainsThem) {
  DPA_SQLITE_ONLY("tables added to older SQLite files");
  std::string path = dir_.File("old.db");
  {
    auto s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->CreateNode(Node("old")).ok());
  }
  {
    RawDb raw(path);
    raw.Exec(
        "DROP TABLE node_details; DROP TABLE node_events; "
        "DROP TABLE enrollment_tokens; DROP INDEX nodes_by_state;");
  }
  auto s = SqliteStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto n = (*s)->GetNode("old");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->device_serial, "");
  EXPECT_TRUE((*s)->RevokeNodeFor("old", "op", "test", kNow).ok());
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE name IN "
                    "('node_details', 'node_events', 'enrollment_tokens', "
                    "'node_events_by_node', 'nodes_by_state')"),
            5);
}

}  // namespace
}  // namespace dpuaudit::verifier
