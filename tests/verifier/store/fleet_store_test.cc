// The Store queries of the fleet report (issue 16 §7) on a real SQLite
// database: the latest result per node across pages, node releases, and
// decision counts per bucket.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "testing/temp_dir.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"
#include "verifier/store/test_nodes.h"

namespace dpuaudit::verifier {
namespace {

class FleetStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  void Node(const std::string& id) {
    ASSERT_TRUE(store_->CreateNode(testing::StoreTestNode(id)).ok());
  }
  // Stores a result of `node` at `at` over a fresh report; returns its id.
  int64_t Result(const std::string& node, const std::string& decision,
                 int64_t at, const std::string& reasons = "[]") {
    ReportRecord rep;
    rep.node_id = node;
    rep.jws =
        "jws-" + node + "-" + std::to_string(at) + "-" + std::to_string(++seq_);
    rep.sha256 = Sha256Hex(AsBytes(rep.jws));
    rep.received_at = at;
    rep.accepted = true;
    ResultRecord r;
    r.node_id = node;
    r.decision = decision;
    r.ear_jwt = "ear-of-" + rep.jws;
    r.reasons_json = reasons;
    r.report_jws_sha256 = rep.sha256;
    r.created_at = at;
    r.expires_at = at + 300;
    auto id = store_->InsertResult(r, rep);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : 0;
  }
  std::vector<ResultRecord> Latest() {
    std::vector<ResultRecord> out;
    Status s = store_->ForEachLatestResult([&](const ResultRecord& r) {
      out.push_back(r);
      return OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  ::dpuaudit::testing::TestStoreDb db_;

  testing::TempDir dir_;
  std::unique_ptr<SqlStore> store_;
  int seq_ = 0;
};

TEST_F(FleetStoreTest, LatestResultPerNodeInNodeOrderWithoutTheEar) {
  Node("b");
  Node("a");
  Node("c");  // no result: not visited
  Result("a", "admit", 1000,
         R"([{"rule_id":"host.privilege_level","observed":"RESTRICTED"}])");
  const int64_t a2 =
      Result("a", "deny", 900);  // later id, older timestamp: still the latest
  const int64_t b1 = Result("b", "admit", 1100);
  auto latest = Latest();
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_EQ(latest[0].node_id, "a");
  EXPECT_EQ(latest[0].id, a2);
  EXPECT_EQ(latest[0].decision, "deny");
  EXPECT_EQ(latest[0].reasons_json, "[]");
  EXPECT_TRUE(latest[0].ear_jwt.empty());
  EXPECT_EQ(latest[1].node_id, "b");
  EXPECT_EQ(latest[1].id, b1);
  EXPECT_EQ(latest[1].created_at, 1100);
  EXPECT_FALSE(latest[1].report_jws_sha256.empty());
}

TEST_F(FleetStoreTest, ScanCrossesPagesAndStopsAtTheVisitorsError) {
  // More nodes than one page (256): every node once, in order.
  for (int i = 0; i < 300; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "n%04d", i);
    Node(id);
    Result(id, i % 3 == 0 ? "deny" : "admit", 1000 + i);
  }
  auto latest = Latest();
  ASSERT_EQ(latest.size(), 300u);
  for (size_t i = 1; i < latest.size(); ++i) {
    EXPECT_LT(latest[i - 1].node_id, latest[i].node_id);
  }
  EXPECT_EQ(latest.back().node_id, "n0299");
  int seen = 0;
  Status s = store_->ForEachLatestResult([&](const ResultRecord&) {
    return ++seen == 280 ? UnavailableError("stop here.") : OkStatus();
  });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(seen, 280);  // in the second page
}

TEST_F(FleetStoreTest, NodeReleasesAreListedByNodeAndKind) {
  Node("b");
  Node("a");
  ASSERT_TRUE(
      store_->RecordNodeRelease("b", "arm", "bf-bundle-2.9.1-40", 50).ok());
  ASSERT_TRUE(
      store_->RecordNodeRelease("a", "arm", "bf-bundle-2.9.0-90", 40).ok());
  auto rows = store_->ListNodeReleases();
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0],
            (NodeReleaseRecord{"a", "arm", "bf-bundle-2.9.0-90", 40}));
  EXPECT_EQ((*rows)[1],
            (NodeReleaseRecord{"b", "arm", "bf-bundle-2.9.1-40", 50}));
}

TEST_F(FleetStoreTest, DecisionsAreCountedPerBucketFromSince) {
  Node("a");
  Node("b");
  Result("a", "admit", 3599);  // before `since`: not counted
  Result("a", "admit", 3600);
  Result("b", "deny", 3700);
  Result("a", "admit", 7199);
  Result("b", "deny", 10800);
  auto buckets = store_->CountDecisions(3600, 3600);
  ASSERT_TRUE(buckets.ok()) << buckets.status().ToString();
  ASSERT_EQ(buckets->size(), 2u);
  EXPECT_EQ((*buckets)[0], (DecisionBucket{3600, 2, 1}));
  EXPECT_EQ((*buckets)[1], (DecisionBucket{10800, 0, 1}));
  EXPECT_EQ(store_->CountDecisions(0, 0).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dpuaudit::verifier
