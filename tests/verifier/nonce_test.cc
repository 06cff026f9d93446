// NonceService over a real SqliteStore (temp dir) and a FakeClock, plus a
// strict mock Store proving malformed input never reaches the store.
#include "testing/temp_dir.h"
#include "verifier/nonce.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/bytes.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::verifier {
namespace {

using ::testing::_;
using ::testing::Return;
using ::testing::StrictMock;

constexpr int64_t kNow = 1'700'000'000;

using TempDir = ::dpuaudit::testing::TempDir;

class MockStore : public Store {
 public:
  MOCK_METHOD(StatusOr<NodeRecord>, CreateNode, (const NodeRecord&),
              (override));
  MOCK_METHOD(StatusOr<NodeRecord>, GetNode, (std::string_view), (override));
  MOCK_METHOD(StatusOr<NodeRecord>, ApproveNode, (std::string_view, int64_t),
              (override));
  MOCK_METHOD(StatusOr<NodeRecord>, RevokeNode, (std::string_view), (override));
  MOCK_METHOD(StatusOr<std::vector<NodeRecord>>, ListNodes, (), (override));
  MOCK_METHOD(Status, InsertNonce,
              (std::string_view, std::string_view, int64_t, int64_t),
              (override));
  MOCK_METHOD(Status, ConsumeNonce,
              (std::string_view, std::string_view, int64_t), (override));
  MOCK_METHOD(StatusOr<int64_t>, NonceIssuedAt,
              (std::string_view, std::string_view), (override));
  MOCK_METHOD(StatusOr<int64_t>, PurgeExpiredNonces, (int64_t), (override));
  MOCK_METHOD(StatusOr<int64_t>, InsertNonceCapped,
              (std::string_view, std::string_view, int64_t, int64_t, int64_t),
              (override));
  MOCK_METHOD(StatusOr<int64_t>, ReportBytes, (std::string_view), (override));
  MOCK_METHOD(StatusOr<int64_t>, InsertRefusedReport,
              (const ReportRecord&, int64_t), (override));
  MOCK_METHOD(StatusOr<int64_t>, InsertResultSpendingNonceWithinQuota,
              (const ResultRecord&, const ReportRecord&, std::string_view,
               int64_t, int64_t, const NodeTransition*),
              (override));
  MOCK_METHOD(StatusOr<PruneCounts>, PruneReports,
              (const RetentionPolicy&, int64_t), (override));
  MOCK_METHOD(StatusOr<int64_t>, InsertReport, (const ReportRecord&),
              (override));
  MOCK_METHOD(StatusOr<int64_t>, InsertResult,
              (const ResultRecord&, const ReportRecord&), (override));
  MOCK_METHOD(StatusOr<int64_t>, InsertResultSpendingNonce,
              (const ResultRecord&, const ReportRecord&, std::string_view,
               int64_t),
              (override));
  MOCK_METHOD(StatusOr<ResultRecord>, LatestResult, (std::string_view),
              (override));
  MOCK_METHOD(StatusOr<ReportRecord>, GetAcceptedReport,
              (std::string_view, std::string_view), (override));
  MOCK_METHOD(StatusOr<int64_t>, InsertReappraisal,
              (const ResultRecord&, const NodeTransition*), (override));
  MOCK_METHOD(Status, PutRelease, (const RefRelease&), (override));
  MOCK_METHOD(Status, PutReleases, (const std::vector<RefRelease>&),
              (override));
  MOCK_METHOD(StatusOr<RefRelease>, GetRelease, (std::string_view),
              (override));
  MOCK_METHOD(StatusOr<std::vector<RefRelease>>, ListReleases,
              (std::string_view), (override));
  MOCK_METHOD(StatusOr<RefRelease>, TransitionRelease,
              (std::string_view, const RefApproval&), (override));
  MOCK_METHOD(StatusOr<int64_t>, RefvalsGeneration, (), (override));
  MOCK_METHOD(Status, RecordNodeRelease,
              (std::string_view, std::string_view, std::string_view, int64_t),
              (override));
  MOCK_METHOD(StatusOr<std::string>, LastNodeRelease,
              (std::string_view, std::string_view), (override));
  MOCK_METHOD(Status, PutTpmBinding, (const TpmBinding&), (override));
  MOCK_METHOD(StatusOr<NodeRecord>, CreateNodeWithTpmBinding,
              (const NodeRecord&, const TpmBinding&, std::optional<int64_t>,
               EnrollAuthority),
              (override));
  MOCK_METHOD(StatusOr<TpmBinding>, ActivateTpmBinding,
              (std::string_view, std::string_view, int64_t), (override));
  MOCK_METHOD(StatusOr<TpmBinding>, GetTpmBinding, (std::string_view), (override));
  MOCK_METHOD(StatusOr<NodeRecord>, EnrollNode,
              (const NodeRecord&, const std::optional<TpmBinding>&,
               const EnrollGrant&),
              (override));
  MOCK_METHOD(StatusOr<NodeRecord>, ApproveEnrollment,
              (std::string_view, const ApprovalRequest&), (override));
  MOCK_METHOD(Status, RejectNode,
              (std::string_view, std::string_view, std::string_view, int64_t),
              (override));
  MOCK_METHOD(StatusOr<NodeRecord>, RevokeNodeFor,
              (std::string_view, std::string_view, std::string_view, int64_t),
              (override));
  MOCK_METHOD(StatusOr<int64_t>, PurgeExpiredPendingNodes, (int64_t, int64_t),
              (override));
  MOCK_METHOD(StatusOr<std::vector<NodeEvent>>, NodeHistory,
              (std::string_view), (override));
  MOCK_METHOD(Status, PutEnrollmentToken, (const EnrollmentToken&),
              (override));
  MOCK_METHOD(StatusOr<EnrollmentToken>, GetEnrollmentToken,
              (std::string_view), (override));
  MOCK_METHOD(StatusOr<std::vector<EnrollmentToken>>, ListEnrollmentTokens, (),
              (override));
  MOCK_METHOD(StatusOr<EnrollmentToken>, RevokeEnrollmentToken,
              (std::string_view, std::string_view, int64_t), (override));
  MOCK_METHOD(StatusOr<TpmBinding>, DeleteTpmBinding, (std::string_view, bool),
              (override));
  MOCK_METHOD(Status, CheckWritable, (), (override));
  MOCK_METHOD(StatusOr<HardwareRecord>, PutHardwareRecordIfAbsent,
              (const HardwareRecord&), (override));
  MOCK_METHOD(StatusOr<HardwareRecord>, ReplaceHardwareRecord,
              (const HardwareRecord&), (override));
  MOCK_METHOD(StatusOr<HardwareRecord>, GetHardwareRecord,
              (std::string_view, std::string_view), (override));
  MOCK_METHOD(StatusOr<NodeStatusRecord>, GetNodeStatus, (std::string_view),
              (override));
  MOCK_METHOD(StatusOr<std::vector<NodeStatusRecord>>, ListNodeStatuses, (),
              (override));
  MOCK_METHOD(StatusOr<std::vector<NodeStatusRecord>>, ListStaleCandidates,
              (int64_t), (override));
  MOCK_METHOD(Status, ApplyNodeTransition, (const NodeTransition&), (override));
  MOCK_METHOD(StatusOr<std::vector<DecisionEvent>>, ListDecisionEvents,
              (std::string_view, int64_t, int64_t), (override));
  MOCK_METHOD(StatusOr<std::vector<OutboxDelivery>>, DueOutbox,
              (int64_t, int64_t), (override));
  MOCK_METHOD(StatusOr<std::vector<OutboxEntry>>, PendingOutbox, (int64_t),
              (override));
  MOCK_METHOD(Status, MarkOutboxDelivered, (int64_t, int64_t), (override));
  MOCK_METHOD(Status, MarkOutboxFailed,
              (int64_t, int64_t, int64_t, std::string_view), (override));
  MOCK_METHOD(StatusOr<std::vector<OutboxEndpointStats>>, OutboxStats, (),
              (override));

  MOCK_METHOD(StatusOr<SigningKeyRecord>, RegisterSigningKey,
              (const SigningKeyRecord&), (override));
  MOCK_METHOD(Status, ExtendSigningKeyUse, (std::string_view, int64_t),
              (override));
  MOCK_METHOD(StatusOr<std::vector<SigningKeyRecord>>, ListSigningKeys, (),
              (override));
  MOCK_METHOD(StatusOr<NodeRecord>, RekeyNode,
              (std::string_view, const NodeRekey&), (override));
  // Audit log, collateral and bundles (issue 16).
  MOCK_METHOD(StatusOr<std::vector<AuditLogRow>>, ListAuditLog, (int64_t, int64_t),
              (override));
  MOCK_METHOD(StatusOr<AuditLogHead>, GetAuditLogHead, (), (override));
  MOCK_METHOD(StatusOr<int64_t>, FirstAuditSeqForNode, (std::string_view, int64_t),
              (override));
  MOCK_METHOD(Status, PutCheckpoint, (const CheckpointRecord&), (override));
  MOCK_METHOD(StatusOr<std::vector<CheckpointRecord>>, ListCheckpoints, (int64_t),
              (override));
  MOCK_METHOD(StatusOr<bool>, RecordPolicy,
              (std::string_view, std::string_view, std::string_view, int64_t), (override));
  MOCK_METHOD(Status, PutCollateral,
              (std::string_view, std::string_view, std::string_view, int64_t), (override));
  MOCK_METHOD(StatusOr<std::string>, GetCollateral, (std::string_view, std::string*),
              (override));
  MOCK_METHOD(StatusOr<std::vector<ReportRecord>>, ListNodeReports,
              (std::string_view, int64_t, int64_t), (override));
  MOCK_METHOD(StatusOr<std::vector<ResultRecord>>, ListNodeResults,
              (std::string_view, int64_t, int64_t), (override));
  // Withdraw a pending release (issue 16 §6)
  MOCK_METHOD(StatusOr<RefRelease>, WithdrawPendingRelease, (std::string_view), (override));
  // Fleet report (issue 16 §7).
  MOCK_METHOD(Status, ForEachLatestResult,
              (const std::function<Status(const ResultRecord&)>&), (override));
  MOCK_METHOD(StatusOr<std::vector<NodeReleaseRecord>>, ListNodeReleases, (),
              (override));
  MOCK_METHOD(StatusOr<std::vector<DecisionBucket>>, CountDecisions,
              (int64_t, int64_t), (override));
};

class NonceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open(dir_.File("verifier.db"));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    for (const char* id : {"node-a", "node-b"}) {
      NodeRecord n;
      n.node_id = id;
      n.public_key_pem = "pem";
      n.key_thumbprint = std::string("thumb-") + id;
      n.enrolled_at = kNow;
      ASSERT_TRUE(store_->CreateNode(n).ok());
    }
    auto service = NonceService::New(*store_, clock_);
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::make_unique<NonceService>(std::move(service).value());
  }

  IssuedNonce MustIssue(const std::string& node) {
    auto n = service_->Issue(node);
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    return n.ok() ? *n : IssuedNonce{};
  }

  TempDir dir_;
  FakeClock clock_{kNow};
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<NonceService> service_;
};

TEST_F(NonceTest, IssueReturns32RandomBytesWithExpiry) {
  IssuedNonce n = MustIssue("node-a");
  EXPECT_EQ(n.nonce.size(), 43u);
  auto raw = Base64UrlDecode(n.nonce);
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->size(), 32u);
  EXPECT_EQ(n.issued_at, kNow);
  EXPECT_EQ(n.expires_at, kNow + 60);
  EXPECT_EQ(service_->ttl_seconds(), NonceService::kDefaultTtlSeconds);
  std::set<std::string> seen{n.nonce};
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(seen.insert(MustIssue("node-a").nonce).second);
  }
}

TEST_F(NonceTest, ConsumeOnceThenReplayIsRefused) {
  IssuedNonce n = MustIssue("node-a");
  EXPECT_TRUE(service_->Consume(n.nonce, "node-a").ok());
  Status replay = service_->Consume(n.nonce, "node-a");
  EXPECT_EQ(replay.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(replay.message(), "nonce already used.");
}

TEST_F(NonceTest, ValidJustBeforeExpiry) {
  IssuedNonce n = MustIssue("node-a");
  clock_.Advance(59);
  EXPECT_TRUE(service_->Consume(n.nonce, "node-a").ok());
}

TEST_F(NonceTest, ExpiredAtTtl) {
  IssuedNonce n = MustIssue("node-a");
  clock_.Advance(60);
  Status s = service_->Consume(n.nonce, "node-a");
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.message(), "nonce expired at 1700000060.");
}

TEST_F(NonceTest, WrongNodeThenRightNode) {
  IssuedNonce n = MustIssue("node-a");
  Status s = service_->Consume(n.nonce, "node-b");
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "nonce was issued to another node.");
  EXPECT_TRUE(service_->Consume(n.nonce, "node-a").ok());
}

TEST_F(NonceTest, UnknownWellFormedNonce) {
  std::string never = Base64UrlEncode(Bytes(32, 0x42));
  Status s = service_->Consume(never, "node-a");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "unknown nonce.");
}

TEST_F(NonceTest, IssueToUnknownOrEmptyNode) {
  auto ghost = service_->Issue("ghost");
  EXPECT_EQ(ghost.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ghost.status().message(), "node \"ghost\" is not enrolled.");
  auto empty = service_->Issue("");
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.status().message(), "node_id is empty.");
}

TEST_F(NonceTest, CustomTtl) {
  auto service = NonceService::New(*store_, clock_, 10);
  ASSERT_TRUE(service.ok()) << service.status().ToString();
  auto n = service->Issue("node-a");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->expires_at, kNow + 10);
  clock_.Advance(10);
  EXPECT_EQ(service->Consume(n->nonce, "node-a").code(),
            StatusCode::kDeadlineExceeded);
}

TEST(NonceServiceNewTest, TtlOutOfRange) {
  StrictMock<MockStore> store;
  FakeClock clock(kNow);
  for (int64_t ttl : {int64_t{0}, int64_t{-5}, int64_t{3601}}) {
    auto s = NonceService::New(store, clock, ttl);
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.status().message(), "nonce ttl " + std::to_string(ttl) +
                                        " s out of range [1, 3600].");
  }
}

// Malformed nonces are refused before the store is asked: the StrictMock
// fails the test on any call.
TEST(NonceFormatTest, MalformedNoncesNeverReachTheStore) {
  StrictMock<MockStore> store;
  FakeClock clock(kNow);
  auto service = NonceService::New(store, clock);
  ASSERT_TRUE(service.ok());
  const std::string good = Base64UrlEncode(Bytes(32, 0));  // "AAAA...A"
  struct Case {
    std::string name;
    std::string nonce;
    std::string message;
  };
  const Case cases[] = {
      {"empty", "", "nonce must be 43 base64url characters (32 bytes), got 0."},
      {"short", good.substr(0, 42),
       "nonce must be 43 base64url characters (32 bytes), got 42."},
      {"padded", good + "=",
       "nonce must be 43 base64url characters (32 bytes), got 44."},
      {"huge", std::string(1 << 20, 'A'),
       "nonce must be 43 base64url characters (32 bytes), got 1048576."},
      {"plus", "+" + good.substr(1),
       "nonce is not base64url: base64url: invalid character at offset 0."},
      {"slash", good.substr(0, 42) + "/",
       "nonce is not base64url: base64url: invalid character at offset 42."},
      {"nul", std::string("\0", 1) + good.substr(1),
       "nonce is not base64url: base64url: invalid character at offset 0."},
      // 43 chars carry 258 bits; the last 2 must be zero. 'B' sets one.
      {"non-canonical", good.substr(0, 42) + "B",
       "nonce is not base64url: base64url: non-zero trailing bits "
       "(non-canonical encoding)."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status s = service->Consume(c.nonce, "node-a");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.message);
    EXPECT_EQ(ValidateNonceFormat(c.nonce), s);
  }
  EXPECT_TRUE(ValidateNonceFormat(good).ok());
  Status empty_node = service->Consume(good, "");
  EXPECT_EQ(empty_node.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty_node.message(), "node_id is empty.");
}

TEST(NonceStoreErrorTest, StoreErrorsPropagate) {
  StrictMock<MockStore> store;
  FakeClock clock(kNow);
  auto service = NonceService::New(store, clock);
  ASSERT_TRUE(service.ok());
  EXPECT_CALL(store, InsertNonce(_, "node-a", kNow, kNow + 60))
      .WillOnce(Return(UnavailableError("sqlite: database is locked.")));
  auto issued = service->Issue("node-a");
  EXPECT_EQ(issued.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(issued.status().message(), "sqlite: database is locked.");

  const std::string good = Base64UrlEncode(Bytes(32, 7));
  EXPECT_CALL(store, ConsumeNonce(std::string_view(good), "node-a", kNow))
      .WillOnce(Return(DataLossError("sqlite: disk image is malformed.")));
  Status s = service->Consume(good, "node-a");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "sqlite: disk image is malformed.");
}

}  // namespace
}  // namespace dpuaudit::verifier
