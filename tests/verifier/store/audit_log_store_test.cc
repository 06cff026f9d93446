// The audit log in SqliteStore (issue 16 §1): each recorded write appends
// its entry in the same transaction, a refused write appends nothing, the
// chain verifies, retention logs what it removed and never an entry, and
// checkpoints must match the log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/crypto.h"
#include "testing/temp_dir.h"
#include "verifier/audit_chain.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"
#include "verifier/store/test_nodes.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::StoreTestNode;

ReportRecord Report(const std::string& node, const std::string& sha, int64_t at) {
  ReportRecord r;
  r.node_id = node;
  r.jws = "eyJhbGciOiJFUzI1NiJ9.payload-" + sha + ".sig";
  r.sha256 = Sha256Hex(AsBytes(r.jws));
  r.received_at = at;
  r.accepted = true;
  return r;
}

ResultRecord Result(const ReportRecord& rep, int64_t at) {
  ResultRecord r;
  r.node_id = rep.node_id;
  r.decision = "admit";
  r.ear_jwt = "ear." + rep.sha256 + ".sig";
  r.reasons_json = "[]";
  r.report_jws_sha256 = rep.sha256;
  r.created_at = at;
  r.expires_at = at + 300;
  r.context_json = R"({"context":"test"})";
  return r;
}

class AuditLogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  std::vector<AuditLogRow> Log() { return *store_->ListAuditLog(1, 100000); }
  void ExpectChainIntact() {
    std::vector<ChainedEntry> c;
    for (auto& r : Log()) c.push_back({r.seq, r.entry, r.prev_hash, r.entry_hash});
    EXPECT_TRUE(VerifyAuditChain(c, kAuditGenesisHash).ok());
  }
  ::dpuaudit::testing::TestStoreDb db_;
  TempDir dir_;
  std::unique_ptr<SqlStore> store_;
};

TEST_F(AuditLogStoreTest, EachRecordedWriteAppendsItsEntryAtomically) {
  ASSERT_TRUE(store_->CreateNode(StoreTestNode("n1")).ok());
  ASSERT_TRUE(store_->ApproveNode("n1", 1500).ok());
  ReportRecord rep = Report("n1", "a", 2000);
  auto id = store_->InsertResult(Result(rep, 2000), rep);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<AuditLogRow> log = Log();
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0].kind, "node");
  EXPECT_EQ(log[1].kind, "node");
  EXPECT_EQ(log[2].kind, "report.accepted");
  EXPECT_EQ(log[3].kind, "result");
  auto result = ParseAuditEntry(log[3].entry);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->data["result_id"], *id);
  EXPECT_EQ(result->data["ear_sha256"], Sha256Hex(AsBytes(Result(rep, 2000).ear_jwt)));
  EXPECT_EQ(result->data["context_sha256"], Sha256Hex(AsBytes(R"({"context":"test"})")));
  // The node's back-link: its previous entry.
  EXPECT_EQ(result->data["node_prev"]["seq"], 3);
  ExpectChainIntact();
  // The context is kept with the result.
  auto results = store_->ListNodeResults("n1", 0, 1'000'000);
  ASSERT_EQ(results->size(), 1u);
  EXPECT_EQ((*results)[0].context_json, R"({"context":"test"})");

  // A refused write appends nothing: a result for an unknown node.
  ReportRecord ghost = Report("ghost", "b", 2100);
  EXPECT_FALSE(store_->InsertResult(Result(ghost, 2100), ghost).ok());
  EXPECT_EQ(Log().size(), 4u);
  EXPECT_EQ(store_->GetAuditLogHead()->size, 4);
}

TEST_F(AuditLogStoreTest, PolicyIsRecordedOnceAndCollateralIsContentAddressed) {
  const std::string doc = R"({"schema":"dpuaudit-policy/1"})";
  const std::string sha = Sha256Hex(AsBytes(doc));
  EXPECT_TRUE(*store_->RecordPolicy("p", sha, doc, 10));
  EXPECT_FALSE(*store_->RecordPolicy("p", sha, doc, 20));  // unchanged: no entry
  EXPECT_EQ(Log().size(), 1u);
  std::string kind;
  EXPECT_EQ(*store_->GetCollateral(sha, &kind), doc);
  EXPECT_EQ(kind, "policy");
  EXPECT_EQ(store_->RecordPolicy("p", std::string(64, 'a'), doc, 30).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetCollateral(std::string(64, 'b'), &kind).status().code(),
            StatusCode::kNotFound);
}

TEST_F(AuditLogStoreTest, RetentionLogsWhatItRemovedAndKeepsEveryEntry) {
  ASSERT_TRUE(store_->CreateNode(StoreTestNode("n1")).ok());
  ASSERT_TRUE(store_->ApproveNode("n1", 1500).ok());
  for (int i = 0; i < 5; ++i) {
    ReportRecord rep = Report("n1", std::to_string(i), 2000 + i);
    ASSERT_TRUE(store_->InsertResult(Result(rep, 2000 + i), rep).ok());
  }
  const size_t before = Log().size();
  RetentionPolicy keep_two;
  keep_two.keep_reports = 2;
  auto counts = store_->PruneReports(keep_two, 3000);
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  std::vector<AuditLogRow> log = Log();
  ASSERT_EQ(log.size(), before + 1);
  EXPECT_EQ(log.back().kind, "retention.pruned");
  auto e = ParseAuditEntry(log.back().entry);
  EXPECT_EQ(static_cast<int64_t>(e->data["results_deleted"].size() +
                                 e->data["bodies_dropped"].size()),
            counts->results_deleted + counts->bodies_dropped);
  ExpectChainIntact();
}

TEST_F(AuditLogStoreTest, CheckpointsMustMatchTheLog) {
  ASSERT_TRUE(store_->CreateNode(StoreTestNode("n1")).ok());
  AuditLogHead head = *store_->GetAuditLogHead();
  ASSERT_EQ(head.size, 1);
  EXPECT_TRUE(store_->PutCheckpoint({1, head.head_hash, 5, "a.b.c"}).ok());
  EXPECT_TRUE(store_->PutCheckpoint({1, head.head_hash, 6, "a.b.c"}).ok());  // idempotent
  EXPECT_THAT(store_->PutCheckpoint({1, std::string(64, '0'), 5, "a.b.c"}).message(),
              HasSubstr("not entry 1's hash"));
  EXPECT_THAT(store_->PutCheckpoint({9, head.head_hash, 5, "a.b.c"}).message(),
              HasSubstr("has no entry 9"));
  EXPECT_EQ(store_->ListCheckpoints(10)->size(), 1u);
}

}  // namespace
}  // namespace dpuaudit::verifier
