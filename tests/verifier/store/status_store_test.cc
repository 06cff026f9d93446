// SqliteStore node status, decision events and the webhook outbox (issue
// 15) against real SQLite files: a transition is all-or-nothing with the
// result it rides on, events get increasing seq numbers, the outbox
// survives a reopen (a verifier restart) and reports what is stuck.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "testing/temp_dir.h"
#include "verifier/node_status.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"
#include "verifier/store/test_nodes.h"

namespace dpuaudit::verifier {
namespace {

using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::StoreTestNode;

DecisionEvent Event(const std::string& node, const std::string& id_digit, int64_t at) {
  DecisionEvent e;
  e.event_id = std::string(31, '0') + id_digit;
  e.node_id = node;
  e.type = "node.denied";
  e.at = at;
  e.payload_json = R"({"type":"node.denied"})";
  return e;
}

NodeTransition Transition(const std::string& node, std::string_view status, int64_t at,
                          std::optional<DecisionEvent> e, std::vector<std::string> endpoints) {
  NodeTransition t;
  t.status = InitialStatus(node, at);
  t.status.status = std::string(status);
  t.event = std::move(e);
  t.endpoints = std::move(endpoints);
  return t;
}

class StatusStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    Reopen();
    ASSERT_TRUE(store_->CreateNode(StoreTestNode("n1")).ok());
    ASSERT_TRUE(store_->ApproveNode("n1", 950).ok());
  }
  void Reopen() {
    store_.reset();
    auto store = db_.Open();
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  ::dpuaudit::testing::TestStoreDb db_;
  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
};

TEST_F(StatusStoreTest, TransitionStoresStatusEventAndOneOutboxRowPerEndpoint) {
  EXPECT_EQ(store_->GetNodeStatus("n1").status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n1", kStatusFailed, 1000, Event("n1", "1", 1000), {"a", "b"}))
                  .ok());
  auto st = store_->GetNodeStatus("n1");
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->status, "failed");
  auto events = store_->ListDecisionEvents("", 0, 10);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 1u);
  EXPECT_GT((*events)[0].seq, 0);
  auto due = store_->DueOutbox(1000, 10);
  ASSERT_TRUE(due.ok());
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].event.event_id, (*events)[0].event_id);
  EXPECT_EQ((*due)[0].event.payload_json, R"({"type":"node.denied"})");
  // Not due before the event's time.
  EXPECT_TRUE(store_->DueOutbox(999, 10)->empty());
}

TEST_F(StatusStoreTest, RepeatedEventIdOrUnknownNodeChangesNothing) {
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n1", kStatusFailed, 1000, Event("n1", "1", 1000), {"a"}))
                  .ok());
  Status again = store_->ApplyNodeTransition(
      Transition("n1", kStatusAdmitted, 1001, Event("n1", "1", 1001), {"a"}));
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists) << again.ToString();
  EXPECT_EQ(store_->GetNodeStatus("n1")->status, "failed");  // rolled back
  EXPECT_EQ(store_->PendingOutbox(10)->size(), 1u);
  Status ghost = store_->ApplyNodeTransition(
      Transition("ghost", kStatusFailed, 1000, Event("ghost", "2", 1000), {"a"}));
  EXPECT_EQ(ghost.code(), StatusCode::kNotFound) << ghost.ToString();
  EXPECT_EQ(store_->ListDecisionEvents("", 0, 10)->size(), 1u);
}

TEST_F(StatusStoreTest, InvalidStatusIsRefused) {
  NodeTransition t = Transition("n1", "sleeping", 1000, std::nullopt, {});
  EXPECT_EQ(store_->ApplyNodeTransition(t).code(), StatusCode::kInvalidArgument);
  t = Transition("n1", kStatusHeld, 1000, std::nullopt, {});  // held without rules
  EXPECT_EQ(store_->ApplyNodeTransition(t).code(), StatusCode::kInvalidArgument);
  DecisionEvent bad = Event("n1", "1", 1000);
  bad.event_id = "not-hex";
  t = Transition("n1", kStatusFailed, 1000, bad, {"a"});
  EXPECT_EQ(store_->ApplyNodeTransition(t).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetNodeStatus("n1").status().code(), StatusCode::kNotFound);
}

TEST_F(StatusStoreTest, OutboxSurvivesReopenAndReportsFailures) {
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n1", kStatusFailed, 1000, Event("n1", "1", 1000), {"a", "b"}))
                  .ok());
  auto due = store_->DueOutbox(1000, 10);
  ASSERT_EQ(due->size(), 2u);
  ASSERT_TRUE(store_->MarkOutboxFailed((*due)[0].entry.id, 1001, 1003, "HTTP 500").ok());
  ASSERT_TRUE(store_->MarkOutboxDelivered((*due)[1].entry.id, 1001).ok());
  Reopen();  // a verifier restart
  auto pending = store_->PendingOutbox(10);
  ASSERT_TRUE(pending.ok());
  ASSERT_EQ(pending->size(), 1u);
  EXPECT_EQ((*pending)[0].attempts, 1);
  EXPECT_EQ((*pending)[0].last_error, "HTTP 500");
  EXPECT_TRUE(store_->DueOutbox(1002, 10)->empty());  // backing off
  EXPECT_EQ(store_->DueOutbox(1003, 10)->size(), 1u);
  auto stats = store_->OutboxStats();
  ASSERT_TRUE(stats.ok());
  ASSERT_EQ(stats->size(), 2u);
  EXPECT_EQ((*stats)[0].endpoint, "a");
  EXPECT_EQ((*stats)[0].pending, 1);
  EXPECT_EQ((*stats)[0].failing, 1);
  EXPECT_EQ((*stats)[0].last_error, "HTTP 500");
  EXPECT_EQ((*stats)[0].oldest_pending_at, 1000);
  EXPECT_EQ((*stats)[1].delivered, 1);
  EXPECT_EQ((*stats)[1].last_delivered_at, 1001);
  // Delivering twice keeps the first time; unknown ids are NOT_FOUND.
  ASSERT_TRUE(store_->MarkOutboxDelivered((*due)[1].entry.id, 2000).ok());
  EXPECT_EQ(store_->OutboxStats()->at(1).last_delivered_at, 1001);
  EXPECT_EQ(store_->MarkOutboxDelivered(999, 1).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->MarkOutboxFailed(999, 1, 2, "x").code(), StatusCode::kNotFound);
}

TEST_F(StatusStoreTest, StaleCandidatesUseLastActivity) {
  NodeTransition t = Transition("n1", kStatusAdmitted, 1000, std::nullopt, {});
  t.status.last_appraisal_at = 1500;
  t.status.last_decision = "admit";
  ASSERT_TRUE(store_->ApplyNodeTransition(t).ok());
  EXPECT_TRUE(store_->ListStaleCandidates(1499)->empty());
  EXPECT_EQ(store_->ListStaleCandidates(1500)->size(), 1u);
  t.status.status = "stale";
  ASSERT_TRUE(store_->ApplyNodeTransition(t).ok());
  EXPECT_TRUE(store_->ListStaleCandidates(5000)->empty());  // already stale
}

TEST_F(StatusStoreTest, EventsPageBySeqAndNode) {
  ASSERT_TRUE(store_->CreateNode(StoreTestNode("n2")).ok());
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n1", kStatusFailed, 1000, Event("n1", "1", 1000), {})).ok());
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n2", kStatusFailed, 1001, Event("n2", "2", 1001), {})).ok());
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n1", kStatusAdmitted, 1002, Event("n1", "3", 1002), {})).ok());
  auto all = store_->ListDecisionEvents("", 0, 10);
  ASSERT_EQ(all->size(), 3u);
  EXPECT_LT((*all)[0].seq, (*all)[1].seq);
  auto n1 = store_->ListDecisionEvents("n1", 0, 10);
  ASSERT_EQ(n1->size(), 2u);
  auto after = store_->ListDecisionEvents("", (*all)[1].seq, 10);
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].node_id, "n1");
  EXPECT_EQ(store_->ListDecisionEvents("", 0, 0).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(StatusStoreTest, DeliveriesOfOneNodeToOneEndpointAreInOrder) {
  ASSERT_TRUE(store_->CreateNode(StoreTestNode("n2")).ok());
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n1", kStatusAdmitted, 1000, Event("n1", "1", 1000), {"a"})).ok());
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n1", kStatusFailed, 1001, Event("n1", "2", 1001), {"a"})).ok());
  ASSERT_TRUE(store_->ApplyNodeTransition(
                  Transition("n2", kStatusFailed, 1001, Event("n2", "3", 1001), {"a"})).ok());
  auto due = store_->DueOutbox(2000, 10);
  ASSERT_TRUE(due.ok());
  // n1's second event waits for its first; n2's is independent.
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].event.event_id, std::string(31, '0') + "1");
  EXPECT_EQ((*due)[1].event.node_id, "n2");
  // The first fails and backs off: the second still waits (no overtaking).
  ASSERT_TRUE(store_->MarkOutboxFailed((*due)[0].entry.id, 2000, 3000, "HTTP 503").ok());
  due = store_->DueOutbox(2000, 10);
  ASSERT_EQ(due->size(), 1u);
  EXPECT_EQ((*due)[0].event.node_id, "n2");
  due = store_->DueOutbox(3000, 10);
  ASSERT_EQ(due->size(), 2u);  // n2 (due since 1001), then n1's first
  ASSERT_EQ((*due)[1].event.event_id, std::string(31, '0') + "1");
  ASSERT_TRUE(store_->MarkOutboxDelivered((*due)[1].entry.id, 3000).ok());
  // Delivered: n1's second is due now.
  due = store_->DueOutbox(3000, 10);
  ASSERT_EQ(due->size(), 2u);
  EXPECT_EQ((*due)[0].event.event_id, std::string(31, '0') + "2");  // due since 1001
}

}  // namespace
}  // namespace dpuaudit::verifier
