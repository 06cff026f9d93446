// Hostile text in tool output, against the real dpuaudit-verifier and
// dpuaudit-agent over loopback: a recorded BlueField-3 (bf3-zero-trust)
// whose `bfver` and `flint` print Latin-1 bytes, bytes that are never UTF-8
// and control characters (a terminal escape, BEL). An honest DPU can
// print such bytes; the report must still get a decision (200), never a
// 500, with the bytes shown as U+FFFD and escapes in the reasons, and the
// node's admission and view must still be readable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/common/agent_collect.h"
#include "apps/shared/http_client.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "common/safe_text.h"
#include "device/device_source.h"
#include "integration/harness.h"
#include "report/claims.h"
#include "report/challenge_proof.h"
#include "report/jws.h"

namespace dpuaudit {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

constexpr char kToken[] = "hostile-text-bootstrap-token-0123456789";
constexpr char kFffd[] = "\xEF\xBF\xBD";  // U+FFFD

// What the hostile copy prints instead of the recorded lines.
struct Injection {
  std::string file;  // under out/
  std::string line;  // recorded
  std::string hostile;
};

const std::vector<Injection>& Injections() {
  static const std::vector<Injection> kInjections = {
      // A Latin-1 'é' and a terminal escape after the BSP version.
      {"bfver.txt", "BlueField BSP version: 4.9.1.13442",
       "BlueField BSP version: 4.9.1.13442\xE9\x1B[31m"},
      // Bytes that are UTF-8 nowhere after the OS release.
      {"bfver.txt", "OS Release Version: bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod",
       "OS Release Version: bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod\xFF\xFE"},
      // Another tool: a BEL and a Latin-1 byte after flint's FW Version, and
      // a Latin-1 '\xA9' in its Description.
      {"flint-q-full.txt", "FW Version:            32.43.2402",
       "FW Version:            32.43.2402\x07\xE9"},
      {"flint-q-full.txt", "Crypto Enabled", "Crypto Enabled \xA9 NVIDIA"},
  };
  return kInjections;
}

// A copy of the recorded bf3-zero-trust with the injections applied.
std::string HostileFixture(const std::string& dir) {
  std::string root = dir + "/bf3-hostile-text";
  fs::copy(itest::Fixture("bf3-zero-trust"), root,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  for (const Injection& in : Injections()) {
    std::string path = root + "/out/" + in.file;
    std::string text = itest::ReadAll(path);
    size_t at = text.find(in.line);
    EXPECT_NE(at, std::string::npos) << in.file << " lacks " << in.line;
    if (at == std::string::npos) continue;
    text.replace(at, in.line.size(), in.hostile);
    EXPECT_TRUE(WriteFileAtomic(path, AsBytes(text), 0644).ok());
  }
  return root;
}

nlohmann::json StrictJson(const std::string& body) {
  // Throws nothing; an invalid UTF-8 body is "discarded", i.e. not JSON.
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

// Every string in `j`, recursively.
void Strings(const nlohmann::json& j, std::vector<std::string>* out) {
  if (j.is_string()) {
    out->push_back(j.get<std::string>());
  } else if (j.is_structured()) {
    for (const auto& v : j) Strings(v, out);
  }
}

class HostileTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-hostile-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    token_file_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(WriteFileAtomic(token_file_, AsBytes(std::string(kToken) + "\n"), 0600).ok());
    std::vector<std::string> args = {"--policy", itest::kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", token_file_};
    for (auto& f : itest::AdminFlags(dir_, &admin_token_file_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    itest::Proc imported = itest::ImportFixtureRefvals(verifier_.url(), admin_token_file_);
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
    fixture_ = HostileFixture(dir_);
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) {
      fs::remove_all(dir_);
    } else {
      std::cerr << "kept " << dir_ << " (verifier log: " << verifier_.log() << ")\n";
    }
  }

  std::unique_ptr<apps::HttpClient> Client() {
    apps::HttpClientOptions o;
    o.max_response_bytes = 16 << 20;
    auto c = apps::HttpClient::New(verifier_.url(), o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  }
  apps::HttpResponse Call(const std::string& method, const std::string& path,
                          const std::string& content_type = "", const std::string& body = "",
                          const std::string& bearer = "") {
    // Node state needs the reader (or admin) token.
    auto r = method == "GET" ? Client()->GetWithBearer(path, "integration-admin-token-0001")
                             : Client()->PostWithBearer(path, content_type, body, bearer);
    EXPECT_TRUE(r.ok()) << method << " " << path << ": " << r.status().ToString();
    return r.ok() ? *r : apps::HttpResponse{};
  }

  // The verifier log holds no handler fault.
  void ExpectNoFaultLogged() {
    std::string log = itest::ReadAll(verifier_.log());
    EXPECT_THAT(log, Not(HasSubstr("threw"))) << log;
    EXPECT_TRUE(verifier_.Alive());
    EXPECT_EQ(Call("GET", "/healthz").status, 200);
  }

  std::string dir_, token_file_, admin_token_file_, fixture_;
  itest::VerifierProcess verifier_;
};

// Reasons of a 200 decision: every string well-formed and free of control
// characters; the injected bytes appear as U+FFFD and the controls escaped.
void ExpectSafeReasons(const nlohmann::json& reasons) {
  ASSERT_TRUE(reasons.is_array()) << reasons.dump();
  ASSERT_FALSE(reasons.empty());
  std::vector<std::string> strings;
  Strings(reasons, &strings);
  bool replacement = false, escaped_esc = false, escaped_bel = false;
  for (const std::string& s : strings) {
    EXPECT_TRUE(IsSafeText(s)) << s;
    replacement = replacement || s.find(kFffd) != std::string::npos;
    escaped_esc = escaped_esc || s.find("\\x1b[31m") != std::string::npos;
    escaped_bel = escaped_bel || s.find("\\x07") != std::string::npos;
  }
  EXPECT_TRUE(replacement) << reasons.dump();
  EXPECT_TRUE(escaped_esc) << reasons.dump();
  EXPECT_TRUE(escaped_bel) << reasons.dump();
}

TEST_F(HostileTextTest, SignedReportWithNonUtf8ToolOutputGetsADecision) {
  // Enroll a node with a key made here.
  auto key = EcPrivateKey::Generate();
  ASSERT_TRUE(key.ok());
  auto signer = Es256Signer::New(*key);
  ASSERT_TRUE(signer.ok());
  auto enrolled = Call("POST", "/v1/nodes", "application/json",
                       nlohmann::json{{"node_id", "hostile"},
                                      {"public_key", report::PublicJwk(key->public_key(), "k")}}
                           .dump(),
                       kToken);
  ASSERT_EQ(enrolled.status, 201) << enrolled.body;

  // The claims the agent builds from the hostile recording, properly signed.
  auto source = device::NewRecordedDeviceSource(fixture_);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  apps::Collection c = apps::CollectFromDevice(**source);
  for (const Finding& f : c.findings) EXPECT_TRUE(IsSafe(f)) << f.id << ": " << f.reason;
  auto proof = report::ChallengeRequestBody("hostile", SystemClock::Get().NowUnixSeconds(),
                                            **signer);
  ASSERT_TRUE(proof.ok()) << proof.status().ToString();
  auto ch = Call("POST", "/v1/challenges", "application/json", *proof);
  ASSERT_EQ(ch.status, 201) << ch.body;
  std::string nonce = StrictJson(ch.body)["nonce"];
  auto claims = apps::BuildClaims(c, "hostile", nonce, SystemClock::Get().NowUnixSeconds());
  auto jws = report::SignReport(claims, **signer, "hostile");
  ASSERT_TRUE(jws.ok()) << jws.status().ToString();

  auto r = Call("POST", "/v1/reports", "application/jose", *jws);
  ASSERT_EQ(r.status, 200) << r.body.substr(0, 2000);
  nlohmann::json body = StrictJson(r.body);
  ASSERT_TRUE(body.is_object()) << "not JSON (or not UTF-8): " << r.body.substr(0, 2000);
  EXPECT_THAT(body.value("decision", ""), AnyOf("admit", "deny"));
  ExpectSafeReasons(body["reasons"]);
  // The agent's advisory findings went through the same SafeText as the
  // verifier's re-derivation: no disagreement is reported for them.
  for (const auto& reason : body["reasons"]) {
    EXPECT_NE(reason.value("rule_id", ""), "agent.consistency") << reason.dump();
  }
  std::cout << "decision " << body["decision"] << "; reasons:\n";
  for (const auto& reason : body["reasons"]) {
    if (reason.value("verdict", "") != "pass") std::cout << "  " << reason.dump() << "\n";
  }

  // The stored result reads back: admission and the node view.
  auto admission = Call("GET", "/v1/nodes/hostile/admission");
  ASSERT_EQ(admission.status, 200) << admission.body.substr(0, 2000);
  nlohmann::json a = StrictJson(admission.body);
  EXPECT_EQ(a.value("decision", ""), body["decision"]);
  ExpectSafeReasons(a["reasons"]);
  auto view = Call("GET", "/v1/nodes/hostile");
  ASSERT_EQ(view.status, 200) << view.body.substr(0, 2000);
  nlohmann::json v = StrictJson(view.body);
  ASSERT_TRUE(v.is_object()) << view.body.substr(0, 2000);
  EXPECT_EQ(v["latest"]["decision"], body["decision"]);
  EXPECT_EQ(v["latest"]["reasons"], body["reasons"]);
  ExpectNoFaultLogged();
}

TEST_F(HostileTextTest, AgentAttestsAndProbesAHostileRecording) {
  const std::string agent = itest::kBin + "/dpuaudit-agent";
  const std::string key = dir_ + "/hostile.key";
  itest::Proc e = itest::Exec({agent, "enroll", "--verifier", verifier_.url(), "--node-id",
                               "hostile-agent", "--key", key, "--bootstrap-token-file",
                               token_file_});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;

  itest::Proc a = itest::Exec({agent, "attest", "--verifier", verifier_.url(), "--node-id",
                               "hostile-agent", "--key", key, "--device-root", fixture_});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_THAT(a.out, AnyOf(HasSubstr("hostile-agent: admit"), HasSubstr("hostile-agent: deny")));
  EXPECT_THAT(a.out, HasSubstr(kFffd)) << a.out;
  // No raw control byte from the device reaches the operator's terminal.
  EXPECT_EQ(a.out.find('\x1b'), std::string::npos) << a.out;
  EXPECT_EQ(a.out.find('\x07'), std::string::npos) << a.out;
  auto admission = Call("GET", "/v1/nodes/hostile-agent/admission");
  ASSERT_EQ(admission.status, 200) << admission.body.substr(0, 2000);
  EXPECT_THAT(StrictJson(admission.body).value("decision", ""), AnyOf("admit", "deny"));

  // The local view, as JSON: valid UTF-8, the bytes replaced.
  itest::Proc p = itest::Exec({agent, "probe", "--json", "--device-root", fixture_});
  EXPECT_THAT(p.exit_code, AnyOf(0, 1)) << p.err;
  nlohmann::json doc = StrictJson(p.out);
  ASSERT_TRUE(doc.is_object()) << p.out.substr(0, 2000) << p.err;
  std::vector<std::string> strings;
  Strings(doc, &strings);
  for (const std::string& s : strings) EXPECT_TRUE(IsSafeText(s)) << s;
  EXPECT_THAT(p.out, HasSubstr(kFffd));
  ExpectNoFaultLogged();
}

}  // namespace
}  // namespace dpuaudit
