// SqliteStore against real SQLite files in a fresh temporary directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;

using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::RawDb;


NodeRecord Node(const std::string& id, const std::string& key = "key-a") {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem =
      "-----BEGIN PUBLIC KEY-----\n" + key + "\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb-" + key;
  n.alg = "ES256";
  n.state = NodeState::kPending;
  n.enrolled_at = 1000;
  return n;
}

ReportRecord Report(const std::string& node_id, const std::string& sha) {
  ReportRecord r;
  r.node_id = node_id;
  r.jws = "eyJhbGciOiJFUzI1NiJ9.payload.sig";
  r.sha256 = sha;
  r.received_at = 2000;
  r.accepted = true;
  return r;
}

ResultRecord Result(const std::string& node_id, const std::string& sha,
                    int64_t created_at = 2000) {
  ResultRecord r;
  r.node_id = node_id;
  r.decision = "admit";
  r.ear_jwt = "ear.jwt.sig";
  r.reasons_json = R"([{"rule":"host.privilege_level","verdict":"pass"}])";
  r.report_jws_sha256 = sha;
  r.created_at = created_at;
  r.expires_at = created_at + 300;
  return r;
}

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    auto store = db_.Open();
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  void Reopen() {
    store_.reset();
    auto store = db_.Open();
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  void Enroll(const std::string& id) {
    ASSERT_TRUE(store_->CreateNode(Node(id)).ok());
  }

  ::dpuaudit::testing::TestStoreDb db_;

  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
};

// --- Open --------------------------------------------------------------------

TEST_F(StoreTest, OpenConfiguresWalSchemaVersionAndApplicationId) {
  DPA_SQLITE_ONLY("PRAGMAs of the file");
  auto& raw = db_;
  EXPECT_EQ(raw.Text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.Int("PRAGMA user_version"), SqliteStore::kSchemaVersion);
  EXPECT_EQ(raw.Int("PRAGMA application_id"), 0x44504131);
}

TEST_F(StoreTest, OpenTwiceSharesTheFile) {
  auto second = db_.Open();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  Enroll("n1");
  auto node = (*second)->GetNode("n1");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->node_id, "n1");
}

TEST(StoreOpenTest, EmptyPath) {
  auto s = SqliteStore::Open("");
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), "sqlite: path is empty.");
}

TEST(StoreOpenTest, MissingDirectory) {
  TempDir dir;
  std::string path = dir.File("no/such/dir/v.db");
  auto s = SqliteStore::Open(path);
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.status().message(),
            "sqlite: opening " + path + ": unable to open database file.");
}

TEST(StoreOpenTest, InMemoryIsRefusedBecauseItCannotBeWal) {
  auto s = SqliteStore::Open(":memory:");
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "sqlite: journal_mode is \"memory\", not \"wal\".");
}

TEST(StoreOpenTest, NotADatabase) {
  TempDir dir;
  std::string path = dir.File("garbage.db");
  std::ofstream(path) << std::string(4096, 'x');
  auto s = SqliteStore::Open(path);
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.status().message(),
            "sqlite: preparing statement: file is not a database.");
}

TEST(StoreOpenTest, NewerSchemaVersionIsRefused) {
  TempDir dir;
  std::string path = dir.File("v.db");
  RawDb(path).Exec("PRAGMA user_version = 7;");
  auto s = SqliteStore::Open(path);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "sqlite: schema version 7 is not supported by this build "
            "(expects 1).");
}

TEST(StoreOpenTest, ForeignDatabaseWithoutVersionIsRefusedAndUntouched) {
  TempDir dir;
  std::string path = dir.File("v.db");
  RawDb(path).Exec("CREATE TABLE other (x INTEGER);");
  auto s = SqliteStore::Open(path);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "sqlite: the database has tables but no dpuaudit schema version; "
            "refusing to use it.");
  RawDb raw(path);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema"), 1);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), 0);
}

TEST(StoreOpenTest, OtherApplicationIsRefused) {
  TempDir dir;
  std::string path = dir.File("v.db");
  RawDb(path).Exec("PRAGMA user_version = 1;");
  auto s = SqliteStore::Open(path);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "sqlite: the database is not a dpuaudit store (application_id "
            "0).");
}

// --- Nodes -------------------------------------------------------------------

TEST_F(StoreTest, CreateAndGetNode) {
  auto created = store_->CreateNode(Node("n1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(*created, Node("n1"));
  auto got = store_->GetNode("n1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Node("n1"));
  EXPECT_FALSE(got->approved_at.has_value());
}

TEST_F(StoreTest, ReenrollWithSameKeyIsIdempotentAndKeepsState) {
  Enroll("n1");
  ASSERT_TRUE(store_->ApproveNode("n1", 1500).ok());
  NodeRecord again = Node("n1");
  again.enrolled_at = 9999;
  auto got = store_->CreateNode(again);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->state, NodeState::kApproved);
  EXPECT_EQ(got->enrolled_at, 1000);
  EXPECT_EQ(got->approved_at, 1500);
}

TEST_F(StoreTest, ReenrollWithDifferentKeyIsRefusedAndLeavesNodeIntact) {
  Enroll("n1");
  auto s = store_->CreateNode(Node("n1", "key-b"));
  EXPECT_EQ(s.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.status().message(),
            "node \"n1\" is already enrolled with a different key.");
  EXPECT_EQ(*store_->GetNode("n1"), Node("n1"));
}

TEST_F(StoreTest, ReenrollWithDifferentAlgIsRefused) {
  Enroll("n1");
  NodeRecord other = Node("n1");
  other.alg = "ES384";
  auto s = store_->CreateNode(other);
  EXPECT_EQ(s.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.status().message(),
            "node \"n1\" is already enrolled with a different key.");
}

TEST_F(StoreTest, CreateNodeValidatesFields) {
  struct Case {
    const char* name;
    void (*mutate)(NodeRecord&);
    const char* message;
  };
  const Case cases[] = {
      {"id", [](NodeRecord& n) { n.node_id.clear(); }, "node_id is empty."},
      {"pem", [](NodeRecord& n) { n.public_key_pem.clear(); },
       "public_key_pem is empty."},
      {"thumb", [](NodeRecord& n) { n.key_thumbprint.clear(); },
       "key_thumbprint is empty."},
      {"alg", [](NodeRecord& n) { n.alg.clear(); }, "alg is empty."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    NodeRecord n = Node("n1");
    c.mutate(n);
    auto s = store_->CreateNode(n);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), c.message);
  }
  EXPECT_TRUE(store_->ListNodes()->empty());
}

TEST_F(StoreTest, GetUnknownNode) {
  auto s = store_->GetNode("ghost");
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "node \"ghost\" is not enrolled.");
}

TEST_F(StoreTest, ApproveNodeOnceKeepsFirstApprovalTime) {
  Enroll("n1");
  auto a = store_->ApproveNode("n1", 1500);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->state, NodeState::kApproved);
  EXPECT_EQ(a->approved_at, 1500);
  auto b = store_->ApproveNode("n1", 1600);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->approved_at, 1500);
  EXPECT_EQ(*store_->GetNode("n1"), *a);
}

TEST_F(StoreTest, ApproveUnknownNode) {
  auto s = store_->ApproveNode("ghost", 1);
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "node \"ghost\" is not enrolled.");
}

TEST_F(StoreTest, ApproveRevokedNodeIsRefused) {
  Enroll("n1");
  auto revoked = store_->RevokeNode("n1");
  ASSERT_TRUE(revoked.ok()) << revoked.status().ToString();
  EXPECT_EQ(revoked->state, NodeState::kRevoked);
  auto s = store_->ApproveNode("n1", 1500);
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(),
            "node \"n1\" is revoked and cannot be approved.");
  EXPECT_EQ(store_->GetNode("n1")->state, NodeState::kRevoked);
}

TEST_F(StoreTest, RevokeIsIdempotentAndUnknownIsNotFound) {
  Enroll("n1");
  ASSERT_TRUE(store_->RevokeNode("n1").ok());
  EXPECT_EQ(store_->RevokeNode("n1")->state, NodeState::kRevoked);
  auto s = store_->RevokeNode("ghost");
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "node \"ghost\" is not enrolled.");
}

TEST_F(StoreTest, ListNodesIsOrderedById) {
  Enroll("c");
  Enroll("a");
  Enroll("b");
  auto nodes = store_->ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].node_id, "a");
  EXPECT_EQ((*nodes)[1].node_id, "b");
  EXPECT_EQ((*nodes)[2].node_id, "c");
}

TEST_F(StoreTest, NodeStateNamesRoundTrip) {
  for (NodeState s :
       {NodeState::kPending, NodeState::kApproved, NodeState::kRevoked}) {
    EXPECT_EQ(ParseNodeState(NodeStateName(s)), s);
  }
  EXPECT_EQ(ParseNodeState("Approved"), std::nullopt);
}

// --- Nonces ------------------------------------------------------------------

TEST_F(StoreTest, NonceIsSingleUse) {
  Enroll("n1");
  ASSERT_TRUE(store_->InsertNonce("nonce-1", "n1", 1000, 1060).ok());
  EXPECT_TRUE(store_->ConsumeNonce("nonce-1", "n1", 1010).ok());
  Status replay = store_->ConsumeNonce("nonce-1", "n1", 1011);
  EXPECT_EQ(replay.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(replay.message(), "nonce already used.");
}

TEST_F(StoreTest, UnknownNonce) {
  Enroll("n1");
  Status s = store_->ConsumeNonce("never-issued", "n1", 1000);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "unknown nonce.");
}

TEST_F(StoreTest, WrongNodeIsRefusedWithoutSpendingTheNonce) {
  Enroll("a");
  Enroll("b");
  ASSERT_TRUE(store_->InsertNonce("nonce-a", "a", 1000, 1060).ok());
  Status s = store_->ConsumeNonce("nonce-a", "b", 1010);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "nonce was issued to another node.");
  EXPECT_TRUE(store_->ConsumeNonce("nonce-a", "a", 1011).ok());
}

TEST_F(StoreTest, NonceIssuedAtReadsWithoutSpending) {
  Enroll("a");
  Enroll("b");
  ASSERT_TRUE(store_->InsertNonce("nonce-a", "a", 1000, 1060).ok());
  EXPECT_EQ(store_->NonceIssuedAt("nonce-a", "a").value(), 1000);
  auto other = store_->NonceIssuedAt("nonce-a", "b");
  EXPECT_EQ(other.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(other.status().message(), "nonce was issued to another node.");
  auto unknown = store_->NonceIssuedAt("never-issued", "a");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "unknown nonce.");
  // Reading spent nothing; a used nonce still has its issue time.
  ASSERT_TRUE(store_->ConsumeNonce("nonce-a", "a", 1010).ok());
  EXPECT_EQ(store_->NonceIssuedAt("nonce-a", "a").value(), 1000);
}

TEST_F(StoreTest, WrongNodeDoesNotLearnThatTheNonceWasUsed) {
  Enroll("a");
  Enroll("b");
  ASSERT_TRUE(store_->InsertNonce("nonce-a", "a", 1000, 1060).ok());
  ASSERT_TRUE(store_->ConsumeNonce("nonce-a", "a", 1010).ok());
  Status s = store_->ConsumeNonce("nonce-a", "b", 1011);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "nonce was issued to another node.");
}

TEST_F(StoreTest, NonceExpiresAtExpiresAtAndExpiredConsumeChangesNothing) {
  Enroll("n1");
  ASSERT_TRUE(store_->InsertNonce("nonce-1", "n1", 1000, 1060).ok());
  Status late = store_->ConsumeNonce("nonce-1", "n1", 1060);
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(late.message(), "nonce expired at 1060.");
  // The refusal did not spend it: a consume inside the window still works.
  EXPECT_TRUE(store_->ConsumeNonce("nonce-1", "n1", 1059).ok());
}

TEST_F(StoreTest, UsedBeatsExpiredInTheErrorOrder) {
  Enroll("n1");
  ASSERT_TRUE(store_->InsertNonce("nonce-1", "n1", 1000, 1060).ok());
  ASSERT_TRUE(store_->ConsumeNonce("nonce-1", "n1", 1001).ok());
  Status s = store_->ConsumeNonce("nonce-1", "n1", 5000);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "nonce already used.");
}

TEST_F(StoreTest, InsertNonceForUnknownNode) {
  Status s = store_->InsertNonce("nonce-1", "ghost", 1000, 1060);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "node \"ghost\" is not enrolled.");
}

TEST_F(StoreTest, DuplicateNonceIsRefusedAndOriginalStaysBound) {
  Enroll("a");
  Enroll("b");
  ASSERT_TRUE(store_->InsertNonce("nonce-1", "a", 1000, 1060).ok());
  Status s = store_->InsertNonce("nonce-1", "b", 1000, 9999);
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), "nonce was already issued.");
  Status late = store_->ConsumeNonce("nonce-1", "a", 1060);
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded);  // old expiry kept
  EXPECT_EQ(store_->ConsumeNonce("nonce-1", "b", 1010).code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(store_->ConsumeNonce("nonce-1", "a", 1010).ok());
}

TEST_F(StoreTest, InsertNonceValidatesArguments) {
  Enroll("n1");
  struct Case {
    const char* nonce;
    const char* node;
    int64_t issued, expires;
    const char* message;
  };
  const Case cases[] = {
      {"", "n1", 1000, 1060, "nonce is empty."},
      {"x", "", 1000, 1060, "node_id is empty."},
      {"x", "n1", 1000, 1000,
       "nonce expires_at 1000 is not after issued_at 1000."},
      {"x", "n1", 1000, 999,
       "nonce expires_at 999 is not after issued_at 1000."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    Status s = store_->InsertNonce(c.nonce, c.node, c.issued, c.expires);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.message);
  }
  EXPECT_EQ(db_.Int("SELECT count(*) FROM nonces"), 0);
}

TEST_F(StoreTest, PurgeExpiredNonces) {
  Enroll("n1");
  ASSERT_TRUE(store_->InsertNonce("old-used", "n1", 900, 960).ok());
  ASSERT_TRUE(store_->ConsumeNonce("old-used", "n1", 901).ok());
  ASSERT_TRUE(store_->InsertNonce("old", "n1", 940, 1000).ok());
  ASSERT_TRUE(store_->InsertNonce("fresh", "n1", 1000, 1060).ok());
  auto purged = store_->PurgeExpiredNonces(1000);
  ASSERT_TRUE(purged.ok()) << purged.status().ToString();
  EXPECT_EQ(*purged, 2);
  Status s = store_->ConsumeNonce("old", "n1", 999);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "unknown nonce.");
  EXPECT_TRUE(store_->ConsumeNonce("fresh", "n1", 1001).ok());
  EXPECT_EQ(*store_->PurgeExpiredNonces(1000), 0);
}

// Many threads on one SqliteStore: the mutex and the single UPDATE.
TEST_F(StoreTest, ConcurrentConsumesOnOneConnectionSucceedOnce) {
  Enroll("n1");
  constexpr int kNonces = 20;
  constexpr int kThreads = 8;
  for (int i = 0; i < kNonces; ++i) {
    ASSERT_TRUE(
        store_->InsertNonce("race-" + std::to_string(i), "n1", 1000, 1060)
            .ok());
  }
  for (int i = 0; i < kNonces; ++i) {
    std::string nonce = "race-" + std::to_string(i);
    std::atomic<int> ok{0}, replay{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        Status s = store_->ConsumeNonce(nonce, "n1", 1010);
        if (s.ok()) {
          ++ok;
        } else if (s.code() == StatusCode::kFailedPrecondition) {
          ++replay;
        } else {
          ++other;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok.load(), 1) << nonce;
    EXPECT_EQ(replay.load(), kThreads - 1) << nonce;
    EXPECT_EQ(other.load(), 0) << nonce;
  }
}

// Separate connections to one file (as separate verifier processes would
// have): only the database's own atomicity stands between them.
TEST_F(StoreTest, ConcurrentConsumesAcrossConnectionsSucceedOnce) {
  Enroll("n1");
  constexpr int kConnections = 4;
  constexpr int kNonces = 20;
  std::vector<std::unique_ptr<SqlStore>> stores;
  for (int c = 0; c < kConnections; ++c) {
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    stores.push_back(std::move(s).value());
  }
  for (int i = 0; i < kNonces; ++i) {
    ASSERT_TRUE(
        store_->InsertNonce("x-" + std::to_string(i), "n1", 1000, 1060).ok());
  }
  std::atomic<int> ok{0}, replay{0}, other{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kConnections; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < kNonces; ++i) {
        Status s =
            stores[c]->ConsumeNonce("x-" + std::to_string(i), "n1", 1010);
        if (s.ok()) {
          ++ok;
        } else if (s.code() == StatusCode::kFailedPrecondition) {
          ++replay;
        } else {
          ++other;
          ADD_FAILURE() << s.ToString();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), kNonces);
  EXPECT_EQ(replay.load(), kNonces * (kConnections - 1));
  EXPECT_EQ(other.load(), 0);
}

// --- Reports and results -----------------------------------------------------

TEST_F(StoreTest, InsertReportKeepsRejectedReportsFromUnknownNodes) {
  ReportRecord rejected = Report("ghost", "aa");
  rejected.accepted = false;
  rejected.error = "signature does not verify.";
  rejected.jws = std::string("\x00\xff not a jws", 12);
  auto id1 = store_->InsertReport(rejected);
  ASSERT_TRUE(id1.ok()) << id1.status().ToString();
  auto id2 = store_->InsertReport(rejected);
  ASSERT_TRUE(id2.ok()) << id2.status().ToString();
  EXPECT_GT(*id2, *id1);
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports WHERE accepted = 0"), 2);
  EXPECT_EQ(raw.Text("SELECT jws FROM reports ORDER BY id LIMIT 1"),
            rejected.jws);
}

TEST_F(StoreTest, InsertReportValidates) {
  struct Case {
    void (*mutate)(ReportRecord&);
    const char* message;
  };
  const Case cases[] = {
      {[](ReportRecord& r) { r.sha256.clear(); }, "report sha256 is empty."},
      {[](ReportRecord& r) { r.error = "x"; },
       "an accepted report must not carry an error."},
      {[](ReportRecord& r) { r.accepted = false; },
       "a rejected report must say why (error)."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    ReportRecord r = Report("n1", "aa");
    c.mutate(r);
    auto s = store_->InsertReport(r);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), c.message);
  }
  EXPECT_EQ(db_.Int("SELECT count(*) FROM reports"), 0);
}

TEST_F(StoreTest, InsertResultAndLatestResult) {
  Enroll("n1");
  auto id = store_->InsertResult(Result("n1", "aa"), Report("n1", "aa"));
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  auto latest = store_->LatestResult("n1");
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  ResultRecord want = Result("n1", "aa");
  want.id = *id;
  EXPECT_EQ(*latest, want);
  EXPECT_EQ(db_.Int("SELECT count(*) FROM reports"), 1);
}

TEST_F(StoreTest, LatestResultIsTheLastStoredWhateverItsTimestamp) {
  Enroll("n1");
  Enroll("n2");
  // An admit at t=3000, then (the clock stepped back) a deny at t=2000:
  // the deny is the latest, though its timestamp is the smaller.
  ASSERT_TRUE(
      store_->InsertResult(Result("n1", "a", 3000), Report("n1", "a")).ok());
  ResultRecord deny = Result("n1", "b", 2000);
  deny.decision = "deny";
  auto deny_id = store_->InsertResult(deny, Report("n1", "b"));
  ASSERT_TRUE(deny_id.ok());
  ASSERT_TRUE(
      store_->InsertResult(Result("n2", "d", 9000), Report("n2", "d")).ok());
  auto latest = store_->LatestResult("n1");
  ASSERT_TRUE(latest.ok()) << latest.status().ToString();
  EXPECT_EQ(latest->id, *deny_id);
  EXPECT_EQ(latest->decision, "deny");
  EXPECT_EQ(latest->created_at, 2000);
}

TEST_F(StoreTest, ReappraisalPointsAtTheStoredReport) {
  Enroll("n1");
  ASSERT_TRUE(
      store_->InsertResult(Result("n1", "aa", 3000), Report("n1", "aa")).ok());
  auto report = store_->GetAcceptedReport("n1", "aa");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->jws, Report("n1", "aa").jws);
  ResultRecord deny = Result("n1", "aa", 3100);
  deny.decision = "deny";
  auto id = store_->InsertReappraisal(deny);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(store_->LatestResult("n1")->decision, "deny");
  // One report row only: the re-appraisal points at it.
  EXPECT_EQ(db_.Int("SELECT count(*) FROM reports"), 1);
  EXPECT_EQ(db_.Int("SELECT count(DISTINCT report_id) FROM results"), 1);
  ResultRecord orphan = Result("n1", "bb", 3100);
  auto missing = store_->InsertReappraisal(orphan);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "no accepted report \"bb\" of node \"n1\" is stored.");
  EXPECT_EQ(store_->GetAcceptedReport("n1", "bb").status().code(),
            StatusCode::kNotFound);
}

TEST_F(StoreTest, LatestResultNone) {
  Enroll("n1");
  auto s = store_->LatestResult("n1");
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "no result for node \"n1\".");
}

TEST_F(StoreTest, InsertResultValidates) {
  Enroll("n1");
  struct Case {
    void (*mutate)(ResultRecord&, ReportRecord&);
    const char* message;
  };
  const Case cases[] = {
      {[](ResultRecord& r, ReportRecord&) { r.decision = "maybe"; },
       "result decision \"maybe\" must be admit or deny."},
      {[](ResultRecord& r, ReportRecord&) { r.node_id.clear(); },
       "result node_id is empty."},
      {[](ResultRecord&, ReportRecord& p) {
         p.accepted = false;
         p.error = "bad signature.";
       },
       "a result needs an accepted report."},
      {[](ResultRecord&, ReportRecord& p) { p.node_id = "n2"; },
       "result and report name different nodes."},
      {[](ResultRecord& r, ReportRecord&) { r.report_jws_sha256 = "bb"; },
       "result report_jws_sha256 does not match the report's sha256."},
      {[](ResultRecord& r, ReportRecord&) { r.expires_at = r.created_at - 1; },
       "result expires_at is before created_at."},
      {[](ResultRecord&, ReportRecord& p) { p.sha256.clear(); },
       "report sha256 is empty."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    ResultRecord r = Result("n1", "aa");
    ReportRecord p = Report("n1", "aa");
    c.mutate(r, p);
    auto s = store_->InsertResult(r, p);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), c.message);
  }
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports"), 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results"), 0);
}

// The report is written first in the transaction; the result then fails on
// the foreign key, and the report must be rolled back with it.
TEST_F(StoreTest, FailedInsertResultStoresNothingAndKeepsPriorState) {
  Enroll("n1");
  auto first = store_->InsertResult(Result("n1", "aa"), Report("n1", "aa"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto s = store_->InsertResult(Result("ghost", "bb"), Report("ghost", "bb"));
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(s.status().message(), "node \"ghost\" is not enrolled.");
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports"), 1);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results"), 1);
  EXPECT_EQ(store_->LatestResult("n1")->id, *first);
  // The store is still usable after the rollback.
  EXPECT_TRUE(
      store_->InsertResult(Result("n1", "cc"), Report("n1", "cc")).ok());
}

// --- Durability --------------------------------------------------------------

TEST_F(StoreTest, DataSurvivesCloseAndReopen) {
  Enroll("n1");
  Enroll("n2");
  ASSERT_TRUE(store_->ApproveNode("n1", 1500).ok());
  ASSERT_TRUE(store_->InsertNonce("used", "n1", 1000, 1060).ok());
  ASSERT_TRUE(store_->ConsumeNonce("used", "n1", 1001).ok());
  ASSERT_TRUE(store_->InsertNonce("open", "n1", 1000, 1060).ok());
  auto result_id = store_->InsertResult(Result("n1", "aa"), Report("n1", "aa"));
  ASSERT_TRUE(result_id.ok());
  NodeRecord n1 = *store_->GetNode("n1");

  Reopen();

  EXPECT_EQ(*store_->GetNode("n1"), n1);
  EXPECT_EQ(store_->ListNodes()->size(), 2u);
  EXPECT_EQ(store_->ConsumeNonce("used", "n1", 1002).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store_->ConsumeNonce("open", "n1", 1002).ok());
  EXPECT_EQ(store_->LatestResult("n1")->id, *result_id);
  // AUTOINCREMENT: ids are never reused after reopen.
  auto next = store_->InsertResult(Result("n1", "bb"), Report("n1", "bb"));
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, *result_id);
}

}  // namespace
}  // namespace dpuaudit::verifier
