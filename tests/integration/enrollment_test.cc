// Enrollment and identity (issue 12) against the real binaries over
// loopback: a squatter that enrolled an id first is not approved by id
// alone and loses the id to the holder of that node's per-node token;
// pending enrollments expire, are capped and can be rejected; per-node
// tokens are single use, bound to their node id (and serial) and expire;
// the shared fleet token is off unless configured; a revoked node is
// denied at once and re-enrolls only with an admin's token.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/shared/http_client.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"
#include "report/challenge_proof.h"
#include "report/jws.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;

constexpr char kFleetToken[] = "enrollment-test-fleet-token-0123456789";
// The serial of tests/fixtures/devices/bf3-zero-trust (mlxbf-bootctl sn).
constexpr char kSerial[] = "MT2334X00001";

nlohmann::json Json(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

std::string ErrorMessage(const apps::HttpResponse& r) {
  auto j = Json(r.body);
  if (!j.is_object() || !j.contains("error")) return "(no JSON error) " + r.body;
  return j["error"].value("message", "");
}

class EnrollmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-enroll-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fleet_file_ = dir_ + "/fleet.token";
    ASSERT_TRUE(
        WriteFileAtomic(fleet_file_, AsBytes(std::string(kFleetToken) + "\n"), 0600).ok());
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cerr << "kept " << dir_ << " (verifier log: " << verifier_.log() << ")\n";
    }
  }

  // Admin API on, fixture reference values imported; no fleet token unless
  // `fleet`.
  void StartVerifier(std::vector<std::string> extra = {}, bool fleet = false) {
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json"};
    for (auto& f : itest::AdminFlags(dir_, &admin_file_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_file_)) args.push_back(f);
    if (fleet) {
      args.push_back("--bootstrap-token-file");
      args.push_back(fleet_file_);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    // The relying party pins the verifier key (dpuaudit admit never trusts
    // keys fetched from the server it asks).
    jwks_file_ = itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/verifier-jwks.json");
    ASSERT_FALSE(jwks_file_.empty());
    Proc imported = itest::ImportFixtureRefvals(verifier_.url(), admin_file_);
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  }
  std::string Db() const { return dir_ + "/verifier.db"; }
  std::string AdminToken() const { return "integration-admin-token-0001"; }

  std::string KeyFile(const std::string& name) { return dir_ + "/" + name + ".key"; }
  // The thumbprint of the key in `name`.key (created if missing), as the
  // agent will enroll it.
  std::string Thumbprint(const std::string& name) {
    bool created = false;
    auto key = EcPrivateKey::LoadOrCreateFile(KeyFile(name), &created);
    EXPECT_TRUE(key.ok()) << key.status().ToString();
    return key.ok() ? key->public_key().Thumbprint() : "";
  }

  // dpuaudit-agent enroll with key `key_name`, from a recorded device.
  Proc Enroll(const std::string& node, const std::string& key_name,
              const std::string& token_file = "", const std::string& device = "bf3-zero-trust") {
    std::vector<std::string> argv = {kBin + "/dpuaudit-agent", "enroll", "--verifier",
                                     verifier_.url(), "--node-id", node, "--key",
                                     KeyFile(key_name), "--device-root", Fixture(device)};
    if (!token_file.empty()) {
      argv.push_back("--token-file");
      argv.push_back(token_file);
    }
    return Exec(argv);
  }
  Proc Attest(const std::string& node, const std::string& key_name) {
    return Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(), "--node-id",
                 node, "--key", KeyFile(key_name), "--device-root", Fixture("bf3-zero-trust")});
  }
  Proc Admit(const std::string& node) {
    return Exec({kBin + "/dpuaudit", "admit", "--verifier", verifier_.url(), "--node", node,
                 "--jwks", jwks_file_, "--token-file", reader_file_});
  }
  Proc VerifierCli(std::vector<std::string> args) {
    std::vector<std::string> argv = {kBin + "/dpuaudit-verifier"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--db");
    argv.push_back(Db());
    return Exec(argv);
  }
  // `dpuaudit tokens issue NODE ... --out FILE`; returns FILE.
  std::string IssueToken(const std::string& node, std::vector<std::string> extra = {}) {
    std::string out = dir_ + "/" + node + "-" + std::to_string(++tokens_) + ".token";
    std::vector<std::string> argv = {kBin + "/dpuaudit", "tokens", "issue", node, "--by",
                                     "admin-alice", "--out", out, "--verifier",
                                     verifier_.url(), "--admin-token-file", admin_file_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Proc p = Exec(argv);
    EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
    return out;
  }

  std::unique_ptr<apps::HttpClient> Client() {
    auto c = apps::HttpClient::New(verifier_.url(), {});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  }
  apps::HttpResponse Post(const std::string& path, const nlohmann::json& body,
                          const std::string& bearer = "") {
    auto r = Client()->PostWithBearer(path, "application/json", body.dump(), bearer);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }
  // Node state needs the reader (or admin) token: the admin's by default.
  apps::HttpResponse Get(const std::string& path, const std::string& bearer = "") {
    auto r = Client()->GetWithBearer(path, bearer.empty() ? AdminToken() : bearer);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }
  nlohmann::json Node(const std::string& node) {
    auto r = Get("/v1/nodes/" + node);
    EXPECT_EQ(r.status, 200) << r.body;
    return Json(r.body);
  }
  std::string Admission(const std::string& node) {
    return Json(Get("/v1/nodes/" + node + "/admission").body).value("decision", "?");
  }
  // An enrollment body for a fresh key (not through the agent).
  nlohmann::json EnrollBody(const std::string& node, const std::string& serial = "") {
    auto key = EcPrivateKey::Generate();
    EXPECT_TRUE(key.ok());
    nlohmann::json j = {{"node_id", node},
                        {"public_key", report::PublicJwk(key->public_key(), "k")}};
    if (!serial.empty()) j["device"] = {{"serial", serial}};
    return j;
  }
  nlohmann::json IssueByApi(const std::string& node, nlohmann::json extra = {}) {
    nlohmann::json body = {{"node_id", node}, {"by", "admin-bob"}};
    if (extra.is_object()) body.update(extra);
    auto r = Post("/v1/enrollment-tokens", body, AdminToken());
    EXPECT_EQ(r.status, 201) << r.body;
    return Json(r.body);
  }
  std::string TokenStatus(const std::string& token_id) {
    auto list = Json(Get("/v1/enrollment-tokens", AdminToken()).body);
    for (const auto& t : list["tokens"]) {
      if (t["token_id"] == token_id) return t["status"].get<std::string>();
    }
    return "(not listed)";
  }
  bool HasEvent(const nlohmann::json& node, const std::string& event,
                const std::string& detail_part = "") {
    for (const auto& e : node["history"]) {
      if (e["event"] == event &&
          e["detail"].get<std::string>().find(detail_part) != std::string::npos) {
        return true;
      }
    }
    return false;
  }

  std::string dir_, fleet_file_, admin_file_, reader_file_, jwks_file_;
  int tokens_ = 0;
  itest::VerifierProcess verifier_;
};

// Item 4: approving by id alone approved whatever key claimed it first.
TEST_F(EnrollmentTest, SquatterIsNotApprovedByIdAndTheTokenHolderTakesOver) {
  StartVerifier();
  const std::string squat = Thumbprint("squatter");
  const std::string real = Thumbprint("real");
  // The squatter claims dpu-7 first, without a token, from another device.
  Proc s = Enroll("dpu-7", "squatter", "", "bf3-privileged-host");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_THAT(s.out, HasSubstr("pending"));
  EXPECT_THAT(s.out, HasSubstr("--thumbprint " + squat));

  // The operator approves the real device's key: refused, showing what is
  // actually stored.
  Proc wrong = VerifierCli({"approve", "dpu-7", "--thumbprint", real, "--by", "op"});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  EXPECT_THAT(wrong.err, HasSubstr(squat));
  EXPECT_THAT(wrong.err, HasSubstr("refusing to approve"));
  // Without --thumbprint: what would be approved, and exit 2.
  Proc show = VerifierCli({"approve", "dpu-7"});
  EXPECT_EQ(show.exit_code, 2);
  EXPECT_THAT(show.err, HasSubstr("--thumbprint " + squat));
  EXPECT_EQ(Node("dpu-7")["state"], "pending");
  EXPECT_EQ(Admission("dpu-7"), "deny");

  // The real device enrolls with its per-node token and takes the id over.
  std::string token = IssueToken("dpu-7");
  struct stat st {};
  ASSERT_EQ(stat(token.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Proc e = Enroll("dpu-7", "real", token);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_THAT(e.out, HasSubstr("approved"));
  nlohmann::json n = Node("dpu-7");
  EXPECT_EQ(n["key_thumbprint"], real);
  EXPECT_EQ(n["state"], "approved");
  EXPECT_EQ(n["claimed_device"]["serial"], kSerial);
  EXPECT_TRUE(HasEvent(n, "key_replaced", squat)) << n.dump(2);
  EXPECT_THAT(n["approved_by"].get<std::string>(), HasSubstr("admin-alice"));

  // The real node attests and is admitted; the squatter's key is useless.
  Proc a = Attest("dpu-7", "real");
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_EQ(Admit("dpu-7").exit_code, 0);
  Proc sa = Attest("dpu-7", "squatter");
  EXPECT_EQ(sa.exit_code, 2) << sa.out;
  // Approving the now-approved node with its key is idempotent.
  EXPECT_EQ(VerifierCli({"approve", "dpu-7", "--thumbprint", real}).exit_code, 0);

  // A pending node approved with the right thumbprint (and serial) works;
  // a serial that contradicts the claimed one is refused.
  const std::string honest = Thumbprint("honest");
  ASSERT_EQ(Enroll("dpu-8", "honest").exit_code, 0);
  Proc bad_serial =
      VerifierCli({"approve", "dpu-8", "--thumbprint", honest, "--serial", "MT9999X99999"});
  EXPECT_EQ(bad_serial.exit_code, 1);
  EXPECT_THAT(bad_serial.err, HasSubstr(kSerial));
  Proc ok = VerifierCli({"approve", "dpu-8", "--thumbprint", honest, "--by", "op",
                         "--reason", "serial checked on the label"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr(kSerial));
  EXPECT_EQ(Node("dpu-8")["device_serial"], kSerial);
  ASSERT_EQ(Attest("dpu-8", "honest").exit_code, 0);
  EXPECT_EQ(Admit("dpu-8").exit_code, 0);
}

TEST_F(EnrollmentTest, PendingEnrollmentsExpireAreCappedAndCanBeRejected) {
  // A short TTL (10 s): long enough for the first steps on a loaded
  // machine; the expiry step waits for the stored expiry, not a guess.
  StartVerifier({"--pending-ttl", "10s", "--max-pending", "2"});
  ASSERT_EQ(Enroll("p1", "p1").exit_code, 0);
  ASSERT_EQ(Enroll("p2", "p2").exit_code, 0);
  // The cap: a third anonymous enrollment is refused and stores nothing.
  auto full = Post("/v1/nodes", EnrollBody("p3"));
  EXPECT_EQ(full.status, 503) << full.body;
  EXPECT_THAT(ErrorMessage(full), HasSubstr("pending enrollments"));
  EXPECT_EQ(Get("/v1/nodes/p3").status, 404);
  // A per-node token still enrolls beyond the cap (it is not pending).
  nlohmann::json t = IssueByApi("p4");
  EXPECT_EQ(Post("/v1/nodes", EnrollBody("p4"), t["token"].get<std::string>()).status, 201);

  // Reject removes a pending squatter; the id is free again.
  Proc rj = VerifierCli({"reject", "p1", "--by", "op", "--reason", "not ours"});
  ASSERT_EQ(rj.exit_code, 0) << rj.err;
  EXPECT_EQ(Get("/v1/nodes/p1").status, 404);
  Proc history = VerifierCli({"nodes", "show", "p1"});
  EXPECT_EQ(history.exit_code, 2);  // gone: an unknown node
  EXPECT_EQ(Post("/v1/nodes", EnrollBody("p3")).status, 201);
  // Reject is for pending nodes only.
  Proc rj_approved = VerifierCli({"reject", "p4", "--by", "op"});
  EXPECT_EQ(rj_approved.exit_code, 1);
  EXPECT_THAT(rj_approved.err, HasSubstr("use revoke"));

  // Expiry: after the TTL the pending p2 cannot be approved...
  const std::string p2 = Thumbprint("p2");
  const int64_t expires_at = Node("p2")["pending_expires_at"].get<int64_t>();
  while (std::time(nullptr) <= expires_at) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  Proc late = VerifierCli({"approve", "p2", "--thumbprint", p2, "--pending-ttl", "10s"});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_THAT(late.err, HasSubstr("expired"));
  Proc list = VerifierCli({"nodes", "list", "--pending-ttl", "10s"});
  EXPECT_THAT(list.out, HasSubstr("pending(expired)"));
  // ...and its id is free again: another key enrolls it (pending anew).
  auto again = Post("/v1/nodes", EnrollBody("p2"));
  EXPECT_EQ(again.status, 201) << again.body;
  nlohmann::json n = Node("p2");
  EXPECT_NE(n["key_thumbprint"], p2);
  EXPECT_TRUE(HasEvent(n, "expired")) << n.dump(2);
}

// Item 5: per-node, single-use tokens bound to an id (and serial).
TEST_F(EnrollmentTest, PerNodeTokenIsSingleUseBoundToItsIdSerialAndExpires) {
  StartVerifier();
  // The admin API is needed to issue one.
  EXPECT_EQ(Post("/v1/enrollment-tokens", {{"node_id", "n1"}, {"by", "x"}}).status, 401);
  nlohmann::json t = IssueByApi("n1");
  const std::string secret = t["token"].get<std::string>();
  ASSERT_THAT(secret, HasSubstr("dpaet_"));
  // Listed without its secret; stored only as its hash.
  auto list = Get("/v1/enrollment-tokens", AdminToken());
  ASSERT_EQ(list.status, 200);
  EXPECT_THAT(list.body, Not(HasSubstr(secret)));
  EXPECT_THAT(itest::ReadAll(Db()) + itest::ReadAll(Db() + "-wal"), Not(HasSubstr(secret)));

  // Another id: 403, nothing stored, token unspent.
  auto other = Post("/v1/nodes", EnrollBody("n2"), secret);
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_THAT(ErrorMessage(other), HasSubstr("is for node \"n1\""));
  EXPECT_EQ(Get("/v1/nodes/n2").status, 404);
  EXPECT_EQ(TokenStatus(t["token_id"].get<std::string>()), "unused");
  // Its own id: approved at once; then spent.
  auto ok = Post("/v1/nodes", EnrollBody("n1"), secret);
  ASSERT_EQ(ok.status, 201) << ok.body;
  EXPECT_EQ(Json(ok.body)["state"], "approved");
  EXPECT_EQ(TokenStatus(t["token_id"].get<std::string>()), "used");
  auto twice = Post("/v1/nodes", EnrollBody("n1"), secret);
  EXPECT_EQ(twice.status, 401);
  EXPECT_THAT(ErrorMessage(twice), HasSubstr("already used"));

  // Serial-bound: only a device stating that serial.
  std::string bound = IssueToken("s1", {"--serial", "MT0000X00000"});
  Proc wrong_dev = Enroll("s1", "s1", bound);
  EXPECT_EQ(wrong_dev.exit_code, 2);
  EXPECT_THAT(wrong_dev.err, HasSubstr("bound to device serial"));
  EXPECT_EQ(Get("/v1/nodes/s1").status, 404);
  std::string right = IssueToken("s2", {"--serial", kSerial});
  Proc right_dev = Enroll("s2", "s2", right);
  ASSERT_EQ(right_dev.exit_code, 0) << right_dev.err;
  EXPECT_EQ(Node("s2")["device_serial"], kSerial);

  // Expired and revoked tokens enroll nothing.
  nlohmann::json short_lived = IssueByApi("e1", {{"ttl_seconds", 1}});
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  auto expired = Post("/v1/nodes", EnrollBody("e1"), short_lived["token"].get<std::string>());
  EXPECT_EQ(expired.status, 401);
  EXPECT_THAT(ErrorMessage(expired), HasSubstr("expired"));
  nlohmann::json revoked = IssueByApi("e2");
  auto rv = Post("/v1/enrollment-tokens/" + revoked["token_id"].get<std::string>() + "/revoke",
                 {{"by", "admin-bob"}}, AdminToken());
  EXPECT_EQ(rv.status, 200) << rv.body;
  auto after = Post("/v1/nodes", EnrollBody("e2"), revoked["token"].get<std::string>());
  EXPECT_EQ(after.status, 401);
  EXPECT_THAT(ErrorMessage(after), HasSubstr("revoked"));
  EXPECT_EQ(Get("/v1/nodes/e2").status, 404);
  // The local command lists them too.
  Proc local = VerifierCli({"tokens", "list"});
  EXPECT_EQ(local.exit_code, 0) << local.err;
  EXPECT_THAT(local.out, HasSubstr("revoked"));
  EXPECT_THAT(local.out, Not(HasSubstr(secret)));

  // No fleet token unless configured: a guessed shared token is refused.
  auto fleet = Post("/v1/nodes", EnrollBody("ghost"), kFleetToken);
  EXPECT_EQ(fleet.status, 401);
  EXPECT_THAT(ErrorMessage(fleet), HasSubstr("fleet token is not enabled"));
  EXPECT_THAT(itest::ReadAll(verifier_.log()), Not(HasSubstr("shared fleet enrollment token")));
}

TEST_F(EnrollmentTest, FleetTokenIsAnExplicitOptInAndCannotReEnrollRevoked) {
  StartVerifier({}, /*fleet=*/true);
  EXPECT_THAT(itest::ReadAll(verifier_.log()),
              HasSubstr("shared fleet enrollment token enabled: any holder can enroll any "
                        "unused id"));
  auto r = Post("/v1/nodes", EnrollBody("f1"), kFleetToken);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Json(r.body)["state"], "approved");
  ASSERT_EQ(Post("/v1/nodes/f1/revoke", {{"by", "op"}, {"reason", "RMA"}}, AdminToken()).status,
            200);
  auto back = Post("/v1/nodes", EnrollBody("f1"), kFleetToken);
  EXPECT_EQ(back.status, 403) << back.body;
  EXPECT_THAT(ErrorMessage(back), HasSubstr("needs a per-node enrollment token"));
}

// Item 8: revocation, immediate, recorded, and final unless an admin acts.
TEST_F(EnrollmentTest, RevokedNodeIsDeniedAtOnceAndReEnrollsOnlyWithAnAdminToken) {
  StartVerifier();
  ASSERT_EQ(Enroll("r1", "r1", IssueToken("r1")).exit_code, 0);
  ASSERT_EQ(Attest("r1", "r1").exit_code, 0);
  ASSERT_EQ(Admit("r1").exit_code, 0);

  // No admin token: refused.
  EXPECT_EQ(Post("/v1/nodes/r1/revoke", {{"by", "x"}, {"reason", "y"}}).status, 401);
  Proc rv = Exec({kBin + "/dpuaudit", "nodes", "revoke", "r1", "--by", "alice", "--reason",
                  "key leaked", "--verifier", verifier_.url(), "--admin-token-file",
                  admin_file_});
  ASSERT_EQ(rv.exit_code, 0) << rv.out << rv.err;
  // Deny from the very next request, with who/when/why.
  Proc admit = Admit("r1");
  EXPECT_EQ(admit.exit_code, 1) << admit.out;
  EXPECT_THAT(admit.out + admit.err, HasSubstr("revoked"));
  bool created = false;
  auto r1_key = EcPrivateKey::LoadOrCreateFile(KeyFile("r1"), &created);
  ASSERT_TRUE(r1_key.ok());
  auto r1_signer = Es256Signer::New(*r1_key);
  ASSERT_TRUE(r1_signer.ok());
  auto proof_body = report::ChallengeRequestBody("r1", std::time(nullptr), **r1_signer);
  ASSERT_TRUE(proof_body.ok());
  auto ch = Post("/v1/challenges", nlohmann::json::parse(*proof_body));
  EXPECT_EQ(ch.status, 403);
  EXPECT_THAT(ErrorMessage(ch), HasSubstr("key leaked"));
  Proc a = Attest("r1", "r1");
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_THAT(a.err, HasSubstr("revoked"));
  nlohmann::json n = Node("r1");
  EXPECT_EQ(n["state"], "revoked");
  EXPECT_EQ(n["revocation"]["revoked_by"], "alice");
  EXPECT_EQ(n["revocation"]["reason"], "key leaked");
  EXPECT_GT(n["revocation"]["revoked_at"].get<int64_t>(), 0);

  // Re-enrolling without an admin: refused, naming the revocation.
  Proc same = Enroll("r1", "r1");
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_THAT(same.err, HasSubstr("revoked at"));
  auto other = Post("/v1/nodes", EnrollBody("r1"));
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(Node("r1")["state"], "revoked");

  // The API and the local command revoke too.
  ASSERT_EQ(Enroll("r2", "r2", IssueToken("r2")).exit_code, 0);
  auto api = Post("/v1/nodes/r2/revoke", {{"by", "bob"}, {"reason", "sent for repair"}},
                  AdminToken());
  EXPECT_EQ(api.status, 200) << api.body;
  EXPECT_EQ(Admission("r2"), "deny");
  ASSERT_EQ(Enroll("r3", "r3", IssueToken("r3")).exit_code, 0);
  Proc local = VerifierCli({"revoke", "r3", "--by", "carol", "--reason", "decommissioned"});
  EXPECT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(Node("r3")["revocation"]["revoked_by"], "carol");

  // An admin's per-node token re-enrolls r1 with a new key; the old result
  // does not admit it, a fresh one does.
  Proc re = Enroll("r1", "r1-new", IssueToken("r1"));
  ASSERT_EQ(re.exit_code, 0) << re.err;
  n = Node("r1");
  EXPECT_EQ(n["state"], "approved");
  EXPECT_EQ(n["key_thumbprint"], Thumbprint("r1-new"));
  EXPECT_FALSE(n.contains("revocation"));
  EXPECT_TRUE(HasEvent(n, "revoked", "key leaked")) << n.dump(2);
  EXPECT_TRUE(HasEvent(n, "re_enrolled", "alice")) << n.dump(2);
  EXPECT_EQ(Admission("r1"), "deny");
  ASSERT_EQ(Attest("r1", "r1-new").exit_code, 0);
  EXPECT_EQ(Admit("r1").exit_code, 0);
}

}  // namespace
}  // namespace dpuaudit
