// SqliteStore TPM bindings (issue 5) against real SQLite files in a fresh
// temporary directory: ValidateTpmBinding, PutTpmBinding,
// CreateNodeWithTpmBinding, ActivateTpmBinding, GetTpmBinding, and the
// tpm_bindings schema.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/bytes.h"
#include "testing/temp_dir.h"
#include "verifier/store/raw_db.h"
#include "verifier/store/sqlite_store.h"
#include "verifier/store/test_store.h"

namespace dpuaudit::verifier {
namespace {

using TempDir = ::dpuaudit::testing::TempDir;
using ::dpuaudit::testing::RawDb;

constexpr int64_t kCreated = 1000;
constexpr int64_t kExpires = 1300;

// 64 lower-case hex characters, all `c`.
std::string Sha(char c) { return std::string(64, c); }

NodeRecord Node(const std::string& id) {
  NodeRecord n;
  n.node_id = id;
  n.public_key_pem =
      "-----BEGIN PUBLIC KEY-----\nkey\n-----END PUBLIC KEY-----\n";
  n.key_thumbprint = "thumb-" + id;
  n.enrolled_at = 900;
  return n;
}

// A pending binding. `ek` picks the TPM (EK public and hash), `ak` the AK.
TpmBinding Binding(const std::string& node_id, char ek = 'e', char ak = 'a') {
  TpmBinding b;
  b.node_id = node_id;
  b.ek_public_b64 = Base64Encode(AsBytes("ek-public-" + std::string(1, ek)));
  b.ek_sha256 = Sha(ek);
  b.ek_cert_pem =
      "-----BEGIN CERTIFICATE-----\nek\n-----END CERTIFICATE-----\n";
  b.ek_cert_issuer = "CN=Example TPM CA";
  b.ak_public_b64 = Base64Encode(AsBytes("ak-public-" + std::string(1, ak)));
  b.ak_name_hex = "000b" + Sha(ak);  // TPM_ALG_SHA256 || digest
  b.state = TpmBindingState::kPending;
  b.credential_sha256 = Sha('c');
  b.challenge_expires_at = kExpires;
  b.created_at = kCreated;
  return b;
}

class TpmBindingStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DPA_REQUIRE_TEST_STORE(db_);
    path_ = db_.path();
    Reopen();
  }

  void Reopen() {
    store_.reset();
    auto store = db_.Open();
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }

  void Enroll(const std::string& id) {
    auto n = store_->CreateNode(Node(id));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
  }

  void Put(const TpmBinding& b) {
    Status s = store_->PutTpmBinding(b);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  TpmBinding Get(const std::string& id) {
    auto b = store_->GetTpmBinding(id);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? *b : TpmBinding();
  }

  TpmBinding Activate(const std::string& id, int64_t now = 1100) {
    auto b = store_->ActivateTpmBinding(id, Sha('c'), now);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    return b.ok() ? *b : TpmBinding();
  }

  int64_t Rows() {
    return db_.Int("SELECT count(*) FROM tpm_bindings");
  }

  ::dpuaudit::testing::TestStoreDb db_;

  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqlStore> store_;
};

constexpr const char* kCountTpmObjects =
    "SELECT count(*) FROM sqlite_schema WHERE "
    "(type = 'table' AND name = 'tpm_bindings') OR "
    "(type = 'index' AND name = 'tpm_bindings_active_ek')";

// --- Schema ------------------------------------------------------------------

TEST_F(TpmBindingStoreTest, FreshFileHasTheTableAndPartialUniqueIndex) {
  DPA_SQLITE_ONLY("sqlite_schema and PRAGMA user_version");
  auto& raw = db_;
  EXPECT_EQ(raw.Int(kCountTpmObjects), 2);
  EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE type = 'index' "
                    "AND name = 'tpm_bindings_active_ek' AND sql LIKE "
                    "'%UNIQUE%WHERE state = ''active''%'"),
            1);
  EXPECT_EQ(raw.Int("PRAGMA user_version"), SqliteStore::kSchemaVersion);
}

// A schema-1 file from before TPM bindings: Open adds the table and index
// and keeps the data.
TEST_F(TpmBindingStoreTest, OlderSchemaOneFileGainsTheTable) {
  DPA_SQLITE_ONLY("a schema-1 SQLite file");
  Enroll("n1");
  store_.reset();
  {
    auto& raw = db_;
    raw.Exec("DROP INDEX tpm_bindings_active_ek; DROP TABLE tpm_bindings;");
    EXPECT_EQ(raw.Int(kCountTpmObjects), 0);
  }
  Reopen();
  EXPECT_EQ(db_.Int(kCountTpmObjects), 2);
  EXPECT_TRUE(store_->GetNode("n1").ok());
  Put(Binding("n1"));
  EXPECT_EQ(Get("n1"), Binding("n1"));
}

// The oldest schema-1 file (neither reference values nor TPM bindings): both
// sets of tables are added.
TEST_F(TpmBindingStoreTest, OriginalSchemaOneFileGainsAllAddedTables) {
  DPA_SQLITE_ONLY("a schema-1 SQLite file");
  Enroll("n1");
  store_.reset();
  {
    auto& raw = db_;
    raw.Exec(
        "DROP INDEX tpm_bindings_active_ek; DROP TABLE tpm_bindings; "
        "DROP TABLE node_releases; DROP TABLE ref_generation; "
        "DROP TABLE ref_releases;");
    EXPECT_EQ(raw.Int("SELECT count(*) FROM sqlite_schema WHERE name LIKE "
                      "'ref_%' OR name LIKE 'tpm_%' OR name = "
                      "'node_releases'"),
              0);
  }
  Reopen();
  EXPECT_EQ(db_.Int(kCountTpmObjects), 2);
  auto generation = store_->RefvalsGeneration();
  ASSERT_TRUE(generation.ok()) << generation.status().ToString();
  EXPECT_EQ(*generation, 0);
  Put(Binding("n1"));
  EXPECT_EQ(Activate("n1").state, TpmBindingState::kActive);
}

// A file written by hand with the original schema-1 DDL (before reference
// values and TPM bindings existed), holding one enrolled node.
TEST(TpmBindingStoreOpenTest, HandMadeSchemaOneFileOpensAndGainsTheTable) {
  TempDir dir;
  std::string path = dir.File("old.db");
  {
    RawDb raw(path);
    raw.Exec(R"sql(
PRAGMA journal_mode = WAL;
CREATE TABLE nodes (
  node_id        TEXT PRIMARY KEY NOT NULL,
  public_key_pem TEXT NOT NULL,
  key_thumbprint TEXT NOT NULL,
  alg            TEXT NOT NULL,
  state          TEXT NOT NULL
                 CHECK (state IN ('pending', 'approved', 'revoked')),
  enrolled_at    INTEGER NOT NULL,
  approved_at    INTEGER
) STRICT;
CREATE TABLE nonces (
  nonce      TEXT PRIMARY KEY NOT NULL,
  node_id    TEXT NOT NULL REFERENCES nodes(node_id),
  issued_at  INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at    INTEGER
) STRICT;
CREATE INDEX nonces_by_expiry ON nonces(expires_at);
CREATE TABLE reports (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  node_id     TEXT NOT NULL,
  jws         BLOB NOT NULL,
  sha256      TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  accepted    INTEGER NOT NULL CHECK (accepted IN (0, 1)),
  error       TEXT NOT NULL
) STRICT;
CREATE INDEX reports_by_node ON reports(node_id, received_at);
CREATE TABLE results (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  node_id           TEXT NOT NULL REFERENCES nodes(node_id),
  report_id         INTEGER NOT NULL REFERENCES reports(id),
  decision          TEXT NOT NULL CHECK (decision IN ('admit', 'deny')),
  ear_jwt           TEXT NOT NULL,
  reasons_json      TEXT NOT NULL,
  report_jws_sha256 TEXT NOT NULL,
  created_at        INTEGER NOT NULL,
  expires_at        INTEGER NOT NULL
) STRICT;
CREATE INDEX results_by_node ON results(node_id, created_at, id);
INSERT INTO nodes VALUES ('n1', 'pem', 'thumb', 'ES256', 'approved', 900,
                          950);
PRAGMA application_id = 1146110257;
PRAGMA user_version = 1;
)sql");
    EXPECT_EQ(raw.Int(kCountTpmObjects), 0);
  }
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(RawDb(path).Int(kCountTpmObjects), 2);
  auto node = (*store)->GetNode("n1");
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(node->state, NodeState::kApproved);
  auto none = (*store)->GetTpmBinding("n1");
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(none.status().message(), "node \"n1\" has no TPM binding.");
  Status put = (*store)->PutTpmBinding(Binding("n1"));
  ASSERT_TRUE(put.ok()) << put.ToString();
  auto active = (*store)->ActivateTpmBinding("n1", Sha('c'), 1100);
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  EXPECT_EQ(active->state, TpmBindingState::kActive);
  // Opening it again finds the table and changes nothing.
  store->reset();
  auto again = SqliteStore::Open(path);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  auto got = (*again)->GetTpmBinding("n1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, *active);
}

TEST_F(TpmBindingStoreTest, StateNames) {
  EXPECT_EQ(TpmBindingStateName(TpmBindingState::kPending), "pending");
  EXPECT_EQ(TpmBindingStateName(TpmBindingState::kActive), "active");
}

// --- PutTpmBinding / GetTpmBinding -----------------------------------------

TEST_F(TpmBindingStoreTest, PutThenGetReturnsTheSameBinding) {
  Enroll("n1");
  TpmBinding b = Binding("n1");
  Put(b);
  EXPECT_EQ(Get("n1"), b);
  Reopen();
  EXPECT_EQ(Get("n1"), b);
}

TEST_F(TpmBindingStoreTest, PutWithoutEkCertificateRoundTrips) {
  Enroll("n1");
  TpmBinding b = Binding("n1");
  b.ek_cert_pem.clear();
  b.ek_cert_issuer.clear();
  Put(b);
  EXPECT_EQ(Get("n1"), b);
}

TEST_F(TpmBindingStoreTest, GetWithoutBinding) {
  Enroll("n1");
  auto got = store_->GetTpmBinding("n1");
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(), "node \"n1\" has no TPM binding.");
}

TEST_F(TpmBindingStoreTest, PutForUnknownNodeIsNotFoundAndStoresNothing) {
  Status s = store_->PutTpmBinding(Binding("ghost"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "node \"ghost\" is not enrolled.");
  EXPECT_EQ(Rows(), 0);
}

TEST_F(TpmBindingStoreTest, PutActiveBindingIsRefused) {
  Enroll("n1");
  TpmBinding b = Binding("n1");
  b.state = TpmBindingState::kActive;
  b.activated_at = 1100;
  Status s = store_->PutTpmBinding(b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "a TPM binding must be put in state pending.");
  EXPECT_EQ(Rows(), 0);
}

TEST_F(TpmBindingStoreTest, PutReplacesAPendingBinding) {
  Enroll("n1");
  Put(Binding("n1", 'e', 'a'));
  TpmBinding replacement = Binding("n1", 'f', 'b');
  replacement.credential_sha256 = Sha('d');
  replacement.created_at = 2000;
  replacement.challenge_expires_at = 2300;
  replacement.ek_cert_pem.clear();
  replacement.ek_cert_issuer.clear();
  Put(replacement);
  EXPECT_EQ(Get("n1"), replacement);
  EXPECT_EQ(Rows(), 1);
}

// Two nodes may hold pending bindings of one TPM; only activation decides.
TEST_F(TpmBindingStoreTest, PendingBindingsMayShareAnEk) {
  Enroll("n1");
  Enroll("n2");
  Put(Binding("n1", 'e', 'a'));
  Put(Binding("n2", 'e', 'b'));
  EXPECT_EQ(Get("n1"), Binding("n1", 'e', 'a'));
  EXPECT_EQ(Get("n2"), Binding("n2", 'e', 'b'));
}

TEST_F(TpmBindingStoreTest, RePutOfTheSameTpmAfterActivationIsOkAndUnchanged) {
  Enroll("n1");
  Put(Binding("n1"));
  TpmBinding active = Activate("n1");
  // Same EK and AK; a new challenge and certificate are ignored.
  TpmBinding again = Binding("n1");
  again.credential_sha256 = Sha('9');
  again.created_at = 5000;
  again.challenge_expires_at = 5300;
  again.ek_cert_pem.clear();
  again.ek_cert_issuer.clear();
  Status s = store_->PutTpmBinding(again);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Get("n1"), active);
}

TEST_F(TpmBindingStoreTest, PutOfAnotherAkOrEkAfterActivationIsRefused) {
  Enroll("n1");
  Put(Binding("n1", 'e', 'a'));
  TpmBinding active = Activate("n1");

  struct Case {
    const char* name;
    TpmBinding binding;
  };
  TpmBinding other_ak_public = Binding("n1", 'e', 'a');
  other_ak_public.ak_public_b64 = Base64Encode(AsBytes("ak-public-z"));
  TpmBinding other_ek_public = Binding("n1", 'e', 'a');
  other_ek_public.ek_public_b64 = Base64Encode(AsBytes("ek-public-z"));
  const std::vector<Case> cases = {
      {"different AK", Binding("n1", 'e', 'b')},
      {"different EK", Binding("n1", 'f', 'a')},
      {"different EK and AK", Binding("n1", 'f', 'b')},
      {"same AK name, different AK public", other_ak_public},
      {"same EK hash, different EK public", other_ek_public},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Status s = store_->PutTpmBinding(c.binding);
    EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(s.message(), "node \"n1\" is bound to another TPM.");
    EXPECT_EQ(Get("n1"), active);
  }
}

TEST_F(TpmBindingStoreTest, PutOfAnEkActiveOnAnotherNodeIsRefused) {
  Enroll("n1");
  Enroll("n2");
  Put(Binding("n1", 'e', 'a'));
  TpmBinding active = Activate("n1");
  Status s = store_->PutTpmBinding(Binding("n2", 'e', 'b'));
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), "this TPM is bound to node \"n1\".");
  EXPECT_EQ(store_->GetTpmBinding("n2").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(Get("n1"), active);
}

// n2's pending binding is kept as it was when the refused put would have
// replaced it.
TEST_F(TpmBindingStoreTest, RefusedPutLeavesThePendingBindingAsItWas) {
  Enroll("n1");
  Enroll("n2");
  Put(Binding("n1", 'e', 'a'));
  Activate("n1");
  TpmBinding pending = Binding("n2", 'f', 'b');
  Put(pending);
  Status s = store_->PutTpmBinding(Binding("n2", 'e', 'b'));
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.message(), "this TPM is bound to node \"n1\".");
  EXPECT_EQ(Get("n2"), pending);
}

// --- CreateNodeWithTpmBinding ------------------------------------------------
// CreateNode then PutTpmBinding (then the approval) in one transaction: the
// same results and refusals, and a refusal stores nothing at all.

TEST_F(TpmBindingStoreTest, CreateWithBindingStoresNodeAndBinding) {
  auto node =
      store_->CreateNodeWithTpmBinding(Node("n1"), Binding("n1"), std::nullopt,
                                       EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(*node, Node("n1"));
  Reopen();
  auto stored = store_->GetNode("n1");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(*stored, Node("n1"));
  EXPECT_EQ(stored->state, NodeState::kPending);
  EXPECT_EQ(Get("n1"), Binding("n1"));
}

// approve_at approves a pending node (new or existing) in the same
// transaction; an approved node keeps its first approved_at and a revoked
// one stays revoked, as ApproveNode after Enroll's checks.
TEST_F(TpmBindingStoreTest, CreateWithBindingApprovesAPendingNode) {
  auto created = store_->CreateNodeWithTpmBinding(
      Node("n1"), Binding("n1", 'e'), 950, EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->state, NodeState::kApproved);
  EXPECT_EQ(created->approved_at, 950);
  EXPECT_EQ(*store_->GetNode("n1"), *created);

  Enroll("n2");  // pending, without a TPM
  auto existing = store_->CreateNodeWithTpmBinding(
      Node("n2"), Binding("n2", 'f'), 960, EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(existing.ok()) << existing.status().ToString();
  EXPECT_EQ(existing->state, NodeState::kApproved);
  EXPECT_EQ(existing->approved_at, 960);
  EXPECT_EQ(existing->enrolled_at, 900);
  EXPECT_EQ(Get("n2"), Binding("n2", 'f'));

  auto again = store_->CreateNodeWithTpmBinding(
      Node("n2"), Binding("n2", 'f'), 970, EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->approved_at, 960);

  Enroll("n3");
  ASSERT_TRUE(store_->RevokeNode("n3").ok());
  auto revoked = store_->CreateNodeWithTpmBinding(
      Node("n3"), Binding("n3", 'd'), 980, EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(revoked.ok()) << revoked.status().ToString();
  EXPECT_EQ(revoked->state, NodeState::kRevoked);
  EXPECT_FALSE(revoked->approved_at.has_value());
  EXPECT_EQ(store_->GetNode("n3")->state, NodeState::kRevoked);
}

// Repeating an enrollment is idempotent for the node (returned unchanged,
// its state not reset) and, as PutTpmBinding, replaces a pending binding
// and leaves an active binding of the same TPM as it is.
TEST_F(TpmBindingStoreTest, CreateWithBindingRepeatedIsIdempotent) {
  ASSERT_TRUE(store_
                  ->CreateNodeWithTpmBinding(Node("n1"), Binding("n1"), 950,
                                             EnrollAuthority::kBootstrapToken)
                  .ok());
  const NodeRecord first = *store_->GetNode("n1");
  TpmBinding rechallenge = Binding("n1");
  rechallenge.credential_sha256 = Sha('d');
  rechallenge.created_at = 2000;
  rechallenge.challenge_expires_at = 2300;
  NodeRecord later = Node("n1");
  later.enrolled_at = 1999;
  auto again = store_->CreateNodeWithTpmBinding(
      later, rechallenge, std::nullopt, EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, first);
  EXPECT_EQ(*store_->GetNode("n1"), first);
  EXPECT_EQ(Get("n1"), rechallenge);

  auto active = store_->ActivateTpmBinding("n1", Sha('d'), 2100);
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  auto third =
      store_->CreateNodeWithTpmBinding(Node("n1"), Binding("n1"), std::nullopt,
                                       EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(*third, first);
  EXPECT_EQ(Get("n1"), *active);
  EXPECT_EQ(Rows(), 1);
}

// Another key for an existing node: CreateNode's refusal, and the binding
// (and approval) not stored.
TEST_F(TpmBindingStoreTest, CreateWithBindingOfAnotherKeyStoresNothing) {
  Enroll("n1");
  NodeRecord other = Node("n1");
  other.key_thumbprint = "thumb-other";
  auto r = store_->CreateNodeWithTpmBinding(other, Binding("n1"), 950,
                                            EnrollAuthority::kBootstrapToken);
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(r.status().message(),
            "node \"n1\" is already enrolled with a different key.");
  EXPECT_EQ(*store_->GetNode("n1"), Node("n1"));
  EXPECT_EQ(Rows(), 0);
}

// The EK is active on another node: PutTpmBinding's refusal, and the node
// this call would have created does not exist.
TEST_F(TpmBindingStoreTest,
       CreateWithBindingOfAnEkBoundElsewhereStoresNothing) {
  Enroll("n1");
  Put(Binding("n1", 'e', 'a'));
  const TpmBinding active = Activate("n1");
  for (std::optional<int64_t> approve_at :
       {std::optional<int64_t>(), std::optional<int64_t>(950)}) {
    SCOPED_TRACE(approve_at ? "with approval" : "without approval");
    auto r = store_->CreateNodeWithTpmBinding(
        Node("n2"), Binding("n2", 'e', 'b'), approve_at,
        EnrollAuthority::kBootstrapToken);
    EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(r.status().message(), "this TPM is bound to node \"n1\".");
    auto n2 = store_->GetNode("n2");
    EXPECT_EQ(n2.status().code(), StatusCode::kNotFound);
    EXPECT_EQ(n2.status().message(), "node \"n2\" is not enrolled.");
    EXPECT_EQ(store_->GetTpmBinding("n2").status().code(),
              StatusCode::kNotFound);
  }
  EXPECT_EQ(Get("n1"), active);
  EXPECT_EQ(db_.Int("SELECT count(*) FROM nodes"), 1);
  EXPECT_EQ(Rows(), 1);
}

// An existing pending node whose active binding is another TPM: refused,
// and the approval asked for is rolled back with it.
TEST_F(TpmBindingStoreTest, CreateWithBindingOfAnotherTpmKeepsTheNodePending) {
  Enroll("n1");
  Put(Binding("n1", 'e', 'a'));
  const TpmBinding active = Activate("n1");
  auto r =
      store_->CreateNodeWithTpmBinding(Node("n1"), Binding("n1", 'f', 'b'), 950,
                                       EnrollAuthority::kBootstrapToken);
  EXPECT_EQ(r.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(r.status().message(), "node \"n1\" is bound to another TPM.");
  EXPECT_EQ(*store_->GetNode("n1"), Node("n1"));
  EXPECT_EQ(Get("n1"), active);
}

// Without the bootstrap token (EnrollAuthority::kNone) a new node is
// created with its binding as usual, but the TPM of a node that exists may
// not be replaced, nor its outstanding challenge re-issued, nor a TPM added
// to an approved node; each refusal is decided in the transaction that would
// write, and leaves node and binding as they were.
TEST_F(TpmBindingStoreTest, CreateWithBindingWithoutAuthority) {
  constexpr auto kNone = EnrollAuthority::kNone;
  // A new node: stored pending with its binding.
  auto fresh = store_->CreateNodeWithTpmBinding(Node("n1"), Binding("n1"),
                                                std::nullopt, kNone);
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  EXPECT_EQ(fresh->state, NodeState::kPending);
  EXPECT_EQ(Get("n1"), Binding("n1"));

  // The same TPM again while its challenge is outstanding (created_at <
  // challenge_expires_at): refused, the first challenge stays.
  TpmBinding rechallenge = Binding("n1");
  rechallenge.credential_sha256 = Sha('d');
  rechallenge.created_at = kExpires - 1;
  rechallenge.challenge_expires_at = kExpires + 299;
  auto early = store_->CreateNodeWithTpmBinding(Node("n1"), rechallenge,
                                                std::nullopt, kNone);
  EXPECT_EQ(early.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      early.status().message(),
      "node \"n1\" has a TPM credential challenge outstanding until 1300; "
      "activate "
      "it, or enroll again after it expires or with the bootstrap token.");
  EXPECT_EQ(Get("n1"), Binding("n1"));

  // Another TPM (EK or AK): refused, whatever the binding's state.
  for (TpmBinding other : {Binding("n1", 'f'), Binding("n1", 'e', 'b')}) {
    other.created_at = kExpires + 10;
    other.challenge_expires_at = kExpires + 310;
    auto r = store_->CreateNodeWithTpmBinding(Node("n1"), other, std::nullopt,
                                              kNone);
    EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(r.status().message(),
              "node \"n1\" is bound to another TPM; rebinding it needs the "
              "bootstrap token.");
    EXPECT_EQ(Get("n1"), Binding("n1"));
  }

  // Once the challenge expired, the same TPM is challenged again.
  rechallenge.created_at = kExpires;
  auto later = store_->CreateNodeWithTpmBinding(Node("n1"), rechallenge,
                                                std::nullopt, kNone);
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(Get("n1"), rechallenge);

  // An active binding of the same TPM is left as it is.
  auto active = store_->ActivateTpmBinding("n1", Sha('d'), kExpires + 1);
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  TpmBinding same = Binding("n1");
  same.created_at = kExpires + 500;
  same.challenge_expires_at = kExpires + 800;
  auto idem =
      store_->CreateNodeWithTpmBinding(Node("n1"), same, std::nullopt, kNone);
  ASSERT_TRUE(idem.ok()) << idem.status().ToString();
  EXPECT_EQ(Get("n1"), *active);

  // An approved node without a TPM cannot gain one; a pending one can.
  Enroll("n2");
  ASSERT_TRUE(store_->ApproveNode("n2", 950).ok());
  auto approved = store_->CreateNodeWithTpmBinding(
      Node("n2"), Binding("n2", 'b'), std::nullopt, kNone);
  EXPECT_EQ(approved.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(
      approved.status().message(),
      "node \"n2\" is approved; adding a TPM to it needs the bootstrap token.");
  EXPECT_EQ(store_->GetTpmBinding("n2").status().code(), StatusCode::kNotFound);
  Enroll("n3");
  auto pending = store_->CreateNodeWithTpmBinding(
      Node("n3"), Binding("n3", 'd'), std::nullopt, kNone);
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_EQ(Get("n3"), Binding("n3", 'd'));

  // With the token, the same requests that were refused go through.
  auto token = store_->CreateNodeWithTpmBinding(
      Node("n2"), Binding("n2", 'b'), 960, EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(Get("n2"), Binding("n2", 'b'));
  EXPECT_EQ(Rows(), 3);
}

// Input errors are reported before the database is touched: nothing stored.
TEST_F(TpmBindingStoreTest, CreateWithBindingRefusesBadInput) {
  struct Case {
    const char* name;
    NodeRecord node;
    TpmBinding binding;
    std::string message;
  };
  NodeRecord no_key = Node("n1");
  no_key.key_thumbprint.clear();
  TpmBinding active = Binding("n1");
  active.state = TpmBindingState::kActive;
  active.activated_at = 1100;
  TpmBinding bad_ek = Binding("n1");
  bad_ek.ek_sha256 = Sha('E');
  const std::vector<Case> cases = {
      {"invalid node", no_key, Binding("n1"), "key_thumbprint is empty."},
      {"active binding", Node("n1"), active,
       "a TPM binding must be put in state pending."},
      {"invalid binding", Node("n1"), bad_ek,
       "ek_sha256 is not 64 lower-case hex characters."},
      {"binding of another node", Node("n1"), Binding("n2"),
       "TPM binding is for node \"n2\", not \"n1\"."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto r = store_->CreateNodeWithTpmBinding(c.node, c.binding, 950,
                                              EnrollAuthority::kBootstrapToken);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), c.message);
  }
  EXPECT_EQ(db_.Int("SELECT count(*) FROM nodes"), 0);
  EXPECT_EQ(Rows(), 0);
}

// --- ActivateTpmBinding ------------------------------------------------------

TEST_F(TpmBindingStoreTest, ActivateMakesTheBindingActiveAndClearsTheHash) {
  Enroll("n1");
  TpmBinding b = Binding("n1");
  Put(b);
  auto active = store_->ActivateTpmBinding("n1", Sha('c'), 1299);
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  TpmBinding want = b;
  want.state = TpmBindingState::kActive;
  want.activated_at = 1299;
  want.credential_sha256 = "";
  EXPECT_EQ(*active, want);
  EXPECT_EQ(Get("n1"), want);
  Reopen();
  EXPECT_EQ(Get("n1"), want);
  EXPECT_EQ(db_.Text("SELECT credential_sha256 FROM tpm_bindings"),
            "");
}

// Each refusal: exact code and message, and the stored binding unchanged.
TEST_F(TpmBindingStoreTest, RefusedActivationsChangeNothing) {
  Enroll("n1");
  Put(Binding("n1"));
  const TpmBinding before = Get("n1");
  struct Case {
    const char* name;
    std::string credential;
    int64_t now;
    StatusCode code;
    std::string message;
  };
  std::string upper = Sha('c');
  upper[0] = 'C';
  const std::vector<Case> cases = {
      {"wrong credential", Sha('d'), 1100, StatusCode::kFailedPrecondition,
       "credential does not match."},
      {"credential differs in the last character", Sha('c').substr(0, 63) + "d",
       1100, StatusCode::kFailedPrecondition, "credential does not match."},
      {"upper-case credential", upper, 1100, StatusCode::kFailedPrecondition,
       "credential does not match."},
      {"short credential", Sha('c').substr(0, 63), 1100,
       StatusCode::kFailedPrecondition, "credential does not match."},
      {"empty credential", "", 1100, StatusCode::kFailedPrecondition,
       "credential does not match."},
      {"expired exactly at challenge_expires_at", Sha('c'), kExpires,
       StatusCode::kDeadlineExceeded, "credential challenge expired at 1300."},
      {"expired later", Sha('c'), kExpires + 1000,
       StatusCode::kDeadlineExceeded, "credential challenge expired at 1300."},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = store_->ActivateTpmBinding("n1", c.credential, c.now);
    EXPECT_EQ(got.status().code(), c.code);
    EXPECT_EQ(got.status().message(), c.message);
    EXPECT_EQ(Get("n1"), before);
  }
  // None of the refusals spent the challenge.
  EXPECT_EQ(Activate("n1", kExpires - 1).state, TpmBindingState::kActive);
}

TEST_F(TpmBindingStoreTest, ActivateTwiceIsRefusedAndKeepsTheFirstActivation) {
  Enroll("n1");
  Put(Binding("n1"));
  TpmBinding first = Activate("n1", 1100);
  auto again = store_->ActivateTpmBinding("n1", Sha('c'), 1200);
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.status().message(),
            "TPM binding of node \"n1\" is already active.");
  EXPECT_EQ(Get("n1"), first);
  EXPECT_EQ(*Get("n1").activated_at, 1100);
}

TEST_F(TpmBindingStoreTest, ActivateWithoutBindingIsNotFound) {
  Enroll("n1");
  for (const char* id : {"n1", "ghost"}) {
    SCOPED_TRACE(id);
    auto got = store_->ActivateTpmBinding(id, Sha('c'), 1100);
    EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
    EXPECT_EQ(got.status().message(),
              "node \"" + std::string(id) + "\" has no TPM binding.");
  }
  EXPECT_EQ(Rows(), 0);
}

// "Already active" is reported before the credential or the clock is
// looked at.
TEST_F(TpmBindingStoreTest, AlreadyActiveBeatsWrongCredentialAndExpiry) {
  Enroll("n1");
  Put(Binding("n1"));
  TpmBinding active = Activate("n1");
  auto got = store_->ActivateTpmBinding("n1", Sha('d'), kExpires + 5);
  EXPECT_EQ(got.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(got.status().message(),
            "TPM binding of node \"n1\" is already active.");
  EXPECT_EQ(Get("n1"), active);
}

// Two nodes raced to bind one TPM while both were pending: the second
// activation is refused and its binding stays pending.
TEST_F(TpmBindingStoreTest, ActivatingAnEkActiveOnAnotherNodeIsRefused) {
  Enroll("n1");
  Enroll("n2");
  Put(Binding("n1", 'e', 'a'));
  Put(Binding("n2", 'e', 'b'));
  TpmBinding n1 = Activate("n1");
  const TpmBinding n2 = Get("n2");
  auto got = store_->ActivateTpmBinding("n2", Sha('c'), 1100);
  EXPECT_EQ(got.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(got.status().message(), "this TPM is bound to node \"n1\".");
  EXPECT_EQ(Get("n2"), n2);
  EXPECT_EQ(Get("n1"), n1);
}

// The partial unique index holds even for a writer that bypasses the Store.
TEST_F(TpmBindingStoreTest, DatabaseRefusesASecondActiveBindingOfOneEk) {
  DPA_SQLITE_ONLY("SQLite result codes of a raw sqlite3 connection");
  Enroll("n1");
  Enroll("n2");
  Put(Binding("n1", 'e', 'a'));
  Put(Binding("n2", 'e', 'b'));
  Activate("n1");
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_extended_result_codes(db, 1);
  int rc = sqlite3_exec(db,
                        "UPDATE tpm_bindings SET state = 'active', "
                        "activated_at = 1, credential_sha256 = '' "
                        "WHERE node_id = 'n2'",
                        nullptr, nullptr, nullptr);
  EXPECT_EQ(rc, SQLITE_CONSTRAINT_UNIQUE);
  // An active row must have activated_at and no credential hash.
  rc = sqlite3_exec(db,
                    "UPDATE tpm_bindings SET credential_sha256 = 'x' "
                    "WHERE node_id = 'n1'",
                    nullptr, nullptr, nullptr);
  EXPECT_EQ(rc, SQLITE_CONSTRAINT_CHECK);
  sqlite3_close(db);
}

// Many threads on one SqliteStore, then on separate connections (as
// separate verifier processes would have): exactly one activation wins.
TEST_F(TpmBindingStoreTest, ConcurrentActivationsOnOneConnectionSucceedOnce) {
  constexpr int kNodes = 10;
  constexpr int kThreads = 8;
  for (int i = 0; i < kNodes; ++i) {
    std::string id = "n" + std::to_string(i);
    Enroll(id);
    Put(Binding(id, static_cast<char>('0' + i), 'a'));
  }
  for (int i = 0; i < kNodes; ++i) {
    std::string id = "n" + std::to_string(i);
    std::atomic<int> ok{0}, already{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        auto got = store_->ActivateTpmBinding(id, Sha('c'), 1100);
        if (got.ok()) {
          ++ok;
        } else if (got.status().code() == StatusCode::kFailedPrecondition &&
                   got.status().message() == "TPM binding of node \"" + id +
                                                 "\" is already active.") {
          ++already;
        } else {
          ++other;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok.load(), 1) << id;
    EXPECT_EQ(already.load(), kThreads - 1) << id;
    EXPECT_EQ(other.load(), 0) << id;
    EXPECT_EQ(Get(id).state, TpmBindingState::kActive);
  }
}

TEST_F(TpmBindingStoreTest, ConcurrentActivationsAcrossConnectionsSucceedOnce) {
  constexpr int kConnections = 4;
  constexpr int kNodes = 10;
  for (int i = 0; i < kNodes; ++i) {
    std::string id = "n" + std::to_string(i);
    Enroll(id);
    Put(Binding(id, static_cast<char>('0' + i), 'a'));
  }
  std::vector<std::unique_ptr<SqlStore>> stores;
  for (int c = 0; c < kConnections; ++c) {
    auto s = db_.Open();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    stores.push_back(std::move(s).value());
  }
  std::atomic<int> ok{0}, already{0}, other{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kConnections; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < kNodes; ++i) {
        auto got = stores[c]->ActivateTpmBinding("n" + std::to_string(i),
                                                 Sha('c'), 1100);
        if (got.ok()) {
          ++ok;
        } else if (got.status().code() == StatusCode::kFailedPrecondition) {
          ++already;
        } else {
          ++other;
          ADD_FAILURE() << got.status().ToString();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), kNodes);
  EXPECT_EQ(already.load(), kNodes * (kConnections - 1));
  EXPECT_EQ(other.load(), 0);
}

// Several nodes racing to activate one TPM: exactly one wins.
TEST_F(TpmBindingStoreTest, ConcurrentActivationsOfOneEkBindItToOneNode) {
  constexpr int kNodes = 8;
  for (int i = 0; i < kNodes; ++i) {
    std::string id = "n" + std::to_string(i);
    Enroll(id);
    Put(Binding(id, 'e', static_cast<char>('0' + i)));
  }
  std::atomic<int> ok{0}, bound{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kNodes; ++i) {
    threads.emplace_back([&, i] {
      auto got =
          store_->ActivateTpmBinding("n" + std::to_string(i), Sha('c'), 1100);
      if (got.ok()) {
        ++ok;
      } else if (got.status().code() == StatusCode::kAlreadyExists) {
        ++bound;
      } else {
        ++other;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(bound.load(), kNodes - 1);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(db_.Int(
                "SELECT count(*) FROM tpm_bindings WHERE state = 'active'"),
            1);
}

// --- Corruption --------------------------------------------------------------

TEST_F(TpmBindingStoreTest, CorruptRowIsDataLoss) {
  Enroll("n1");
  Put(Binding("n1"));
  db_.Exec("UPDATE tpm_bindings SET ek_sha256 = 'XYZ'");
  auto got = store_->GetTpmBinding("n1");
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(got.status().message(),
            "sqlite: TPM binding of node \"n1\" is corrupt: ek_sha256 is not "
            "64 lower-case hex characters.");
  auto activated = store_->ActivateTpmBinding("n1", Sha('c'), 1100);
  EXPECT_EQ(activated.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(activated.status().message(), got.status().message());
  EXPECT_EQ(db_.Text("SELECT state FROM tpm_bindings"), "pending");
}

// --- Validation --------------------------------------------------------------

struct ValidationCase {
  const char* name;
  void (*mutate)(TpmBinding&);
  const char* message;
};

const ValidationCase kValidationCases[] = {
    {"empty node_id", [](TpmBinding& b) { b.node_id.clear(); },
     "node_id is empty."},
    {"empty ek_public_b64", [](TpmBinding& b) { b.ek_public_b64.clear(); },
     "ek_public_b64 is empty."},
    {"ek_public_b64 unpadded", [](TpmBinding& b) { b.ek_public_b64 = "QQ"; },
     "ek_public_b64 is not canonical base64."},
    {"ek_public_b64 non-zero trailing bits",
     [](TpmBinding& b) { b.ek_public_b64 = "QR=="; },
     "ek_public_b64 is not canonical base64."},
    {"ek_public_b64 base64url alphabet",
     [](TpmBinding& b) { b.ek_public_b64 = "ab-_"; },
     "ek_public_b64 is not canonical base64."},
    {"ek_public_b64 with whitespace",
     [](TpmBinding& b) { b.ek_public_b64 = "QUJD\nRA=="; },
     "ek_public_b64 is not canonical base64."},
    {"ek_public_b64 padding in the middle",
     [](TpmBinding& b) { b.ek_public_b64 = "QQ==QUJD"; },
     "ek_public_b64 is not canonical base64."},
    {"empty ek_sha256", [](TpmBinding& b) { b.ek_sha256.clear(); },
     "ek_sha256 is not 64 lower-case hex characters."},
    {"upper-case ek_sha256", [](TpmBinding& b) { b.ek_sha256 = Sha('E'); },
     "ek_sha256 is not 64 lower-case hex characters."},
    {"short ek_sha256",
     [](TpmBinding& b) { b.ek_sha256 = std::string(62, 'e'); },
     "ek_sha256 is not 64 lower-case hex characters."},
    {"long ek_sha256",
     [](TpmBinding& b) { b.ek_sha256 = std::string(66, 'e'); },
     "ek_sha256 is not 64 lower-case hex characters."},
    {"non-hex ek_sha256", [](TpmBinding& b) { b.ek_sha256 = Sha('g'); },
     "ek_sha256 is not 64 lower-case hex characters."},
    {"empty ak_public_b64", [](TpmBinding& b) { b.ak_public_b64.clear(); },
     "ak_public_b64 is empty."},
    {"ak_public_b64 not base64",
     [](TpmBinding& b) { b.ak_public_b64 = "not base64!"; },
     "ak_public_b64 is not canonical base64."},
    {"ak_public_b64 non-zero trailing bits",
     [](TpmBinding& b) { b.ak_public_b64 = "QUJ="; },
     "ak_public_b64 is not canonical base64."},
    {"empty ak_name_hex", [](TpmBinding& b) { b.ak_name_hex.clear(); },
     "ak_name_hex is not an even number (4 to 132) of lower-case hex "
     "characters."},
    {"ak_name_hex too short", [](TpmBinding& b) { b.ak_name_hex = "000"; },
     "ak_name_hex is not an even number (4 to 132) of lower-case hex "
     "characters."},
    {"ak_name_hex too long",
     [](TpmBinding& b) { b.ak_name_hex = std::string(134, 'a'); },
     "ak_name_hex is not an even number (4 to 132) of lower-case hex "
     "characters."},
    {"ak_name_hex odd length", [](TpmBinding& b) { b.ak_name_hex += "a"; },
     "ak_name_hex is not an even number (4 to 132) of lower-case hex "
     "characters."},
    {"ak_name_hex upper case",
     [](TpmBinding& b) { b.ak_name_hex = "000B" + Sha('a'); },
     "ak_name_hex is not an even number (4 to 132) of lower-case hex "
     "characters."},
    {"ak_name_hex non-hex",
     [](TpmBinding& b) { b.ak_name_hex = "000x" + Sha('a'); },
     "ak_name_hex is not an even number (4 to 132) of lower-case hex "
     "characters."},
    {"pending without credential_sha256",
     [](TpmBinding& b) { b.credential_sha256.clear(); },
     "credential_sha256 of a pending binding is not 64 lower-case hex "
     "characters."},
    {"pending with upper-case credential_sha256",
     [](TpmBinding& b) { b.credential_sha256 = Sha('C'); },
     "credential_sha256 of a pending binding is not 64 lower-case hex "
     "characters."},
    {"pending with short credential_sha256",
     [](TpmBinding& b) { b.credential_sha256 = std::string(40, 'c'); },
     "credential_sha256 of a pending binding is not 64 lower-case hex "
     "characters."},
    {"challenge expiring at creation",
     [](TpmBinding& b) { b.challenge_expires_at = b.created_at; },
     "challenge_expires_at 1000 is not after created_at 1000."},
    {"challenge expiring before creation",
     [](TpmBinding& b) { b.challenge_expires_at = 0; },
     "challenge_expires_at 0 is not after created_at 1000."},
    {"negative created_at",
     [](TpmBinding& b) {
       b.created_at = -5;
       b.challenge_expires_at = 10;
     },
     "created_at is negative."},
};

// The same records are refused by ValidateTpmBinding and by PutTpmBinding,
// which stores nothing.
TEST_F(TpmBindingStoreTest, ValidationNamesTheField) {
  Enroll("n1");
  ASSERT_TRUE(ValidateTpmBinding(Binding("n1")).ok());
  for (const ValidationCase& c : kValidationCases) {
    SCOPED_TRACE(c.name);
    TpmBinding b = Binding("n1");
    c.mutate(b);
    Status v = ValidateTpmBinding(b);
    EXPECT_EQ(v.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(v.message(), c.message);
    Status s = store_->PutTpmBinding(b);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), c.message);
  }
  EXPECT_EQ(Rows(), 0);
}

TEST(ValidateTpmBindingTest, ActiveBindingNeedsActivatedAt) {
  TpmBinding b = Binding("n1");
  b.state = TpmBindingState::kActive;
  b.credential_sha256.clear();
  Status s = ValidateTpmBinding(b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "activated_at is not set on an active binding.");
  b.activated_at = 1100;
  EXPECT_TRUE(ValidateTpmBinding(b).ok());
}

// An active binding no longer carries a challenge: neither the credential
// hash nor the challenge window is checked.
TEST(ValidateTpmBindingTest, ActiveBindingSkipsChallengeFields) {
  TpmBinding b = Binding("n1");
  b.state = TpmBindingState::kActive;
  b.activated_at = 1100;
  b.credential_sha256.clear();
  b.challenge_expires_at = 0;
  Status s = ValidateTpmBinding(b);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(ValidateTpmBindingTest, AkNameLengthBounds) {
  TpmBinding b = Binding("n1");
  b.ak_name_hex = "000b";
  EXPECT_TRUE(ValidateTpmBinding(b).ok());
  b.ak_name_hex = std::string(132, 'a');
  EXPECT_TRUE(ValidateTpmBinding(b).ok());
}

TEST(ValidateTpmBindingTest, EkCertificateIsOptional) {
  TpmBinding b = Binding("n1");
  b.ek_cert_pem.clear();
  b.ek_cert_issuer.clear();
  EXPECT_TRUE(ValidateTpmBinding(b).ok());
}

// --- Pending bindings an outsider made (issue 12) --------------------------------

TEST_F(TpmBindingStoreTest, TokenHolderReplacesAPendingBindingAnOutsiderMade) {
  // An outsider (no token) binds its TPM 'f' to pending node n1 first.
  auto outsider = store_->CreateNodeWithTpmBinding(
      Node("n1"), Binding("n1", 'f', 'b'), std::nullopt, EnrollAuthority::kNone);
  ASSERT_TRUE(outsider.ok()) << outsider.status().ToString();
  ASSERT_TRUE(store_->ApproveNode("n1", 950).ok());
  // The real node, without the token, cannot replace it ...
  auto refused = store_->CreateNodeWithTpmBinding(
      Node("n1"), Binding("n1"), std::nullopt, EnrollAuthority::kNone);
  EXPECT_EQ(refused.status(),
            FailedPreconditionError("node \"n1\" is bound to another TPM; "
                                    "rebinding it needs the bootstrap token."));
  EXPECT_EQ(Get("n1"), Binding("n1", 'f', 'b'));
  // ... with it, it does, and activates.
  auto token = store_->CreateNodeWithTpmBinding(
      Node("n1"), Binding("n1"), 960, EnrollAuthority::kBootstrapToken);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  EXPECT_EQ(token->state, NodeState::kApproved);
  EXPECT_EQ(token->approved_at, 950);
  EXPECT_EQ(Get("n1"), Binding("n1"));
  EXPECT_EQ(Activate("n1").state, TpmBindingState::kActive);
  // An active binding is not replaced, even with the token.
  auto active = store_->CreateNodeWithTpmBinding(
      Node("n1"), Binding("n1", 'f', 'b'), 970, EnrollAuthority::kBootstrapToken);
  EXPECT_EQ(active.status(),
            AlreadyExistsError("node \"n1\" is bound to another TPM."));
  EXPECT_EQ(Get("n1").ek_sha256, Sha('e'));
  EXPECT_EQ(Rows(), 1);
}

TEST_F(TpmBindingStoreTest, DeleteTpmBindingDeletesPendingAndActiveOnlyWhenAllowed) {
  Enroll("n1");
  Put(Binding("n1", 'f'));
  auto deleted = store_->DeleteTpmBinding("n1", false);
  ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
  EXPECT_EQ(*deleted, Binding("n1", 'f'));
  EXPECT_EQ(store_->GetTpmBinding("n1").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->DeleteTpmBinding("n1", false).status(),
            NotFoundError("node \"n1\" has no TPM binding."));
  EXPECT_EQ(store_->DeleteTpmBinding("nobody", true).status().code(),
            StatusCode::kNotFound);
  // The node itself is kept, and binds a TPM again.
  ASSERT_TRUE(store_->GetNode("n1").ok());
  Put(Binding("n1"));
  TpmBinding active = Activate("n1");
  EXPECT_EQ(store_->DeleteTpmBinding("n1", false).status(),
            FailedPreconditionError(
                "TPM binding of node \"n1\" is active (credential activation "
                "proved it is the node's TPM); deleting it needs --force."));
  EXPECT_EQ(Get("n1"), active);
  auto forced = store_->DeleteTpmBinding("n1", true);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ(*forced, active);
  EXPECT_EQ(Rows(), 0);
}

}  // namespace
}  // namespace dpuaudit::verifier
