// SqliteStore storage bounds (issue 12): per-node nonce cap, refused-report
// records and report quota, retention, file modes. Real SQLite files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <string>

#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::RawDb;

constexpr int64_t kNow = 1'700'000'000;

NodeRecord Node(const std::string& id) {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem = "-----BEGIN PUBLIC KEY-----\nk\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb-" + id;
  n.state = NodeState::kApproved;
  n.enrolled_at = 1000;
  n.approved_at = 1000;
  return n;
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

class StorageBoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    for (const char* id : {"node-a", "node-b"}) {
      ASSERT_TRUE(store_->CreateNode(Node(id)).ok());
    }
  }

  // An accepted report of `bytes` bytes and its result, spending a fresh
  // nonce, at time `at`.
  StatusOr<int64_t> Accept(const std::string& node, size_t bytes, int64_t at,
                           const std::string& decision = "admit",
                           int64_t quota = 0) {
    std::string nonce = "nonce-" + node + "-" + std::to_string(++serial_);
    EXPECT_TRUE(store_->InsertNonce(nonce, node, at, at + 60).ok());
    ReportRecord rep;
    rep.node_id = node;
    rep.jws = std::string(bytes, 'r');
    rep.sha256 = "sha-" + std::to_string(serial_);
    rep.received_at = at;
    rep.accepted = true;
    ResultRecord res;
    res.node_id = node;
    res.decision = decision;
    res.ear_jwt = "ear";
    res.reasons_json = "[]";
    res.report_jws_sha256 = rep.sha256;
    res.created_at = at;
    res.expires_at = at + 300;
    return store_->InsertResultSpendingNonceWithinQuota(res, rep, nonce, at,
                                                        quota);
  }

  StatusOr<int64_t> Refuse(const std::string& node, size_t bytes, int64_t at,
                           int64_t quota) {
    ReportRecord rep;
    rep.node_id = node;
    rep.jws = std::string(bytes, 'x');
    rep.received_bytes = 1 << 20;
    rep.sha256 = "refused-" + std::to_string(++serial_);
    rep.received_at = at;
    rep.accepted = false;
    rep.error = "INVALID_ARGUMENT: bad claims.";
    return store_->InsertRefusedReport(rep, quota);
  }

  ::dpuaudit::testing::TestStoreDb db_;

  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
  int serial_ = 0;
};

TEST_F(StorageBoundsTest, DatabaseWalAndShmAreOwnerOnly) {
  DPA_SQLITE_ONLY("file modes of the database file");
  ASSERT_TRUE(Accept("node-a", 100, kNow).ok());  // the WAL exists now
  EXPECT_EQ(Mode(path_), 0600u);
  EXPECT_EQ(Mode(path_ + "-wal"), 0600u);
  EXPECT_EQ(Mode(path_ + "-shm"), 0600u);
}

TEST_F(StorageBoundsTest, LooserExistingModesAreTightened) {
  DPA_SQLITE_ONLY("file modes of the database file");
  store_.reset();
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  { std::ofstream(path_ + "-wal", std::ios::app); }
  ASSERT_EQ(::chmod((path_ + "-wal").c_str(), 0666), 0);
  auto s = db_.Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Mode(path_), 0600u);
  EXPECT_EQ(Mode(path_ + "-wal"), 0600u);
}

TEST_F(StorageBoundsTest, NotARegularFileIsRefused) {
  DPA_SQLITE_ONLY("a directory given as the database file");
  auto s = SqliteStore::Open(dir_.path());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr("is not a regular file"));
}

TEST_F(StorageBoundsTest, OutstandingNoncesAreCappedOldestFirst) {
  for (int i = 0; i < 5; ++i) {
    auto evicted = store_->InsertNonceCapped("n" + std::to_string(i), "node-a",
                                             kNow + i, kNow + 60, 3);
    ASSERT_TRUE(evicted.ok()) << evicted.status().ToString();
    EXPECT_EQ(*evicted, i < 3 ? 0 : 1) << i;
  }
  // n0 and n1 went first; n2..n4 are usable; node-b is not affected.
  EXPECT_EQ(store_->ConsumeNonce("n0", "node-a", kNow + 5).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store_->ConsumeNonce("n1", "node-a", kNow + 5).code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(store_->ConsumeNonce("n4", "node-a", kNow + 5).ok());
  ASSERT_TRUE(store_->InsertNonceCapped("b0", "node-b", kNow, kNow + 60, 3).ok());
  // A spent nonce no longer counts: n5 evicts nothing.
  EXPECT_EQ(*store_->InsertNonceCapped("n5", "node-a", kNow + 6, kNow + 60, 3),
            0);
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM nonces WHERE node_id = 'node-a'"), 4);
  EXPECT_EQ(store_->InsertNonceCapped("n6", "ghost", kNow, kNow + 60, 3)
                .status()
                .code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store_->InsertNonceCapped("n7", "node-a", kNow, kNow + 60, 0)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(StorageBoundsTest, RefusedReportsAreBoundedRecordsWithinQuota) {
  const int64_t quota = 20000;
  ReportRecord big;
  big.node_id = "node-a";
  big.jws = std::string(kRefusedReportPrefixBytes + 1, 'x');
  big.sha256 = "s";
  big.accepted = false;
  big.error = "e";
  EXPECT_EQ(store_->InsertRefusedReport(big, quota).status().code(),
            StatusCode::kInvalidArgument);
  int stored = 0;
  Status last;
  for (int i = 0; i < 10; ++i) {
    auto id = Refuse("node-a", kRefusedReportPrefixBytes, kNow + i, quota);
    if (id.ok()) {
      ++stored;
    } else {
      last = id.status();
    }
  }
  EXPECT_EQ(stored, 4);  // 4 x (4096 + 29) bytes fit in 20000
  EXPECT_EQ(last.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(last.message(),
              HasSubstr("node \"node-a\" has used 16500 of its 20000 bytes"));
  EXPECT_LE(*store_->ReportBytes("node-a"), quota);
  // Another node's quota is its own.
  EXPECT_TRUE(Refuse("node-b", 100, kNow, quota).ok());
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT max(received_bytes) FROM reports WHERE accepted = 0"),
            1 << 20);
}

TEST_F(StorageBoundsTest, AcceptedReportsMakeRoomFromTheNodesOwnHistory) {
  const int64_t quota = 10000;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Refuse("node-a", 4000, kNow + i, quota).ok());
  }
  ASSERT_TRUE(Refuse("node-b", 4000, kNow, quota).ok());
  // Each accepted 3000-byte report fits by deleting refused records first,
  // then by dropping the node's oldest bodies; rows and results stay.
  for (int i = 0; i < 6; ++i) {
    auto r = Accept("node-a", 3000, kNow + 10 + i, "admit", quota);
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().ToString();
    EXPECT_LE(*store_->ReportBytes("node-a"), quota) << i;
  }
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports WHERE node_id = 'node-a' "
                    "AND accepted = 0"),
            0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results WHERE node_id = 'node-a'"), 6);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports WHERE node_id = 'node-a' "
                    "AND length(jws) = 0 AND received_bytes = 3000"),
            3);
  // The latest report keeps its body.
  EXPECT_EQ(raw.Int("SELECT length(jws) FROM reports WHERE node_id = 'node-a' "
                    "ORDER BY id DESC LIMIT 1"),
            3000);
  // node-b's record is untouched.
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports WHERE node_id = 'node-b'"), 1);
  // A report larger than the whole quota: refused, nothing changed, nonce
  // unspent.
  auto too_big = Accept("node-a", 20000, kNow + 30, "admit", quota);
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(too_big.status().message(),
              HasSubstr("exceeds node \"node-a\"'s report storage quota"));
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results WHERE node_id = 'node-a'"), 6);
}

TEST_F(StorageBoundsTest, RetentionKeepsLatestNAndEveryDecisionChange) {
  // Decisions, oldest first: admit admit deny deny admit admit admit admit.
  const char* decisions[] = {"admit", "admit", "deny",  "deny",
                             "admit", "admit", "admit", "admit"};
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Accept("node-a", 500, kNow + i * 10, decisions[i]).ok());
  }
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Accept("node-b", 500, kNow + i * 10).ok());
    ASSERT_TRUE(Refuse("node-b", 100, kNow + i * 10, 0).ok());
  }
  auto counts = store_->PruneReports({/*keep_reports=*/2, /*keep_seconds=*/0},
                                     kNow + 100);
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  auto& raw = db_;
  // node-a keeps: #1 (first, a change), #3 (admit->deny), #5 (deny->admit),
  // #7 and #8 (latest 2). Deleted: #2, #4, #6. node-b keeps #2, #3 and its
  // first (a change) and 2 refused records.
  EXPECT_EQ(counts->results_deleted, 3 + 0);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM results WHERE node_id = 'node-a'"), 5);
  EXPECT_EQ(raw.Text(db_.pg() ? "SELECT string_agg(decision, ',' ORDER BY id) FROM results "
                                 "WHERE node_id = 'node-a'"
                               : "SELECT group_concat(decision, ',') FROM (SELECT decision "
                                 "FROM results WHERE node_id = 'node-a' ORDER BY id)"),
            "admit,deny,admit,admit,admit");
  // Kept changes outside the latest 2 lose their bodies, not their digests.
  EXPECT_EQ(counts->bodies_dropped, 3 + 1);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports r JOIN results s ON "
                    "s.report_id = r.id WHERE s.node_id = 'node-a' AND "
                    "length(r.jws) > 0"),
            2);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports r JOIN results s ON "
                    "s.report_id = r.id WHERE r.sha256 = s.report_jws_sha256"),
            8);
  EXPECT_EQ(counts->refused_deleted, 1);
  // Every report row belongs to a result or is a refused record.
  EXPECT_EQ(raw.Int("SELECT count(*) FROM reports WHERE accepted = 1 AND id NOT "
                    "IN (SELECT report_id FROM results)"),
            0);
  // Idempotent.
  auto again = store_->PruneReports({2, 0}, kNow + 100);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, PruneCounts{});
}

TEST_F(StorageBoundsTest, RetentionByAgeNeverDeletesTheLatestResult) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Accept("node-a", 500, kNow + i).ok());
  }
  ASSERT_TRUE(Refuse("node-a", 100, kNow, 0).ok());
  auto counts = store_->PruneReports({0, /*keep_seconds=*/86400},
                                     kNow + 10 * 86400);
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->results_deleted, 1);  // #2; #1 is the first (a change)
  EXPECT_EQ(counts->bodies_dropped, 1);   // #1's body
  EXPECT_EQ(counts->refused_deleted, 1);
  auto latest = store_->LatestResult("node-a");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->created_at, kNow + 2);
  auto& raw = db_;
  std::string sql = "SELECT length(jws) FROM reports WHERE id = (SELECT "
                    "report_id FROM results WHERE id = " +
                    std::to_string(latest->id) + ")";
  EXPECT_EQ(raw.Int(sql.c_str()), 500);
  EXPECT_EQ(store_->PruneReports({-1, 0}, kNow).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(StorageBoundsTest, ColumnsJoinAnOlderSchemaOneFile) {
  DPA_SQLITE_ONLY("a schema-1 SQLite file");
  store_.reset();
  {
    auto& raw = db_;
    raw.Exec("DROP INDEX nonces_by_node; DROP INDEX results_by_report; "
             "ALTER TABLE reports DROP COLUMN received_bytes;");
  }
  auto s = db_.Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto& raw = db_;
  EXPECT_EQ(raw.Int("SELECT count(*) FROM pragma_table_info('reports') WHERE "
                    "name = 'received_bytes'"),
            1);
  // Opening again is a no-op.
  s->reset();
  EXPECT_TRUE(db_.Open().ok());
}

}  // namespace
}  // namespace dpuaudit::verifier
