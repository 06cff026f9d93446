// Key rotation and node re-key against the real binaries (issue 15, keys):
//  - the verifier's EAR signing key is rotated by restarting it with a new
//    --key: the JWKS publishes the new key first and the old one until
//    every result it signed has expired; an old EAR still verifies with
//    `dpuaudit admit` against the published keys, new EARs carry the new
//    kid, and once the old results expired (verifier restarted under
//    libfaketime) the old key is gone and the old EAR is refused, naming its
//    kid;
//  - `dpuaudit-agent rekey` replaces a node's key with a request signed by
//    its old key; the old key can no longer get a challenge or submit a
//    report, the new one is admitted; a replayed request, one signed by a
//    stranger, one whose new-key proof is by another key and one for a
//    revoked node are refused with 4xx and change nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "apps/common/agent_collect.h"
#include "apps/shared/http_client.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "common/strict_json.h"
#include "device/device_source.h"
#include "integration/harness.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "report/rekey.h"

namespace dpuaudit {
namespace {

using itest::FakeTimeLibrary;
using itest::ParseJson;

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr char kToken[] = "keys-bootstrap-token-0123456789";
constexpr char kAdminToken[] = "keys-admin-token-0123456789";

std::string KidOf(const std::string& jws) {
  auto h = report::PeekUnverifiedHeader(jws);
  return h.ok() ? h->kid : "";
}

class KeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-keys-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/bootstrap.token",
                                AsBytes(std::string(kToken) + "\n"), 0600)
                    .ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/admin.token",
                                AsBytes(std::string(kAdminToken) + "\n"), 0600)
                    .ok());
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cerr << "kept " << dir_ << " (verifier log: " << verifier_.log() << ")\n";
    }
  }

  // Starts (or restarts, on the same database) the verifier with the key
  // file dir/verifier.key (created when absent); with `clock_offset` (e.g.
  // "+400") its clock runs that many seconds off.
  void StartVerifier(const std::string& clock_offset = "") {
    verifier_.Stop();
    if (!clock_offset.empty()) {
      setenv("LD_PRELOAD", FakeTimeLibrary().c_str(), 1);
      setenv("FAKETIME", clock_offset.c_str(), 1);
      setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    }
    std::string err;
    bool started = verifier_.Start(
        dir_,
        {"--policy", itest::kSrc + "/policies/zero-trust.json", "--bootstrap-token-file",
         dir_ + "/bootstrap.token", "--admin-token-file", dir_ + "/admin.token"},
        &err);
    unsetenv("LD_PRELOAD");
    unsetenv("FAKETIME");
    unsetenv("FAKETIME_DONT_FAKE_MONOTONIC");
    ASSERT_TRUE(started) << err;
  }
  void ImportRefvals() {
    auto r = Client()->PostWithBearer("/v1/refvals", "application/json",
                                      itest::ReadAll(itest::kFixtureRefvals), kAdminToken);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 201) << r->body;
  }
  std::unique_ptr<apps::HttpClient> Client() {
    apps::HttpClientOptions o;
    o.timeout = std::chrono::milliseconds(15000);
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
  apps::HttpResponse Get(const std::string& path) {
    auto r = Client()->GetWithBearer(path, kAdminToken);
    EXPECT_TRUE(r.ok()) << path << ": " << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }
  void Enroll(const std::string& node, const EcPrivateKey& key) {
    std::string body =
        nlohmann::json{{"node_id", node}, {"public_key", report::PublicJwk(key.public_key(), "k")}}
            .dump();
    auto r = Post("/v1/nodes", "application/json", body, kToken);
    ASSERT_EQ(r.status, 201) << r.body;
  }
  apps::HttpResponse ChallengeWith(const std::string& node, const EcPrivateKey& key) {
    auto signer = Es256Signer::New(key);
    EXPECT_TRUE(signer.ok());
    auto body =
        report::ChallengeRequestBody(node, SystemClock::Get().NowUnixSeconds(), **signer);
    EXPECT_TRUE(body.ok());
    return Post("/v1/challenges", "application/json", body.ok() ? *body : "");
  }
  apps::HttpResponse ReportWith(const std::string& node, const std::string& nonce,
                                const EcPrivateKey& key) {
    static apps::Collection* collection = nullptr;
    if (collection == nullptr) {
      auto source = device::NewRecordedDeviceSource(itest::Fixture("bf3-zero-trust"));
      EXPECT_TRUE(source.ok()) << source.status().ToString();
      collection = new apps::Collection(apps::CollectFromDevice(**source));
    }
    report::ReportClaims claims =
        apps::BuildClaims(*collection, node, nonce, SystemClock::Get().NowUnixSeconds());
    auto signer = Es256Signer::New(key);
    EXPECT_TRUE(signer.ok());
    auto jws = report::SignReport(claims, **signer, node);
    EXPECT_TRUE(jws.ok()) << jws.status().ToString();
    return Post("/v1/reports", "application/jose", jws.ok() ? *jws : "");
  }
  // One challenge -> signed report round; the verifier's answer.
  nlohmann::json Attest(const std::string& node, const EcPrivateKey& key) {
    auto c = ChallengeWith(node, key);
    EXPECT_EQ(c.status, 201) << c.body;
    auto r = ReportWith(node, ParseJson(c.body).value("nonce", ""), key);
    EXPECT_EQ(r.status, 200) << r.body;
    return ParseJson(r.body);
  }
  nlohmann::json Jwks() {
    auto r = Client()->Get("/.well-known/jwks.json");
    EXPECT_TRUE(r.ok());
    return r.ok() ? ParseJson(r->body) : nlohmann::json();
  }
  std::string WriteJwks(const std::string& name) {
    std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, AsBytes(Jwks().dump()), 0600).ok());
    return path;
  }
  std::string Thumbprint(const std::string& node) {
    auto v = Get("/v1/nodes/" + node);
    return ParseJson(v.body).value("key_thumbprint", "");
  }
  std::string WriteKey(const std::string& name, const EcPrivateKey& key) {
    std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, AsBytes(key.ToPem()), 0600).ok());
    return path;
  }
  apps::HttpResponse PostRekey(const std::string& node, const std::string& jws) {
    return Post("/v1/nodes/" + node + "/rekey", "application/jose", jws);
  }

  std::string dir_;
  itest::VerifierProcess verifier_;
};

EcPrivateKey NewKey() { return *EcPrivateKey::Generate(); }

TEST_F(KeysTest, RotatedSigningKeyStaysPublishedUntilItsResultsExpire) {
  if (FakeTimeLibrary().empty()) {
    GTEST_SKIP() << "libfaketime is not installed (Debian package faketime)";
  }
#ifdef DPUAUDIT_TEST_UNDER_ASAN
  GTEST_SKIP() << "libfaketime hangs in its initialiser under AddressSanitizer";
#endif
  StartVerifier();  // creates key A
  ImportRefvals();
  EcPrivateKey node_key = NewKey();
  Enroll("node-a", node_key);
  nlohmann::json first = Attest("node-a", node_key);
  ASSERT_EQ(first["decision"], "admit") << first.dump();
  const std::string old_ear = first["ear"].get<std::string>();
  const std::string kid_a = KidOf(old_ear);
  nlohmann::json jwks_a = Jwks();
  ASSERT_EQ(jwks_a["keys"].size(), 1u) << jwks_a.dump();
  ASSERT_EQ(jwks_a["keys"][0]["kid"], kid_a);
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/old.ear", AsBytes(old_ear), 0600).ok());

  // Rotate: a new --key file, same database.
  verifier_.Stop();
  fs::rename(dir_ + "/verifier.key", dir_ + "/verifier-a.key");
  StartVerifier();  // creates key B
  nlohmann::json jwks_ab = Jwks();
  ASSERT_EQ(jwks_ab["keys"].size(), 2u) << jwks_ab.dump();
  const std::string kid_b = jwks_ab["keys"][0]["kid"].get<std::string>();
  EXPECT_NE(kid_b, kid_a);
  EXPECT_EQ(jwks_ab["keys"][1]["kid"], kid_a) << jwks_ab.dump();
  std::string pinned = WriteJwks("jwks-ab.json");

  // The old EAR still verifies: as the verifier's current answer and as a file.
  itest::Proc via_verifier =
      itest::Exec({itest::kBin + "/dpuaudit", "admit", "--node", "node-a", "--verifier",
                   verifier_.url(), "--jwks", pinned, "--token-file", dir_ + "/admin.token"});
  EXPECT_EQ(via_verifier.exit_code, 0) << via_verifier.out << via_verifier.err;
  EXPECT_THAT(via_verifier.out, HasSubstr(kid_a));
  itest::Proc via_file = itest::Exec({itest::kBin + "/dpuaudit", "admit", "--node", "node-a",
                                      "--ear", dir_ + "/old.ear", "--jwks", pinned});
  EXPECT_EQ(via_file.exit_code, 0) << via_file.out << via_file.err;

  // New EARs are signed by B, and verify with the same pinned set.
  nlohmann::json second = Attest("node-a", node_key);
  ASSERT_EQ(second["decision"], "admit") << second.dump();
  EXPECT_EQ(KidOf(second["ear"].get<std::string>()), kid_b);
  ASSERT_TRUE(
      WriteFileAtomic(dir_ + "/new.ear", AsBytes(second["ear"].get<std::string>()), 0600).ok());
  itest::Proc new_file = itest::Exec({itest::kBin + "/dpuaudit", "admit", "--node", "node-a",
                                      "--ear", dir_ + "/new.ear", "--jwks", pinned});
  EXPECT_EQ(new_file.exit_code, 0) << new_file.out << new_file.err;

  // The operator's view: B current, A published until its results expired.
  itest::Proc list = itest::Exec({itest::kBin + "/dpuaudit-verifier", "keys", "list", "--db",
                                  dir_ + "/verifier.db", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  nlohmann::json keys = ParseJson(list.out)["keys"];
  ASSERT_EQ(keys.size(), 2u) << list.out;
  EXPECT_EQ(keys[0]["kid"], kid_b);
  EXPECT_EQ(keys[0]["status"], "current");
  EXPECT_EQ(keys[1]["kid"], kid_a);
  EXPECT_EQ(keys[1]["status"], "published");
  const int64_t a_until = keys[1]["published_until_at"].get<int64_t>();
  EXPECT_GE(a_until, first["expires_at"].get<int64_t>()) << list.out;
  EXPECT_LE(a_until, SystemClock::Get().NowUnixSeconds() + 300 + 60 + 5) << list.out;
  itest::Proc table = itest::Exec(
      {itest::kBin + "/dpuaudit-verifier", "keys", "list", "--db", dir_ + "/verifier.db"});
  EXPECT_THAT(table.out, HasSubstr("published until"));

  // Past every result A signed (TTL 300 s plus the 60 s use-ahead): A is
  // gone from the JWKS and the old EAR no longer verifies against it.
  StartVerifier("+420");
  nlohmann::json jwks_b = Jwks();
  ASSERT_EQ(jwks_b["keys"].size(), 1u) << jwks_b.dump();
  EXPECT_EQ(jwks_b["keys"][0]["kid"], kid_b);
  std::string only_b = WriteJwks("jwks-b.json");
  itest::Proc refused = itest::Exec({itest::kBin + "/dpuaudit", "admit", "--node", "node-a",
                                     "--ear", dir_ + "/old.ear", "--jwks", only_b});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_THAT(refused.out + refused.err, HasSubstr(kid_a));
  EXPECT_THAT(refused.out + refused.err, HasSubstr("not pinned"));
}

TEST_F(KeysTest, AgentRekeyReplacesTheKeyAndRefusesForgeries) {
  StartVerifier();
  ImportRefvals();
  EcPrivateKey k1 = NewKey();
  Enroll("node-a", k1);
  ASSERT_EQ(Attest("node-a", k1)["decision"], "admit");
  const std::string t1 = k1.public_key().Thumbprint();
  ASSERT_EQ(Thumbprint("node-a"), t1);

  // The real agent: signed by --key, proving --new-key, then the new key
  // file replaces --key.
  std::string key_file = WriteKey("agent.key", k1);
  std::string new_file = dir_ + "/agent-new.key";
  itest::Proc p = itest::Exec({itest::kBin + "/dpuaudit-agent", "rekey", "--verifier",
                               verifier_.url(), "--node-id", "node-a", "--key", key_file,
                               "--new-key", new_file});
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_FALSE(fs::exists(new_file));
  auto k2 = EcPrivateKey::LoadFile(key_file);
  ASSERT_TRUE(k2.ok()) << k2.status().ToString();
  const std::string t2 = k2->public_key().Thumbprint();
  EXPECT_NE(t2, t1);
  EXPECT_EQ(Thumbprint("node-a"), t2);
  EXPECT_THAT(p.out, HasSubstr(t2));
  auto view = ParseJson(Get("/v1/nodes/node-a").body);
  bool rotated_event = false;
  for (const auto& e : view["history"]) rotated_event |= e.value("event", "") == "key_rotated";
  EXPECT_TRUE(rotated_event) << view.dump();
  // Results made under the old key no longer admit.
  EXPECT_EQ(ParseJson(Get("/v1/nodes/node-a/admission").body)["decision"], "deny");

  // The old key can neither get a challenge nor submit a report.
  EXPECT_EQ(ChallengeWith("node-a", k1).status, 401);
  auto c2 = ChallengeWith("node-a", *k2);
  ASSERT_EQ(c2.status, 201) << c2.body;
  EXPECT_EQ(ReportWith("node-a", ParseJson(c2.body).value("nonce", ""), k1).status, 401);
  // The new key attests and is admitted.
  EXPECT_EQ(Attest("node-a", *k2)["decision"], "admit");
  EXPECT_EQ(ParseJson(Get("/v1/nodes/node-a/admission").body)["decision"], "admit");

  auto signer2 = Es256Signer::New(*k2);
  ASSERT_TRUE(signer2.ok());
  const int64_t now = SystemClock::Get().NowUnixSeconds();

  // A stranger's signature: 401, nothing changed.
  {
    EcPrivateKey stranger = NewKey();
    auto s = Es256Signer::New(stranger);
    auto body = report::SignRekeyRequest("node-a", now, **s, NewKey());
    ASSERT_TRUE(body.ok());
    auto r = PostRekey("node-a", *body);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(Thumbprint("node-a"), t2);
  }
  // A new-key proof by another key than new_public_key: 401, nothing changed.
  {
    auto honest = report::SignRekeyRequest("node-a", now, **signer2, NewKey());
    ASSERT_TRUE(honest.ok());
    // Swap in another public key, keep the proof, re-sign the outer JWS with
    // the node's real key.
    size_t a = honest->find('.'), b = honest->find('.', a + 1);
    auto payload = Base64UrlDecode(honest->substr(a + 1, b - a - 1));
    ASSERT_TRUE(payload.ok());
    nlohmann::json j = nlohmann::json::parse(ToString(*payload));
    EcPrivateKey other = NewKey();
    j["new_public_key"] = report::PublicJwk(other.public_key(), other.public_key().Thumbprint());
    report::JwsHeader h;
    h.kid = "node-a";
    h.typ = std::string(report::kRekeyTyp);
    auto forged = report::SignCompact(AsBytes(strict_json::DumpJson(j)), **signer2, h);
    ASSERT_TRUE(forged.ok());
    auto r = PostRekey("node-a", *forged);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_THAT(r.body, HasSubstr("new_key_proof"));
    EXPECT_EQ(Thumbprint("node-a"), t2);
  }
  // A replay: the first use re-keys, the same bytes again are refused.
  {
    EcPrivateKey k3 = NewKey();
    auto body = report::SignRekeyRequest("node-a", now, **signer2, k3);
    ASSERT_TRUE(body.ok());
    auto r = PostRekey("node-a", *body);
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string t3 = k3.public_key().Thumbprint();
    EXPECT_EQ(ParseJson(r.body)["key_thumbprint"], t3);
    auto again = PostRekey("node-a", *body);
    EXPECT_EQ(again.status, 401) << again.body;
    EXPECT_EQ(Thumbprint("node-a"), t3);
  }
  // A revoked node: 403 even with its own key, nothing changed.
  {
    EcPrivateKey kb = NewKey();
    Enroll("node-b", kb);
    auto rv = Post("/v1/nodes/node-b/revoke", "application/json",
                   R"({"by":"op","reason":"RMA"})", kAdminToken);
    ASSERT_EQ(rv.status, 200) << rv.body;
    auto sb = Es256Signer::New(kb);
    auto body = report::SignRekeyRequest("node-b", now, **sb, NewKey());
    ASSERT_TRUE(body.ok());
    auto r = PostRekey("node-b", *body);
    EXPECT_EQ(r.status, 403) << r.body;
    EXPECT_EQ(Thumbprint("node-b"), kb.public_key().Thumbprint());
  }
}

}  // namespace
}  // namespace dpuaudit
