// Adversarial tests against the real dpuaudit-verifier process over
// loopback: forged and spliced JWS, duplicate keys and unknown members,
// nonce replays (across nodes, across a restart, back in time), hostile TPM
// evidence (swtpm), hostile bodies and slow or idle clients, path traversal
// and non-UTF-8, and the resource-limit flags of `serve`.
//
// Every refusal is asserted by HTTP status, JSON error.code and a message
// substring; after each one the verifier must still answer GET /healthz and
// its SQLite file must be unchanged (read through a separate read-only
// connection). One exception, by design (README "Store": rejected reports
// of known nodes are kept with the error): a report whose signature
// verified and whose claims parsed, refused for its nonce or issued_at, is
// kept as the node's rejected attempt; then exactly one rejected report row
// naming the error appears, and nothing else. Authentic but wrong
// evidence is a 200 "deny" naming the rule; the store then gains exactly
// that node's result (and its report and spent nonce), and the node is not
// admitted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "apps/common/agent_collect.h"
#include "apps/shared/http_client.h"
#include "attest/eventlog.h"
#include "attest/quote.h"
#include "attest/tpm/simulate.h"
#include "attest/tpm/tpm.h"
#include "attest/tpm_structs.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/device_source.h"
#include "integration/adversarial_util.h"
#include "integration/harness.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "attest/tpm_claims.h"
#include "attest/tpm/swtpm_harness.h"

namespace dpuaudit {
namespace {

using itest::ParseJson;

using ::testing::AnyOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
using itest::DbSnapshot;
using itest::RawConn;
using itest::RawResponse;

constexpr char kToken[] = "adversarial-bootstrap-token-0123456789";
constexpr char kTyp[] = "dpuaudit-report+jws";
// The verifier's default nonce lifetime (serve --nonce-ttl).
constexpr int64_t kNonceTtl = 60;

std::string B64(std::string_view s) { return Base64UrlEncode(AsBytes(s)); }

std::string ErrorCode(const std::string& body) {
  auto j = ParseJson(body);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return "(no JSON error)";
  return j["error"].value("code", "(no code)");
}
std::string ErrorMessage(const std::string& body) {
  auto j = ParseJson(body);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return "";
  return j["error"].value("message", "");
}

// A DER-encoded ECDSA signature (what OpenSSL produces) from JWS r || s.
Bytes DerSignature(const Bytes& rs) {
  auto integer = [](const uint8_t* p, size_t n) {
    Bytes v(p, p + n);
    while (v.size() > 1 && v[0] == 0 && !(v[1] & 0x80)) v.erase(v.begin());
    if (v[0] & 0x80) v.insert(v.begin(), 0);
    Bytes out = {0x02, static_cast<uint8_t>(v.size())};
    out.insert(out.end(), v.begin(), v.end());
    return out;
  };
  Bytes seq = integer(rs.data(), 32);
  Bytes s = integer(rs.data() + 32, 32);
  seq.insert(seq.end(), s.begin(), s.end());
  Bytes out = {0x30, static_cast<uint8_t>(seq.size())};
  out.insert(out.end(), seq.begin(), seq.end());
  return out;
}

// A request that must be refused.
struct BadRequest {
  std::string name;
  std::string path;
  std::string content_type;
  std::string body;
  long status;
  std::string code;
  std::string message;
  // "": nothing may change in the store. A node id: an authenticated,
  // well-formed report refused later (nonce, issued_at): exactly one
  // rejected report row of that node, naming the error, is added (and
  // nothing else).
  std::string recorded_for = "";
  std::string bearer = "";
};

class AdversarialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-adv-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    token_file_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(WriteFileAtomic(token_file_, AsBytes(std::string(kToken) + "\n"), 0600).ok());
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cerr << "kept " << dir_ << " (verifier log: " << verifier_.log() << ")\n";
    }
  }

  // zero-trust policy, bootstrap token, admin API; the fixture reference
  // values imported, so an honest bf3-zero-trust report is admitted.
  void StartVerifier(std::vector<std::string> extra = {},
                     std::vector<std::string> manifests = {"bf3-releases.json"}) {
    extra_ = extra;
    manifests_ = manifests;
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, Flags(), &err)) << err;
    port_ = itest::PortOf(verifier_.url());
    ImportRefvals(manifests_);
  }
  void ImportRefvals(const std::vector<std::string>& manifests) {
    for (const std::string& m : manifests) {
      std::string text = itest::ReadAll(itest::kSrc + "/tests/fixtures/refvals/" + m);
      auto r = Client()->PostWithBearer("/v1/refvals", "application/json", text,
                                        "adversarial-admin-token-0123456789");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->status, 201) << m << ": " << r->body;
    }
  }
  std::vector<std::string> Flags() {
    std::string admin = dir_ + "/admin.token";
    (void)WriteFileAtomic(admin, AsBytes(std::string("adversarial-admin-token-0123456789\n")),
                          0600);
    // Maintenance (nonce purge, retention) runs once at start and then not
    // again, so that the store snapshots compared around each refusal do not
    // change under it (tests/integration/storage_dos_test.cc tests it).
    std::vector<std::string> args = {"--policy", itest::kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", token_file_,
                                     "--admin-token-file", admin,
                                     "--maintenance-interval", "86400"};
    args.insert(args.end(), extra_.begin(), extra_.end());
    return args;
  }
  // Stops the verifier and starts it again on the same folder and database.
  void RestartVerifier() {
    verifier_.Stop();
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, Flags(), &err)) << err;
    port_ = itest::PortOf(verifier_.url());
  }

  std::unique_ptr<apps::HttpClient> Client(int timeout_ms = 15000) {
    apps::HttpClientOptions o;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    o.max_response_bytes = 16 << 20;
    auto c = apps::HttpClient::New(verifier_.url(), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  }
  apps::HttpResponse Post(const std::string& path, const std::string& content_type,
                          const std::string& body, const std::string& bearer = "") {
    auto r = Client()->PostWithBearer(path, content_type, body, bearer);
    EXPECT_TRUE(r.ok()) << path << ": " << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }
  // Node state needs a reader (or the admin) token.
  apps::HttpResponse Get(const std::string& path) {
    auto r = Client()->GetWithBearer(path, "adversarial-admin-token-0123456789");
    EXPECT_TRUE(r.ok()) << path << ": " << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }

  // --- nodes, nonces, reports ---------------------------------------------------

  struct NodeKey {
    EcPrivateKey key;
    std::unique_ptr<Signer> signer;
  };
  const NodeKey& KeyOf(const std::string& node) {
    auto it = keys_.find(node);
    if (it == keys_.end()) {
      auto key = EcPrivateKey::Generate();
      EXPECT_TRUE(key.ok());
      auto signer = Es256Signer::New(*key);
      it = keys_.emplace(node, NodeKey{*key, std::move(*signer)}).first;
    }
    return it->second;
  }
  // A challenge request signed with the node's key, as the agent sends it.
  std::string ChallengeBody(const std::string& node) {
    auto body = report::ChallengeRequestBody(node, std::time(nullptr), *KeyOf(node).signer);
    EXPECT_TRUE(body.ok());
    return body.ok() ? *body : "";
  }
  std::string EnrollBody(const std::string& node) {
    return nlohmann::json{{"node_id", node},
                          {"public_key", report::PublicJwk(KeyOf(node).key.public_key(), "k")}}
        .dump();
  }
  void Enroll(const std::string& node) {
    auto r = Post("/v1/nodes", "application/json", EnrollBody(node), kToken);
    ASSERT_EQ(r.status, 201) << r.body;
    ASSERT_EQ(ParseJson(r.body)["state"], "approved");
  }

  struct Nonce {
    std::string nonce;
    int64_t expires_at = 0;
  };
  Nonce Challenge(const std::string& node) {
    auto r = Post("/v1/challenges", "application/json", ChallengeBody(node));
    EXPECT_EQ(r.status, 201) << r.body;
    auto j = ParseJson(r.body);
    if (!j.contains("nonce")) return {};
    return {j["nonce"].get<std::string>(), j["expires_at"].get<int64_t>()};
  }

  // Claims as the agent builds them from a recorded device.
  report::ReportClaims Claims(const std::string& node, const std::string& nonce,
                              const std::string& device = "bf3-zero-trust",
                              std::optional<int64_t> issued_at = std::nullopt) {
    static std::map<std::string, apps::Collection> cache;
    auto it = cache.find(device);
    if (it == cache.end()) {
      auto source = device::NewRecordedDeviceSource(itest::Fixture(device));
      EXPECT_TRUE(source.ok()) << source.status().ToString();
      it = cache.emplace(device, apps::CollectFromDevice(**source)).first;
    }
    return apps::BuildClaims(it->second, node, nonce,
                             issued_at.value_or(SystemClock::Get().NowUnixSeconds()));
  }
  std::string Sign(const std::string& node, const report::ReportClaims& claims) {
    auto jws = report::SignReport(claims, *KeyOf(node).signer, node);
    EXPECT_TRUE(jws.ok()) << jws.status().ToString();
    return jws.ok() ? *jws : "";
  }
  // The JWS header the agent writes, with another alg and kid.
  static std::string Header(const std::string& alg, const std::string& kid) {
    return R"({"alg":")" + alg + R"(","kid":")" + kid + R"(","typ":")" + kTyp + R"("})";
  }
  std::string SignRaw(const std::string& node, std::string_view header,
                      std::string_view payload) {
    return itest::SignRawJws(header, payload, *KeyOf(node).signer);
  }
  std::string FreshPayload(const std::string& node, const std::string& nonce) {
    return report::SerializeClaims(Claims(node, nonce));
  }

  apps::HttpResponse SubmitReport(const std::string& jws) {
    return Post("/v1/reports", "application/jose", jws);
  }
  void ExpectDecision(const std::string& jws, const std::string& decision) {
    auto r = SubmitReport(jws);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(ParseJson(r.body)["decision"], decision) << r.body;
  }
  std::string Admission(const std::string& node) {
    auto r = Get("/v1/nodes/" + node + "/admission");
    EXPECT_EQ(r.status, 200) << r.body;
    return ParseJson(r.body).value("decision", "(none)");
  }

  // --- health and the store -------------------------------------------------------

  void ExpectHealthy() {
    EXPECT_TRUE(verifier_.Alive()) << "verifier exited; log:\n" << itest::ReadAll(verifier_.log());
    auto r = Client(5000)->Get("/healthz");
    ASSERT_TRUE(r.ok()) << "GET /healthz: " << r.status().ToString() << "\nlog tail:\n"
                        << LogTail();
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(r->body, R"({"status":"ok"})");
  }
  std::string LogTail() {
    std::string log = itest::ReadAll(verifier_.log());
    return log.size() > 3000 ? log.substr(log.size() - 3000) : log;
  }
  DbSnapshot Snapshot() { return itest::SnapshotDb(dir_ + "/verifier.db"); }

  // The store is unchanged, or (recorded_for) only gained that node's
  // rejected report naming `message`.
  void ExpectStoreAfterRefusal(const DbSnapshot& before, const DbSnapshot& after,
                               const std::string& recorded_for, const std::string& message) {
    ASSERT_FALSE(before.count("!error")) << before.at("!error").rows[0][0];
    ASSERT_FALSE(after.count("!error")) << after.at("!error").rows[0][0];
    auto diff = itest::DiffDb(before, after);
    if (recorded_for.empty()) {
      EXPECT_TRUE(diff.empty()) << "store changed: " << itest::DescribeDiff(diff);
      return;
    }
    for (const auto& [table, d] : diff) {
      if (table == "sqlite_sequence") continue;  // the reports id counter
      if (table == "audit_log") {
        // Its audit log entry (issue 16), and nothing else.
        EXPECT_TRUE(d.removed.empty() && d.changed_to.empty()) << itest::DescribeDiff(diff);
        ASSERT_EQ(d.added.size(), 1u) << itest::DescribeDiff(diff);
        const auto& t = after.at("audit_log");
        EXPECT_EQ(itest::Column(t, d.added[0], "kind"), "t:report.refused");
        EXPECT_EQ(itest::Column(t, d.added[0], "node_id"), "t:" + recorded_for);
        continue;
      }
      if (table != "reports") {
        ADD_FAILURE() << "table " << table << " changed: " << itest::DescribeDiff(diff);
        continue;
      }
      EXPECT_TRUE(d.removed.empty() && d.changed_to.empty()) << itest::DescribeDiff(diff);
      ASSERT_EQ(d.added.size(), 1u) << itest::DescribeDiff(diff);
      const auto& t = after.at("reports");
      EXPECT_EQ(itest::Column(t, d.added[0], "node_id"), "t:" + recorded_for);
      EXPECT_EQ(itest::Column(t, d.added[0], "accepted"), "i:0");
      EXPECT_THAT(itest::Column(t, d.added[0], "error"), HasSubstr(message));
    }
    EXPECT_TRUE(diff.count("reports")) << "the refused attempt of " << recorded_for
                                       << " was not kept";
  }

  // After a deny: exactly one new result (deny, for `node`), its accepted
  // report, the spent nonce; nothing else. The node is not admitted.
  void ExpectOnlyDenyStored(const DbSnapshot& before, const std::string& node) {
    DbSnapshot after = Snapshot();
    ASSERT_FALSE(after.count("!error")) << after.at("!error").rows[0][0];
    auto diff = itest::DiffDb(before, after);
    ASSERT_TRUE(diff.count("results")) << itest::DescribeDiff(diff);
    for (const auto& [table, d] : diff) {
      const auto& t = after.at(table);
      if (table == "results" || table == "reports") {
        EXPECT_TRUE(d.removed.empty() && d.changed_to.empty()) << itest::DescribeDiff(diff);
        ASSERT_EQ(d.added.size(), 1u) << table << ": " << itest::DescribeDiff(diff);
        EXPECT_EQ(itest::Column(t, d.added[0], "node_id"), "t:" + node);
        if (table == "results") {
          EXPECT_EQ(itest::Column(t, d.added[0], "decision"), "t:deny");
        } else {
          EXPECT_EQ(itest::Column(t, d.added[0], "accepted"), "i:1");
        }
      } else if (table == "nonces") {
        // One nonce, issued to the node, now spent.
        EXPECT_TRUE(d.removed.empty()) << itest::DescribeDiff(diff);
        EXPECT_EQ(d.added.size() + d.changed_to.size(), 1u) << itest::DescribeDiff(diff);
        for (const auto* rows : {&d.added, &d.changed_to}) {
          for (const auto& row : *rows) {
            EXPECT_EQ(itest::Column(t, row, "node_id"), "t:" + node);
            EXPECT_NE(itest::Column(t, row, "used_at"), "NULL");
          }
        }
      } else if (table == "node_status") {
        // The node's status row (issue 15), and nothing but it.
        EXPECT_TRUE(d.removed.empty()) << itest::DescribeDiff(diff);
        for (const auto* rows : {&d.added, &d.changed_to}) {
          for (const auto& row : *rows) {
            EXPECT_EQ(itest::Column(t, row, "node_id"), "t:" + node);
            EXPECT_NE(itest::Column(t, row, "status"), "t:admitted");
          }
        }
      } else if (table == "decision_events") {
        // At most one event, for this node, and never an admit.
        EXPECT_TRUE(d.removed.empty() && d.changed_to.empty()) << itest::DescribeDiff(diff);
        EXPECT_LE(d.added.size(), 1u) << itest::DescribeDiff(diff);
        for (const auto& row : d.added) {
          EXPECT_EQ(itest::Column(t, row, "node_id"), "t:" + node);
          EXPECT_NE(itest::Column(t, row, "type"), "t:node.admitted");
        }
      } else if (table == "audit_log") {
        // The report, the result and at most a decision change (issue 16).
        EXPECT_TRUE(d.removed.empty() && d.changed_to.empty()) << itest::DescribeDiff(diff);
        EXPECT_GE(d.added.size(), 2u) << itest::DescribeDiff(diff);
        EXPECT_LE(d.added.size(), 3u) << itest::DescribeDiff(diff);
        for (const auto& row : d.added) {
          EXPECT_EQ(itest::Column(t, row, "node_id"), "t:" + node);
          EXPECT_THAT(itest::Column(t, row, "kind"),
                      AnyOf("t:report.accepted", "t:result", "t:status"));
        }
      } else if (table == "result_contexts") {
        EXPECT_EQ(d.added.size(), 1u) << itest::DescribeDiff(diff);
      } else if (table == "collateral") {
        // The reference values the first appraisal of a generation names.
        EXPECT_TRUE(d.removed.empty() && d.changed_to.empty()) << itest::DescribeDiff(diff);
        for (const auto& row : d.added) {
          EXPECT_EQ(itest::Column(t, row, "kind"), "t:refvals");
        }
      } else if (table != "sqlite_sequence") {
        ADD_FAILURE() << "table " << table << " changed: " << itest::DescribeDiff(diff);
      }
    }
    EXPECT_NE(Admission(node), "admit");
  }

  void ExpectRefused(const BadRequest& k) {
    SCOPED_TRACE(k.name);
    DbSnapshot before = Snapshot();
    auto r = Post(k.path, k.content_type, k.body, k.bearer);
    EXPECT_EQ(r.status, k.status) << r.body.substr(0, 500);
    EXPECT_EQ(ErrorCode(r.body), k.code) << r.body.substr(0, 500);
    EXPECT_THAT(ErrorMessage(r.body), HasSubstr(k.message));
    ExpectHealthy();
    ExpectStoreAfterRefusal(before, Snapshot(), k.recorded_for, k.message);
  }
  void ExpectAllRefused(const std::vector<BadRequest>& cases) {
    for (const BadRequest& k : cases) ExpectRefused(k);
  }

  std::string dir_, token_file_;
  std::vector<std::string> extra_, manifests_;
  uint16_t port_ = 0;
  itest::VerifierProcess verifier_;
  std::map<std::string, NodeKey> keys_;
};

// --- 1. Forged, re-keyed and spliced JWS ------------------------------------------

TEST_F(AdversarialTest, ForgedRekeyedAndSplicedJwsAreRefused) {
  StartVerifier();
  Enroll("node-a");
  Enroll("node-b");
  // The honest path works: forgeries below are refused for what they are.
  ExpectDecision(Sign("node-a", Claims("node-a", Challenge("node-a").nonce)), "admit");

  // One unspent nonce of node-a carries every forgery; it must survive them.
  const std::string nonce = Challenge("node-a").nonce;
  const std::string payload = FreshPayload("node-a", nonce);
  const EcPublicKey& pub = KeyOf("node-a").key.public_key();
  const std::string pem = pub.ToPem();
  Bytes xy = pub.x();
  xy.insert(xy.end(), pub.y().begin(), pub.y().end());
  const std::string jwk = report::PublicJwk(pub, "k").dump();
  auto input = [&](const std::string& alg, const std::string& kid) {
    return B64(Header(alg, kid)) + "." + B64(payload);
  };
  auto hmac = [&](const EVP_MD* md, ByteView key, const std::string& alg) {
    std::string in = input(alg, "node-a");
    return in + "." + Base64UrlEncode(itest::Hmac(md, key, in));
  };
  // Two authentic reports of node-a (other nonces) and one of node-b.
  const std::string a1 = Sign("node-a", Claims("node-a", Challenge("node-a").nonce));
  const std::string a2 = Sign("node-a", Claims("node-a", Challenge("node-a").nonce));
  const std::string b1 = Sign("node-b", Claims("node-b", Challenge("node-b").nonce));
  auto seg = [](const std::string& jws, int i) {
    size_t a = jws.find('.'), b = jws.rfind('.');
    return i == 0 ? jws.substr(0, a) : i == 1 ? jws.substr(a + 1, b - a - 1) : jws.substr(b + 1);
  };
  auto sig_of = [&](const std::string& jws) { return *Base64UrlDecode(seg(jws, 2)); };
  // An attacker's own key, offered in the header.
  auto attacker = EcPrivateKey::Generate();
  auto attacker_signer = Es256Signer::New(*attacker);
  nlohmann::json embedded = {{"alg", "ES256"}, {"kid", "node-a"}, {"typ", kTyp},
                             {"jwk", report::PublicJwk(attacker->public_key(), "")}};

  struct Forgery {
    std::string name, jws;
    long status;
    std::string code, message;
  };
  const std::string kNotPinned = " is not the pinned \"ES256\".";
  std::vector<Forgery> forgeries = {
      {"alg none, empty signature", input("none", "node-a") + ".", 400, "invalid_argument",
       "JWS signature segment is empty."},
      {"alg none, junk signature", input("none", "node-a") + "." + Base64UrlEncode(Bytes(64, 1)),
       401, "unauthenticated", "JWS alg \"none\"" + kNotPinned},
      {"alg NONE", input("NONE", "node-a") + "." + Base64UrlEncode(Bytes(64, 1)), 401,
       "unauthenticated", "JWS alg \"NONE\"" + kNotPinned},
      {"HS256 keyed with the node's PEM", hmac(EVP_sha256(), AsBytes(pem), "HS256"), 401,
       "unauthenticated", "JWS alg \"HS256\"" + kNotPinned},
      {"HS256 keyed with the node's x||y", hmac(EVP_sha256(), xy, "HS256"), 401,
       "unauthenticated", "JWS alg \"HS256\"" + kNotPinned},
      {"HS256 keyed with the node's JWK", hmac(EVP_sha256(), AsBytes(jwk), "HS256"), 401,
       "unauthenticated", "JWS alg \"HS256\"" + kNotPinned},
      {"HMAC-SHA256 under alg ES256", hmac(EVP_sha256(), AsBytes(pem), "ES256"), 401,
       "unauthenticated", "JWS ES256 signature must be 64 bytes, got 32."},
      {"HMAC-SHA512 (64 bytes) under alg ES256", hmac(EVP_sha512(), AsBytes(pem), "ES256"), 401,
       "unauthenticated", "does not verify with the pinned key."},
      {"signed by node-a, kid node-b",
       SignRaw("node-a", Header("ES256", "node-b"), payload), 401, "unauthenticated",
       "does not verify with the pinned key."},
      {"signed by node-a, kid and claims node-b",
       SignRaw("node-a", Header("ES256", "node-b"), FreshPayload("node-b", nonce)), 401,
       "unauthenticated", "does not verify with the pinned key."},
      {"attacker key in a jwk header",
       itest::SignRawJws(embedded.dump(), payload, **attacker_signer), 400, "invalid_argument",
       "JWS header \"jwk\" is not accepted"},
      {"node-a signature glued onto another node-a payload",
       seg(a1, 0) + "." + seg(a2, 1) + "." + seg(a1, 2), 401, "unauthenticated",
       "does not verify with the pinned key."},
      {"node-a signature glued onto the forged payload",
       seg(a1, 0) + "." + B64(payload) + "." + seg(a1, 2), 401, "unauthenticated",
       "does not verify with the pinned key."},
      {"node-b signature glued onto node-a header and payload",
       seg(a1, 0) + "." + seg(a1, 1) + "." + seg(b1, 2), 401, "unauthenticated",
       "does not verify with the pinned key."},
      {"node-a signature in DER", seg(a1, 0) + "." + seg(a1, 1) + "." +
                                      Base64UrlEncode(DerSignature(sig_of(a1))),
       401, "unauthenticated", "JWS ES256 signature must be 64 bytes"},
  };
  std::vector<BadRequest> cases;
  for (const Forgery& f : forgeries) {
    cases.push_back({f.name + " (compact)", "/v1/reports", "application/jose", f.jws, f.status,
                     f.code, f.message});
    cases.push_back({f.name + " (flattened JSON)", "/v1/reports", "application/jose+json",
                     itest::Flatten(f.jws), f.status, f.code, f.message});
  }
  // Flattened-only shapes.
  std::string valid_flat = itest::Flatten(Sign("node-a", Claims("node-a", nonce)));
  std::string with_header = valid_flat;
  with_header.insert(with_header.size() - 1, R"(,"header":{"kid":"node-b"})");
  cases.push_back({"flattened with an unprotected header", "/v1/reports",
                   "application/jose+json", with_header, 400, "invalid_argument",
                   "JWS unprotected \"header\" is not accepted"});
  cases.push_back({"general JSON serialization", "/v1/reports", "application/jose+json",
                   R"({"payload":")" + B64(payload) + R"(","signatures":[{"protected":")" +
                       seg(a1, 0) + R"(","signature":")" + seg(a1, 2) + R"("}]})",
                   400, "invalid_argument", "general JSON serialization"});
  ExpectAllRefused(cases);

  // None of it spent the nonce or changed node-a's admission.
  EXPECT_EQ(Admission("node-a"), "admit");
  ExpectDecision(Sign("node-a", Claims("node-a", nonce)), "admit");
}

// --- 2. Duplicate keys and unknown members --------------------------------------------

TEST_F(AdversarialTest, DuplicateKeysAndUnknownMembersAre400) {
  StartVerifier();
  Enroll("node-a");
  Enroll("node-b");
  const std::string nonce = Challenge("node-a").nonce;
  const std::string payload = FreshPayload("node-a", nonce);
  // `payload` with `from` (first occurrence) replaced by `to`.
  auto edit = [&payload](const std::string& from, const std::string& to) {
    std::string p = payload;
    size_t at = p.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) p.replace(at, from.size(), to);
    return p;
  };
  auto signed_a = [&](const std::string& p) {
    return SignRaw("node-a", Header("ES256", "node-a"), p);
  };
  const std::string jwk = report::PublicJwk(KeyOf("node-c").key.public_key(), "k").dump();
  const std::string jwk_inner = jwk.substr(1, jwk.size() - 2);
  const std::string flat = itest::Flatten(signed_a(payload));
  auto flat_edit = [&flat](const std::string& from, const std::string& to) {
    std::string f = flat;
    f.replace(f.find(from), from.size(), to);
    return f;
  };
  const std::string jose = "application/jose";
  const std::string json = "application/json";
  std::vector<BadRequest> cases = {
      // The JWS protected header (signed validly by node-a).
      {"header: kid twice", "/v1/reports", jose,
       SignRaw("node-a", R"({"alg":"ES256","kid":"node-a","kid":"node-b","typ":")" +
                             std::string(kTyp) + R"("})", payload),
       400, "invalid_argument", "JWS protected header has duplicate key \"kid\"."},
      {"header: alg twice", "/v1/reports", jose,
       SignRaw("node-a", R"({"alg":"none","alg":"ES256","kid":"node-a"})", payload), 400,
       "invalid_argument", "JWS protected header has duplicate key \"alg\"."},
      {"header: crit extension", "/v1/reports", jose,
       SignRaw("node-a", R"({"alg":"ES256","kid":"node-a","crit":["exp"],"typ":")" +
                             std::string(kTyp) + R"("})", payload),
       400, "invalid_argument", "JWS header \"crit\" is not supported"},
      // The flattened JSON envelope.
      {"flattened: payload twice", "/v1/reports", "application/jose+json",
       flat_edit("\"payload\":", "\"payload\":\"e30\",\"payload\":"), 400, "invalid_argument",
       "JWS JSON serialization has duplicate key \"payload\"."},
      {"flattened: unknown member", "/v1/reports", "application/jose+json",
       flat_edit("{\"protected\"", "{\"x5c\":[],\"protected\""), 400, "invalid_argument",
       "JWS has unknown member \"x5c\"."},
      // The report payload, signed validly by node-a. Claims that do not
      // parse are refused before the report counts as the node's, so not
      // even the attempt is stored.
      {"payload: node_id twice", "/v1/reports", jose,
       signed_a(edit("\"node_id\":\"node-a\"", "\"node_id\":\"node-b\",\"node_id\":\"node-a\"")),
       400, "invalid_argument", "report payload has duplicate key \"node_id\"."},
      {"payload: device.serial twice", "/v1/reports", jose,
       signed_a(edit("\"device\":{", "\"device\":{\"serial\":\"MT0000X00000\",")), 400,
       "invalid_argument", "report payload has duplicate key \"serial\"."},
      {"payload: evidence[0].sha256 twice", "/v1/reports", jose,
       signed_a(edit("\"evidence\":[{", "\"evidence\":[{\"sha256\":\"00\",")), 400,
       "invalid_argument", "report payload has duplicate key \"sha256\"."},
      {"payload: unknown top-level member", "/v1/reports", jose,
       signed_a("{\"colour\":\"red\"," + payload.substr(1)), 400, "invalid_argument",
       "the document has unknown member \"colour\"."},
      {"payload: unknown member in device", "/v1/reports", jose,
       signed_a(edit("\"device\":{", "\"device\":{\"colour\":\"red\",")), 400,
       "invalid_argument", "device has unknown member \"colour\"."},
      {"payload: unknown member in evidence[0]", "/v1/reports", jose,
       signed_a(edit("\"evidence\":[{", "\"evidence\":[{\"colour\":\"red\",")), 400,
       "invalid_argument", "evidence[0] has unknown member \"colour\"."},
      {"payload: unknown member in findings[0]", "/v1/reports", jose,
       signed_a(edit("\"findings\":[{", "\"findings\":[{\"colour\":\"red\",")), 400,
       "invalid_argument", "findings[0] has unknown member \"colour\"."},
      // Enrollment bodies (with a valid bootstrap token).
      {"enroll: node_id twice", "/v1/nodes", json,
       R"({"node_id":"node-c","node_id":"node-a","public_key":)" + jwk + "}", 400,
       "invalid_argument", "request body has duplicate key \"node_id\".", "", kToken},
      {"enroll: public_key.kty twice", "/v1/nodes", json,
       R"({"node_id":"node-c","public_key":{"kty":"RSA",)" + jwk_inner + "}}", 400,
       "invalid_argument", "request body has duplicate key \"kty\".", "", kToken},
      {"enroll: unknown top-level member", "/v1/nodes", json,
       R"({"node_id":"node-c","role":"admin","public_key":)" + jwk + "}", 400,
       "invalid_argument", "request member \"role\" is not allowed.", "", kToken},
      {"enroll: unknown member in public_key", "/v1/nodes", json,
       R"({"node_id":"node-c","public_key":{"ext":true,)" + jwk_inner + "}}", 400,
       "invalid_argument", "JWK has unknown member \"ext\".", "", kToken},
      {"enroll: unknown member in tpm", "/v1/nodes", json,
       R"({"node_id":"node-c","public_key":)" + jwk +
           R"(,"tpm":{"ek_public_b64":"AA==","ak_public_b64":"AA==","colour":"red"}})",
       400, "invalid_argument", "tpm member \"colour\" is not allowed.", "", kToken},
      // Challenge and activation bodies.
      {"challenge: node_id twice", "/v1/challenges", json,
       R"({"node_id":"node-b","node_id":"node-a"})", 400, "invalid_argument",
       "request body has duplicate key \"node_id\"."},
      {"challenge: unknown member", "/v1/challenges", json,
       R"({"node_id":"node-a","pcr_selection":"sha1:0"})", 400, "invalid_argument",
       "request member \"pcr_selection\" is not allowed."},
      {"activate: credential_b64 twice", "/v1/nodes/node-a/tpm/activate", json,
       R"({"credential_b64":"AA==","credential_b64":"AQ=="})", 400, "invalid_argument",
       "request body has duplicate key \"credential_b64\"."},
  };
  ExpectAllRefused(cases);
  EXPECT_EQ(Get("/v1/nodes/node-c").status, 404);
  // Every refusal came before the nonce was spent.
  ExpectDecision(Sign("node-a", Claims("node-a", nonce)), "admit");
}

// --- 3. Nonce replay across nodes, across a restart, and back in time -----------------

TEST_F(AdversarialTest, NonceReplayAcrossNodesRestartAndTimeIsRefused) {
  StartVerifier();
  Enroll("node-a");
  Enroll("node-b");
  const Nonce na = Challenge("node-a");
  const Nonce early = Challenge("node-a");
  const Nonce kept = Challenge("node-a");  // spent only after the restart
  const int64_t early_issued = early.expires_at - kNonceTtl;
  ExpectAllRefused({
      {"node-b submits node-a's nonce", "/v1/reports", "application/jose",
       Sign("node-b", Claims("node-b", na.nonce)), 403, "permission_denied",
       "nonce was issued to another node.", "node-b"},
      {"issued_at an hour before the nonce", "/v1/reports", "application/jose",
       Sign("node-a", Claims("node-a", early.nonce, "bf3-zero-trust", early_issued - 3600)), 400,
       "invalid_argument",
       "issued_at " + std::to_string(early_issued - 3600) + " is more than 300 s before its "
       "nonce was issued", "node-a"},
  });
  // Both nonces are still good for node-a.
  const std::string first = Sign("node-a", Claims("node-a", na.nonce));
  ExpectDecision(first, "admit");
  ExpectDecision(Sign("node-a", Claims("node-a", early.nonce)), "admit");

  // The same bytes after a restart on the same database.
  RestartVerifier();
  ExpectHealthy();
  ExpectAllRefused({{"report replayed after a restart", "/v1/reports", "application/jose", first,
                     409, "failed_precondition", "nonce already used.", "node-a"}});
  EXPECT_EQ(Admission("node-a"), "admit");
  // A nonce issued before the restart and never used still works once.
  const std::string late = Sign("node-a", Claims("node-a", kept.nonce));
  ExpectDecision(late, "admit");
  ExpectRefused({"the nonce issued before the restart, replayed", "/v1/reports",
                 "application/jose", late, 409, "failed_precondition", "nonce already used.",
                 "node-a"});
}

// --- 4. TPM evidence that is authentic but wrong (swtpm) ----------------------------------

class AdversarialTpmTest : public AdversarialTest {
 protected:
  static void SetUpTestSuite() {
    if (!testing::SwtpmMissingTools().empty()) return;
    testing::SwtpmOptions o;
    o.shared_identity = true;  // one TPM in this suite: its identity does not matter
    auto inst = testing::SwtpmInstance::Start(o);
    ASSERT_TRUE(inst.ok()) << inst.status().ToString();
    // The simulated BlueField-3 boot, measured into its PCRs.
    auto raw = ReadFileLimited(EventLogFixture(), 4 << 20);
    ASSERT_TRUE(raw.ok());
    auto log = attest::ParseEventLog(*raw);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    auto tpm = attest::tpm::Tpm::Open((*inst)->tcti());
    ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
    ASSERT_TRUE(attest::tpm::ExtendEventLog(**tpm, *log).ok());
    tpm_ = inst->release();
  }
  static void TearDownTestSuite() {
    delete tpm_;
    tpm_ = nullptr;
  }
  static std::string EventLogFixture() {
    return itest::kSrc + "/tests/fixtures/eventlogs/bf3-ftpm-boot.bin";
  }
  void SetUp() override {
    DPUAUDIT_SKIP_WITHOUT_SWTPM();
    ASSERT_NE(tpm_, nullptr);
    AdversarialTest::SetUp();
    // The agent reads the event log through --device-root: a copy of the
    // bf3-ftpm recording, where the crafted logs are placed.
    device_ = dir_ + "/device";
    fs::copy(itest::Fixture("bf3-ftpm"), device_, fs::copy_options::recursive);
    fs::create_directories(device_ + "/fs/tmp");
  }

  std::vector<std::string> AgentNet() {
    return {"--verifier", verifier_.url(), "--node-id", kNode,
            "--key", dir_ + "/agent.key", "--tpm", tpm_->tcti()};
  }
  itest::Proc Agent(std::vector<std::string> argv) {
    argv.insert(argv.begin(), itest::kBin + "/dpuaudit-agent");
    for (auto& a : AgentNet()) argv.push_back(a);
    return itest::Exec(argv);
  }

  // The latest reason the verifier stored for `rule` of kNode.
  nlohmann::json LatestReason(const std::string& rule) {
    auto view = ParseJson(Get(std::string("/v1/nodes/") + kNode).body);
    if (!view.contains("latest") || !view["latest"].is_object()) return {};
    for (const auto& r : view["latest"]["reasons"]) {
      if (r.value("rule_id", "") == rule) return r;
    }
    return {};
  }

  static constexpr char kNode[] = "bf3-ftpm";
  static testing::SwtpmInstance* tpm_;
  std::string device_;
};
testing::SwtpmInstance* AdversarialTpmTest::tpm_ = nullptr;

TEST_F(AdversarialTpmTest, WrongPcrSelectionAndHostileEventLogsAreDeniedAtTheirStep) {
  StartVerifier({"--ek-ca-dir", tpm_->ek_ca_dir()}, {"bf3-releases.json", "bf3-ftpm.json"});
  itest::Proc e = Agent({"enroll", "--bootstrap-token-file", token_file_});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  ASSERT_THAT(e.out, HasSubstr("TPM bound: AK"));
  // The honest quote is admitted, so every deny below is the attack's.
  itest::Proc honest = Agent({"attest", "--device-root", device_});
  ASSERT_EQ(honest.exit_code, 0) << honest.out << honest.err;
  ASSERT_THAT(honest.out, HasSubstr("bf3-ftpm: admit"));

  // (a) A real quote of this TPM over a selection other than the policy's.
  auto key = EcPrivateKey::LoadFile(dir_ + "/agent.key");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  auto signer = Es256Signer::New(*key);
  // Challenge requests are signed with the node's (the agent's) key.
  keys_.erase(kNode);
  keys_.emplace(kNode, NodeKey{*key, std::move(*Es256Signer::New(*key))});
  for (const char* selection : {"sha256:0-7", "sha1:0-15", "sha256:0-6,8-15"}) {
    SCOPED_TRACE(selection);
    std::string jws;
    {
      report::ReportClaims claims = Claims(kNode, Challenge(kNode).nonce, "bf3-ftpm");
      auto tpm = attest::tpm::Tpm::Open(tpm_->tcti());  // closed before the next agent run
      ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
      auto nonce = Base64UrlDecode(claims.nonce);
      Bytes qualifying = attest::QualifyingData(
          *nonce, AsBytes(report::SerializeClaimsWithoutTpm(claims)));
      auto sel = attest::PcrSelection::Parse(selection);
      ASSERT_TRUE(sel.ok()) << sel.status().ToString();
      auto q = (*tpm)->Quote(qualifying, *sel);
      ASSERT_TRUE(q.ok()) << q.status().ToString();
      attest::TpmClaims t;
      t.quote_attest = q->attest;
      t.quote_sig = q->signature;
      t.ak_name = attest::TpmPublic::Decode(*(*tpm)->AkPublic())->name();
      t.pcrs = q->pcrs;
      t.eventlog = *ReadFileLimited(EventLogFixture(), 4 << 20);
      claims.tpm = attest::TpmClaimsJson(t);
      auto signed_jws = report::SignReport(claims, **signer, kNode);
      ASSERT_TRUE(signed_jws.ok()) << signed_jws.status().ToString();
      jws = *signed_jws;
    }
    DbSnapshot before = Snapshot();
    auto r = SubmitReport(jws);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(ParseJson(r.body)["decision"], "deny");
    nlohmann::json reason = LatestReason("tpm.pcr_selection");
    EXPECT_EQ(reason.value("verdict", ""), "fail") << reason.dump();
    EXPECT_EQ(reason.value("observed", ""), "failed") << reason.dump();
    EXPECT_THAT(reason.value("reason", ""), HasSubstr("but policy requires")) << reason.dump();
    EXPECT_THAT(reason.value("reason", ""), HasSubstr("(missing ")) << reason.dump();
    EXPECT_EQ(LatestReason("tpm.pcr_digest").value("verdict", ""), "unknown");
    ExpectHealthy();
    ExpectOnlyDenyStored(before, kNode);
  }

  // (b) Event logs whose counts and sizes are 0xFFFFFFFF or wrap 32-bit
  // arithmetic, quoted honestly. Layout of the fixture (crypto-agile):
  //   0x00 event 0, TCG_PCR_EVENT: pcrIndex u32 | eventType u32 (3) |
  //        SHA-1 digest [20] (zero) | eventSize u32 (37) at 0x1c |
  //        "Spec ID Event03\0" [16] | platformClass u32 | minor, major,
  //        errata, uintnSize u8 | numberOfAlgorithms u32 (2) at 0x38 |
  //        {algId u16, digestSize u16}[2]: sha256/32 at 0x3c, sha1/20 |
  //        vendorInfoSize u8 (0)
  //   0x45 event 1, TCG_PCR_EVENT2: pcrIndex u32 | eventType u32 |
  //        digest count u32 at 0x4d | {alg u16, digest}: sha256 [32],
  //        sha1 [20] | eventSize u32 at 0x89 | event
  const Bytes fixture = *ReadFileLimited(EventLogFixture(), 4 << 20);
  auto log = attest::ParseEventLog(fixture);
  ASSERT_TRUE(log.ok());
  ASSERT_EQ(log->events[1].offset, 0x45u);
  ASSERT_EQ(log->events[2].offset, 0x9eu);
  ASSERT_EQ(log->events[2].type, attest::kEvSCrtmVersion);
  ASSERT_EQ(log->algorithms.size(), 2u);
  auto put32 = [](Bytes b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
    return b;
  };
  auto put16 = [](Bytes b, size_t at, uint16_t v) {
    b[at] = static_cast<uint8_t>(v);
    b[at + 1] = static_cast<uint8_t>(v >> 8);
    return b;
  };
  const size_t ev1 = 0x45, ev1_size = ev1 + 12 + (2 + 32) + (2 + 20);
  // 65537 minimal crypto-agile events (pcr 0, EV_NO_ACTION, no digests,
  // eventSize 0) after the Spec ID event: one more than the parser allows.
  Bytes many(fixture.begin(), fixture.begin() + ev1);
  for (int i = 0; i < 65537; ++i) {
    Bytes ev = {0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    many.insert(many.end(), ev.begin(), ev.end());
  }
  // A SHA-1 format log: one TCG_PCR_EVENT whose eventSize is 0xFFFFFFFF.
  Bytes sha1_log(32, 0);
  sha1_log[4] = 8;  // EV_S_CRTM_VERSION
  sha1_log = put32(sha1_log, 28, 0xFFFFFFFFu);
  struct Crafted {
    std::string name;
    Bytes log;
    std::string reason;
  };
  std::vector<Crafted> crafted = {
      {"Spec ID eventSize 0xFFFFFFFF", put32(fixture, 0x1c, 0xFFFFFFFFu),
       "event log: event 0 at offset 0x0: eventSize 4294967295 exceeds the"},
      {"numberOfAlgorithms 0xFFFFFFFF", put32(fixture, 0x38, 0xFFFFFFFFu),
       "event log: event 0 at offset 0x0: Spec ID numberOfAlgorithms 4294967295 needs "
       "17179869180 bytes"},
      {"numberOfAlgorithms * 4 wraps to 4", put32(fixture, 0x38, 0x40000001u),
       "Spec ID numberOfAlgorithms 1073741825 needs 4294967300 bytes"},
      {"sha256 digestSize 0xFFFF", put16(fixture, 0x3e, 0xFFFF),
       "the Spec ID event gives sha256 a digest size of 65535, expected 32."},
      {"digest count 0xFFFFFFFF", put32(fixture, ev1 + 8, 0xFFFFFFFFu),
       "event log: event 1 at offset 0x45: digest count 4294967295 exceeds the 2 algorithms"},
      {"eventSize 0xFFFFFFFF", put32(fixture, ev1_size, 0xFFFFFFFFu),
       "event log: event 1 at offset 0x45: eventSize 4294967295 exceeds the"},
      {"offset + eventSize wraps 32 bits",
       put32(fixture, ev1_size, static_cast<uint32_t>(0x100000000ull - (ev1_size + 4) + 16)),
       "event 1 at offset 0x45: eventSize " +
           std::to_string(0x100000000ull - (ev1_size + 4) + 16) + " exceeds the"},
      // Event 2 (EV_S_CRTM_VERSION, at 0x9e): an extending event. (Event 1
      // is EV_NO_ACTION, which may name any PCR: docs/eventlog.md.)
      {"pcrIndex 0xFFFFFFFF", put32(fixture, log->events[2].offset, 0xFFFFFFFFu),
       "event 2 at offset 0x9e: PCR index 4294967295 out of range [0, 23]."},
      // events[i] starts at 0x45 + (i - 1) * 16.
      {"65537 events", many, "event 65536 at offset 0x100035: the log has more than the 65536 "
                             "events allowed."},
      {"SHA-1 format, eventSize 0xFFFFFFFF", sha1_log,
       "event log: event 0 at offset 0x0: eventSize 4294967295 exceeds the 0 bytes left"},
  };
  for (size_t i = 0; i < crafted.size(); ++i) {
    const Crafted& c = crafted[i];
    SCOPED_TRACE(c.name);
    std::string rel = "/tmp/crafted-" + std::to_string(i) + ".bin";
    ASSERT_TRUE(WriteFileAtomic(device_ + "/fs" + rel, c.log, 0644).ok());
    DbSnapshot before = Snapshot();
    itest::Proc a = Agent({"attest", "--device-root", device_, "--eventlog", rel});
    ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
    EXPECT_THAT(a.out, HasSubstr("bf3-ftpm: deny"));
    nlohmann::json reason = LatestReason("tpm.replay");
    EXPECT_EQ(reason.value("verdict", ""), "fail") << reason.dump();
    EXPECT_EQ(reason.value("observed", ""), "failed") << reason.dump();
    EXPECT_THAT(reason.value("reason", ""), HasSubstr(c.reason));
    // Every step before the replay verified.
    EXPECT_EQ(LatestReason("tpm.pcr_digest").value("verdict", ""), "pass");
    ExpectHealthy();
    ExpectOnlyDenyStored(before, kNode);
  }
  // And the honest log is admitted again.
  itest::Proc again = Agent({"attest", "--device-root", device_});
  EXPECT_THAT(again.out, HasSubstr("bf3-ftpm: admit")) << again.err;
}

// --- 5. Hostile bodies, slow and idle clients ------------------------------------------------

TEST_F(AdversarialTest, DeepNestingHugeBodiesAndSlowClientsDoNotStopTheVerifier) {
  StartVerifier();  // --max-body defaults to 4 MiB
  Enroll("node-a");
  const std::string nonce = Challenge("node-a").nonce;
  const std::string open100k(100000, '[');
  const std::string balanced60k = std::string(30000, '[') + std::string(30000, ']');
  std::string deep_object;
  for (int i = 0; i < 8000; ++i) deep_object += "{\"a\":";  // 56 KB: under 64 KiB
  deep_object += "1" + std::string(8000, '}');
  nlohmann::json base = ParseJson(FreshPayload("node-a", nonce));
  base["firmware"] = nlohmann::json::object();
  std::string base_text = base.dump();
  auto with_firmware = [&](const std::string& value) {
    std::string p = base_text;
    p.replace(p.find("\"firmware\":{}"), 13, "\"firmware\":" + value);
    return SignRaw("node-a", Header("ES256", "node-a"), p);
  };
  const std::string json = "application/json";
  std::vector<BadRequest> cases;
  for (const char* path : {"/v1/nodes", "/v1/challenges"}) {
    std::string p = path;
    std::string bearer = p == "/v1/nodes" ? kToken : "";
    cases.push_back({p + ": 100000 x [", p, json, open100k, 413, "resource_exhausted",
                     "request body exceeds 65536 bytes.", "", bearer});
    cases.push_back({p + ": 60000 x [", p, json, std::string(60000, '['), 400,
                     "invalid_argument", "request body is not valid JSON", "", bearer});
    cases.push_back({p + ": 30000 balanced levels", p, json, balanced60k, 400,
                     "invalid_argument", "request body nests deeper than 64 levels.", "",
                     bearer});
    cases.push_back({p + ": node_id nested 8000 objects deep", p, json,
                     R"({"node_id":)" + deep_object + "}", 400, "invalid_argument",
                     "request body nests deeper than 64 levels.", "", bearer});
  }
  cases.push_back({"report: firmware 100000 levels deep", "/v1/reports", "application/jose",
                   with_firmware(std::string(100000, '[') + std::string(100000, ']')), 400,
                   "invalid_argument", "report payload nests deeper than 64 levels."});
  cases.push_back({"report: firmware 100000 x [", "/v1/reports", "application/jose",
                   with_firmware(open100k), 400, "invalid_argument",
                   "report payload is not valid JSON"});
  cases.push_back({"report: flattened JWS nested 100000 levels", "/v1/reports",
                   "application/jose+json",
                   R"({"protected":"e30","payload":)" + std::string(100000, '[') +
                       std::string(100000, ']') + R"(,"signature":"AA"})",
                   400, "invalid_argument", "JWS JSON serialization nests deeper than 64"});
  ExpectAllRefused(cases);
  ExpectDecision(Sign("node-a", Claims("node-a", nonce)), "admit");

  // 100 MB bodies, streamed: the verifier answers long before it could
  // have read them, and keeps serving.
  const size_t kHuge = 100u << 20;
  for (bool chunked : {false, true}) {
    SCOPED_TRACE(chunked ? "chunked" : "content-length");
    DbSnapshot before = Snapshot();
    auto c = RawConn::Open(port_);
    ASSERT_TRUE(c);
    std::string head = "POST /v1/reports HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "Content-Type: application/jose\r\n";
    head += chunked ? "Transfer-Encoding: chunked\r\n\r\n"
                    : "Content-Length: " + std::to_string(kHuge) + "\r\n\r\n";
    ASSERT_TRUE(c->Send(head));
    std::string chunk(64 << 10, 'A');
    std::string framed = chunked ? "10000\r\n" + chunk + "\r\n" : chunk;
    size_t sent = 0;
    bool peer_closed = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (sent < kHuge && !c->Readable(0) && std::chrono::steady_clock::now() < deadline) {
      ssize_t n = c->SendSome(std::string_view(framed).substr(sent % framed.size()));
      if (n < 0) {
        peer_closed = true;
        break;
      }
      sent += static_cast<size_t>(n);
      if (n == 0) c->Readable(20);
    }
    std::string got;
    auto r = c->ReadResponse(5000, &got);
    ASSERT_TRUE(r.has_value()) << "no response after " << sent << " bytes (peer closed: "
                               << peer_closed << "): " << got.substr(0, 200);
    // A Content-Length over --max-body is 413; a body without one (chunked)
    // cannot be bounded up front and is refused with 411.
    EXPECT_EQ(r->status, chunked ? 411 : 413) << r->body;
    EXPECT_EQ(ErrorCode(r->body), chunked ? "length_required" : "payload_too_large") << r->body;
    EXPECT_LT(sent, kHuge / 2) << "the verifier read most of the body before answering";
    c.reset();
    ExpectHealthy();
    ExpectStoreAfterRefusal(before, Snapshot(), "", "");
  }

  // 1000 half-open connections and 16 slowloris clients from 127.0.0.2;
  // a client on 127.0.0.1 is still served within a few seconds.
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < 1200 && lim.rlim_max >= 1200) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 4096);
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  ASSERT_GE(lim.rlim_cur, 1100u) << "RLIMIT_NOFILE too low for 1000 connections";
  std::vector<std::unique_ptr<RawConn>> idle;
  for (int i = 0; i < 1000; ++i) {
    int fd = RawConn::StartConnect(port_, "127.0.0.2");
    if (fd >= 0) idle.push_back(std::make_unique<RawConn>(fd));
  }
  size_t connected = 0;
  for (size_t i = 0; i < idle.size(); ++i) {
    if (!idle[i]->WaitConnected(i == 0 ? 2000 : 5)) continue;
    ++connected;
    // Every other one sends half a request head, then nothing.
    if (i % 2 == 1) idle[i]->SendSome("POST /v1/reports HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le");
  }
  const std::string slow_head = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  std::vector<std::unique_ptr<RawConn>> slow;
  for (int i = 0; i < 16; ++i) {
    auto s = RawConn::Open(port_, "127.0.0.2", 1000);
    if (s) slow.push_back(std::move(s));
  }
  std::cout << "[ adversary ] " << connected << " of 1000 half-open and " << slow.size()
            << " of 16 slowloris connections open\n";
  for (int second = 0; second < 4; ++second) {
    for (auto& s : slow) s->SendSome(std::string_view(slow_head).substr(second % slow_head.size(), 1));
    auto probe = Client(3000)->Get("/healthz");
    ASSERT_TRUE(probe.ok()) << "probe " << second << " from 127.0.0.1 while under attack: "
                            << probe.status().ToString();
    EXPECT_EQ(probe->status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
  }
  idle.clear();
  slow.clear();
  ExpectHealthy();
  ExpectDecision(Sign("node-a", Claims("node-a", Challenge("node-a").nonce)), "admit");
}

// --- 6. Path traversal and non-UTF-8 ------------------------------------------------------------

std::set<std::string> Tree(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    out.insert(fs::relative(e.path(), dir).string());
  }
  return out;
}

TEST_F(AdversarialTest, PathTraversalAndNonUtf8AreRefused) {
  StartVerifier();
  Enroll("node-a");
  const std::string nonce = Challenge("node-a").nonce;
  // A name that would appear somewhere if any id reached the file system.
  const std::string canary = "dpuaudit-adv-canary-" + std::to_string(::getpid());
  const std::set<std::string> tree_before = Tree(dir_);
  DbSnapshot before = Snapshot();

  // In URL paths: 400 or 404, with our JSON error where the request parses.
  const std::string long_id(200, 'a');
  struct PathCase {
    std::string method, target, body;
    bool json_error;  // false: the request line itself is malformed
  };
  std::vector<PathCase> paths = {
      {"GET", "/v1/nodes/../../etc/passwd", "", true},
      {"GET", "/v1/nodes/../../../../tmp/" + canary, "", true},
      {"GET", "/v1/nodes/..%2f..%2fetc%2fpasswd", "", true},
      {"GET", "/v1/nodes/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "", true},
      {"GET", "/v1/nodes/%2e%2e", "", true},
      {"GET", "/v1/nodes/..", "", true},
      {"GET", "/v1/nodes/a/b", "", true},
      {"GET", "/v1/nodes/a%2fb", "", true},
      {"GET", "/v1/nodes/a%00b", "", true},
      {"GET", "/v1/nodes/" + long_id, "", true},
      {"GET", "/v1/nodes/%ff%fe", "", true},
      {"GET", "/v1/nodes/%c0%af/admission", "", true},
      {"GET", "/v1/nodes/..%2f..%2f" + canary + "/admission", "", true},
      {"GET", "/v1/nodes/node-a%00/admission", "", true},
      {"POST", "/v1/nodes/..%2f..%2f" + canary + "/tpm/activate", R"({"credential_b64":"AA=="})",
       true},
      {"POST", "/v1/nodes/%ff/tpm/activate", R"({"credential_b64":"AA=="})", true},
      {"POST", "/v1/refvals/%ff%fe/promote", R"({"by":"x","reason":"y"})", true},
      {"GET", std::string("/v1/nodes/a\0b", 13), "", false},
      {"GET", "/v1/nodes/\xff\xfe", "", false},
  };
  for (const PathCase& p : paths) {
    SCOPED_TRACE(p.method + " " + p.target);
    std::string req = p.method + " " + p.target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Authorization: Bearer adversarial-admin-token-0123456789\r\n"
                      "Connection: close\r\n";
    if (!p.body.empty()) {
      req += "Content-Type: application/json\r\nContent-Length: " +
             std::to_string(p.body.size()) + "\r\n";
    }
    req += "\r\n" + p.body;
    auto r = itest::RawRequest(port_, req);
    ASSERT_TRUE(r.has_value()) << "no response";
    EXPECT_THAT(r->status, AnyOf(400, 404)) << r->body;
    if (p.json_error) {
      std::string code = ErrorCode(r->body);
      if (r->status == 404) {
        EXPECT_EQ(code, "not_found") << r->body;
      } else {
        EXPECT_THAT(code, AnyOf("invalid_argument", "bad_request")) << r->body;
      }
    }
    ExpectHealthy();
  }

  // In bodies: 400 naming the rule; non-UTF-8 strings: 400 naming UTF-8.
  const std::string jwk = report::PublicJwk(KeyOf("node-x").key.public_key(), "k").dump();
  auto enroll = [&](const std::string& node_id_json) {
    return R"({"node_id":)" + node_id_json + R"(,"public_key":)" + jwk + "}";
  };
  const std::string kOnly = "may only use [A-Za-z0-9._-].";
  std::vector<BadRequest> cases;
  std::vector<std::pair<std::string, std::string>> ids = {
      {"\"../../etc/passwd\"", kOnly},
      {"\"../../../../tmp/" + canary + "\"", kOnly},
      {"\"%2e%2e%2f\"", kOnly},
      {"\"a/b\"", kOnly},
      {"\"a\\u0000b\"", kOnly},
      {"\"a\\\\b\"", kOnly},
      {"\"..\"", "is a URL dot-segment"},
      {"\".\"", "is a URL dot-segment"},
      {"\"" + long_id + "\"", "node_id must be 1-128 characters."},
      {"\"\"", "node_id must be 1-128 characters."},
  };
  for (const auto& [id, message] : ids) {
    cases.push_back({"enroll " + id, "/v1/nodes", "application/json", enroll(id), 400,
                     "invalid_argument", message, "", kToken});
    cases.push_back({"challenge " + id, "/v1/challenges", "application/json",
                     R"({"node_id":)" + id + "}", 400, "invalid_argument", message});
  }
  const std::string kUtf8 = "is not valid UTF-8";
  std::string payload = FreshPayload("node-a", nonce);
  auto edit = [](std::string s, const std::string& from, const std::string& to) {
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  std::vector<BadRequest> more = {
      {"enroll: node_id \\xff\\xfe", "/v1/nodes", "application/json", enroll("\"\xff\xfe\""), 400,
       "invalid_argument", kUtf8, "", kToken},
      {"enroll: node_id overlong '/'", "/v1/nodes", "application/json",
       enroll("\"..\xc0\xaf..\""), 400, "invalid_argument", kUtf8, "", kToken},
      {"enroll: node_id lone surrogate", "/v1/nodes", "application/json", enroll("\"\\ud800\""),
       400, "invalid_argument", "UTF-8", "", kToken},
      {"enroll: JWK kid \\xc3\\x28", "/v1/nodes", "application/json",
       edit(enroll("\"node-x\""), "\"kid\":\"k\"", "\"kid\":\"\xc3\x28\""), 400,
       "invalid_argument", kUtf8, "", kToken},
      {"enroll: member name \\xff", "/v1/nodes", "application/json",
       edit(enroll("\"node-x\""), "{\"node_id\"", "{\"\xff\":1,\"node_id\""), 400,
       "invalid_argument", kUtf8, "", kToken},
      {"challenge: node_id a\\xffb", "/v1/challenges", "application/json",
       "{\"node_id\":\"a\xff" "b\"}", 400, "invalid_argument", kUtf8},
      {"report: device.serial \\xff", "/v1/reports", "application/jose",
       SignRaw("node-a", Header("ES256", "node-a"),
               edit(payload, "\"device\":{", "\"device\":{\"serial\":\"MT\xff\",")),
       400, "invalid_argument", "report payload is not valid JSON"},
      {"report: node_id ../../etc/passwd", "/v1/reports", "application/jose",
       SignRaw("node-a", Header("ES256", "node-a"),
               edit(payload, "\"node_id\":\"node-a\"", "\"node_id\":\"../../etc/passwd\"")),
       400, "invalid_argument",
       "node_id \"../../etc/passwd\" must be 1-128 characters of [A-Za-z0-9._-]."},
      {"report: kid ../../etc/passwd", "/v1/reports", "application/jose",
       SignRaw("node-a", Header("ES256", "../../etc/passwd"), payload), 404, "not_found",
       "report is signed as node \"../../etc/passwd\", which is not enrolled."},
      {"report: kid \\xff", "/v1/reports", "application/jose",
       SignRaw("node-a", "{\"alg\":\"ES256\",\"kid\":\"\xff\"}", payload), 400,
       "invalid_argument", "JWS protected header is not valid JSON"},
  };
  cases.insert(cases.end(), more.begin(), more.end());
  ExpectAllRefused(cases);
  // The UTF-8 reason is named for the report payload too.
  {
    auto r = SubmitReport(SignRaw("node-a", Header("ES256", "node-a"),
                                  edit(payload, "\"device\":{", "\"device\":{\"serial\":\"\xc3\x28\",")));
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(ErrorMessage(r.body), HasSubstr(kUtf8));
  }

  // Nothing but the database's own files appeared, in the test folder or
  // where the canary ids point.
  std::set<std::string> tree_after = Tree(dir_);
  for (const std::string& f : tree_after) {
    if (!tree_before.count(f)) {
      EXPECT_THAT(f, AnyOf("verifier.db-wal", "verifier.db-shm", "verifier.db-journal"))
          << "new file " << f;
    }
  }
  for (const std::string& where : {std::string("/tmp/"), dir_ + "/../", std::string("./"),
                                   std::string("/etc/"), dir_ + "/../../"}) {
    EXPECT_FALSE(fs::exists(where + canary)) << where + canary;
  }
  // Nothing at all was stored.
  auto diff = itest::DiffDb(before, Snapshot());
  EXPECT_TRUE(diff.empty()) << itest::DescribeDiff(diff);
  ExpectDecision(Sign("node-a", Claims("node-a", nonce)), "admit");
}

// --- 7. Resource limits of `dpuaudit-verifier serve` ------------------------------------------------

TEST_F(AdversarialTest, ResourceLimitFlagsAreEnforced) {
  auto start = [&](std::vector<std::string> flags, bool import_refvals = true) {
    verifier_.Stop();
    extra_ = flags;
    std::string err;
    bool ok = verifier_.Start(dir_, Flags(), &err);
    EXPECT_TRUE(ok) << "serve with " << ::testing::PrintToString(flags) << ": " << err;
    port_ = ok ? itest::PortOf(verifier_.url()) : 0;
    if (ok && import_refvals) ImportRefvals({"bf3-releases.json"});  // idempotent
    return ok;
  };
  auto healthz = [](const char* connection) {
    return std::string("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: ") + connection +
           "\r\n\r\n";
  };

  // --max-body: 413 payload_too_large before parsing; under it, parsed.
  if (start({"--max-body", "1024"}, /*import_refvals=*/false)) {
    SCOPED_TRACE("--max-body");
    Enroll("node-a");
    ExpectRefused({"body over --max-body", "/v1/challenges", "application/json",
                   R"({"node_id":"node-a","pad":")" + std::string(4096, 'x') + "\"}", 413,
                   "payload_too_large", ""});
    ExpectRefused({"body under --max-body", "/v1/challenges", "application/json",
                   R"({"node_id":"node-a","pad":")" + std::string(900, 'x') + "\"}", 400,
                   "invalid_argument", "request member \"pad\" is not allowed."});
  }

  // --max-header-bytes: 431 or 413 for a larger head; a normal one passes.
  if (start({"--max-header-bytes", "2048"})) {
    SCOPED_TRACE("--max-header-bytes");
    for (size_t pad : {4096u, 8192u, 65536u}) {
      SCOPED_TRACE("X-Pad of " + std::to_string(pad) + " bytes");
      std::string big = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " +
                        std::string(pad, 'p') + "\r\nConnection: close\r\n\r\n";
      auto r = itest::RawRequest(port_, big);
      ASSERT_TRUE(r.has_value()) << "no response";
      EXPECT_THAT(r->status, AnyOf(413, 431));
      ExpectHealthy();
    }
    auto ok = itest::RawRequest(port_, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " +
                                           std::string(512, 'p') + "\r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(ok.has_value());
    EXPECT_EQ(ok->status, 200);
  }

  // --request-timeout: an idle connection, and one that stops half-way
  // through its head, are closed by the server after about that long.
  if (start({"--request-timeout", "2"})) {
    SCOPED_TRACE("--request-timeout");
    auto idle = RawConn::Open(port_);
    auto half = RawConn::Open(port_);
    ASSERT_TRUE(idle && half);
    ASSERT_TRUE(half->Send("GET /healthz HTTP/1.1\r\nHost: 127."));
    auto t0 = std::chrono::steady_clock::now();
    std::string got;
    EXPECT_TRUE(idle->WaitClosed(8000, &got)) << "idle connection still open after 8 s";
    EXPECT_TRUE(half->WaitClosed(3000, &got)) << "half-sent head still open";
    EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000))
        << "closed long before --request-timeout";
    ExpectHealthy();
  }

  // --max-connections: the (N+1)th connection is closed or refused without
  // a response, while the open ones are served.
  // Every connection counts, the test's own included: none is left open
  // from the set-up (no import), and each of the N is shown to be admitted
  // (it is served a request and kept alive) before the (N+1)th is opened.
  if (start({"--max-connections", "4", "--max-connections-per-ip", "100",
             "--request-timeout", "30"},
            /*import_refvals=*/false)) {
    SCOPED_TRACE("--max-connections");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // set-up closed
    std::vector<std::unique_ptr<RawConn>> open;
    for (int i = 0; i < 4; ++i) {
      auto c = RawConn::Open(port_, "127.0.0.2");
      ASSERT_TRUE(c) << "connection " << i;
      ASSERT_TRUE(c->Send(healthz("keep-alive")));
      auto r = c->ReadResponse(5000);
      ASSERT_TRUE(r.has_value()) << "connection " << i << " within the limit was not served";
      EXPECT_EQ(r->status, 200);
      open.push_back(std::move(c));
    }
    // Refused at connect, or closed without a response.
    auto extra = RawConn::Open(port_, "127.0.0.2", 2000);
    if (extra) {
      extra->Send(healthz("close"));
      std::string got;
      EXPECT_TRUE(extra->WaitClosed(3000, &got))
          << "the 5th connection was neither refused nor closed within 3 s";
      EXPECT_EQ(got, "") << "the 5th connection was served";
    }
    ASSERT_TRUE(open[0]->Send(healthz("keep-alive")));
    auto r = open[0]->ReadResponse(5000);
    ASSERT_TRUE(r.has_value()) << "an admitted connection was not served";
    EXPECT_EQ(r->status, 200);
    open.clear();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ExpectHealthy();
  }

  // --max-connections-per-ip: the (N+1)th from one address is closed or
  // refused without a response; another address is served.
  if (start({"--max-connections-per-ip", "3", "--max-connections", "100",
             "--request-timeout", "30"})) {
    SCOPED_TRACE("--max-connections-per-ip");
    std::vector<std::unique_ptr<RawConn>> open;
    for (int i = 0; i < 3; ++i) {
      auto c = RawConn::Open(port_, "127.0.0.2");
      ASSERT_TRUE(c) << "connection " << i;
      open.push_back(std::move(c));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto extra = RawConn::Open(port_, "127.0.0.2", 2000);
    if (extra) {
      extra->Send(healthz("close"));
      std::string got;
      EXPECT_TRUE(extra->WaitClosed(3000, &got))
          << "the 4th connection from 127.0.0.2 was neither refused nor closed within 3 s";
      EXPECT_EQ(got, "") << "the 4th connection from 127.0.0.2 was served";
    }
    auto other = itest::RawRequest(port_, healthz("close"), 5000, "127.0.0.1");
    ASSERT_TRUE(other.has_value()) << "127.0.0.1 was not served";
    EXPECT_EQ(other->status, 200);
    ASSERT_TRUE(open[1]->Send(healthz("keep-alive")));
    auto r = open[1]->ReadResponse(5000);
    ASSERT_TRUE(r.has_value()) << "an admitted connection was not served";
    EXPECT_EQ(r->status, 200);
    open.clear();
    ExpectHealthy();
  }

  // --challenges-per-minute / --reports-per-minute: the (N+1)th within a
  // minute is 429 rate_limited and changes nothing; other nodes are not
  // affected.
  if (start({"--challenges-per-minute", "3", "--reports-per-minute", "2"})) {
    SCOPED_TRACE("rate limits");
    Enroll("node-r");
    Enroll("node-s");
    std::vector<std::string> nonces;
    for (int i = 0; i < 3; ++i) nonces.push_back(Challenge("node-r").nonce);
    ExpectRefused({"4th challenge within a minute", "/v1/challenges", "application/json",
                   ChallengeBody("node-r"), 429, "rate_limited",
                   "challenges for node \"node-r\" are limited to 3 per minute"});
    std::string s_nonce = Challenge("node-s").nonce;
    ExpectDecision(Sign("node-r", Claims("node-r", nonces[0])), "admit");
    ExpectDecision(Sign("node-r", Claims("node-r", nonces[1])), "admit");
    ExpectRefused({"3rd report within a minute", "/v1/reports", "application/jose",
                   Sign("node-r", Claims("node-r", nonces[2])), 429, "rate_limited",
                   "reports for node \"node-r\" are limited to 2 per minute"});
    ExpectDecision(Sign("node-s", Claims("node-s", s_nonce)), "admit");
  }
}

}  // namespace
}  // namespace dpuaudit
