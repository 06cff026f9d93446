// dpuaudit-report/2 with the real binaries over loopback HTTP
// (docs/architecture.md#report-format): the agent's first /2 report is full
// and becomes its base; the next carries every item by digest and is judged
// identically; a changed item makes the agent send everything in full (the
// new base); a verifier that does not hold the base answers 409
// evidence_unknown and the agent resends in full at once; a restarted
// verifier resolves the base from its store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/files.h"
#include "integration/harness.h"

namespace dpuaudit {
namespace report_v2_itest {

using ::testing::HasSubstr;
using dpuaudit::itest::Exec;
using dpuaudit::itest::Fixture;
using dpuaudit::itest::kBin;
using dpuaudit::itest::kSrc;
using dpuaudit::itest::Proc;
using dpuaudit::itest::VerifierProcess;
namespace fs = std::filesystem;

nlohmann::json B64UrlJson(const std::string& part) {
  auto raw = Base64UrlDecode(part);
  EXPECT_TRUE(raw.ok());
  return nlohmann::json::parse(ToString(*raw));
}

// The payload of a compact JWS file.
nlohmann::json Payload(const std::string& jws) {
  const size_t a = jws.find('.'), b = jws.rfind('.');
  return B64UrlJson(jws.substr(a + 1, b - a - 1));
}

std::string ReadText(const std::string& path) {
  auto r = ReadFileLimited(path, 16 << 20);
  EXPECT_TRUE(r.ok()) << path;
  return r.ok() ? ToString(*r) : "";
}

class ReportV2Test : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-v2-XXXXXX";
    dir_ = mkdtemp(tmpl);
    token_file_ = dir_ + "/token";
    ASSERT_TRUE(WriteFileAtomic(token_file_, AsBytes("integration-test-bootstrap-token-42\n"),
                                0600)
                    .ok());
    // A copy of the zero-trust device the test can change.
    device_ = dir_ + "/device";
    key_ = dir_ + "/dpu.key";
    fs::copy(Fixture("bf3-zero-trust"), device_, fs::copy_options::recursive);
    StartVerifier();
    Proc e = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(),
                   "--node-id", "dpu", "--key", key_, "--bootstrap-token-file", token_file_});
    ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  void StartVerifier(const std::string& listen = "127.0.0.1:0") {
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", token_file_};
    for (auto& f : itest::AdminFlags(dir_, &admin_token_file_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err, listen)) << err;
    Proc imported = Exec({kBin + "/dpuaudit", "refvals", "import", itest::kFixtureRefvals,
                          "--verifier", verifier_.url(), "--admin-token-file",
                          admin_token_file_});
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  }

  struct Sent {
    Proc proc;
    std::string jws;
    nlohmann::json payload;
    nlohmann::json reasons;  // the EAR's dpuaudit.reasons
    std::string decision;
  };
  Sent Attest(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {kBin + "/dpuaudit-agent", "attest", "--verifier",
                                     verifier_.url(), "--node-id", "dpu", "--key", key_,
                                     "--device-root", device_, "--json",
                                     "--report-out", dir_ + "/report.jws",
                                     "--ear-out", dir_ + "/ear.jwt"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    Sent s;
    s.proc = Exec(argv);
    EXPECT_EQ(s.proc.exit_code, 0) << s.proc.out << s.proc.err;
    s.jws = ReadText(dir_ + "/report.jws");
    s.payload = Payload(s.jws);
    std::string ear = ReadText(dir_ + "/ear.jwt");
    const size_t a = ear.find('.'), b = ear.rfind('.');
    nlohmann::json claims = B64UrlJson(ear.substr(a + 1, b - a - 1));
    s.reasons = claims["dpuaudit"]["reasons"];
    s.decision = claims["dpuaudit"]["decision"];
    return s;
  }
  // Rule results but the upgrade edge (a node's first report sees its
  // release "first-seen", later ones "unchanged").
  static nlohmann::json WithoutUpgradeEdge(nlohmann::json reasons) {
    nlohmann::json out = nlohmann::json::array();
    for (auto& r : reasons) {
      if (r["rule_id"] != "refval.upgrade_path") out.push_back(r);
    }
    return out;
  }
  static size_t ByDigest(const nlohmann::json& payload) {
    size_t n = 0;
    for (const auto& e : payload["evidence"]) n += e.value("by_digest", false) ? 1 : 0;
    return n;
  }

  std::string dir_, token_file_, admin_token_file_, device_;
  std::string key_;
  VerifierProcess verifier_;
};

TEST_F(ReportV2Test, FullThenByDigestThenChangedEvidence) {
  // --report-format 1: the old format, and no base is kept.
  Sent v1 = Attest({"--report-format", "1"});
  EXPECT_EQ(v1.payload["format"], "dpuaudit-report/1");
  EXPECT_FALSE(fs::exists(key_ + ".evidence-base"));

  // First /2 report: everything in full; accepted, it becomes the base.
  Sent full = Attest();
  EXPECT_EQ(full.payload["format"], "dpuaudit-report/2");
  EXPECT_FALSE(full.payload.contains("evidence_base"));
  EXPECT_EQ(ByDigest(full.payload), 0u);
  EXPECT_EQ(full.decision, "admit");
  struct stat st {};
  ASSERT_EQ(::stat((key_ + ".evidence-base").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // Unchanged device: every item by digest, judged identically.
  Sent small = Attest();
  EXPECT_EQ(small.payload["evidence_base"], Sha256Hex(AsBytes(full.jws)));
  EXPECT_EQ(ByDigest(small.payload), small.payload["evidence"].size());
  EXPECT_GT(small.payload["evidence"].size(), 10u);
  EXPECT_LT(small.jws.size() + 10000, full.jws.size());
  EXPECT_EQ(small.decision, "admit");
  EXPECT_EQ(small.reasons, full.reasons);
  // The same rule results as the /1 report, but for the upgrade edge (the
  // node's first report saw its release "first-seen").
  ASSERT_EQ(small.reasons.size(), v1.reasons.size());
  for (size_t i = 0; i < small.reasons.size(); ++i) {
    if (small.reasons[i]["rule_id"] == "refval.upgrade_path") continue;
    EXPECT_EQ(small.reasons[i], v1.reasons[i]) << i;
  }

  // The host became privileged: that item changed, so everything goes in
  // full (the next base) and the verifier judges the new bytes.
  std::string priv = ReadText(device_ + "/out/mlxprivhost-q.txt");
  priv.replace(priv.find("RESTRICTED"), 10, "PRIVILEGED");
  ASSERT_TRUE(WriteFileAtomic(device_ + "/out/mlxprivhost-q.txt", AsBytes(priv), 0644).ok());
  Sent changed = Attest();
  EXPECT_EQ(ByDigest(changed.payload), 0u);
  EXPECT_FALSE(changed.payload.contains("evidence_base"));
  EXPECT_EQ(changed.decision, "deny");
  bool privileged = false;
  for (const auto& r : changed.reasons) {
    if (r["rule_id"] == "host.privilege_level") {
      // Re-derived from the new bytes (the two reads now disagree).
      privileged = r["verdict"] != "pass" &&
                   r["reason"].get<std::string>().find("mlxprivhost says PRIVILEGED") !=
                       std::string::npos;
    }
  }
  EXPECT_TRUE(privileged) << changed.proc.out;
  // And by digest against that new base again.
  Sent again = Attest();
  EXPECT_EQ(again.payload["evidence_base"], Sha256Hex(AsBytes(changed.jws)));
  EXPECT_EQ(ByDigest(again.payload), again.payload["evidence"].size());
  EXPECT_EQ(again.decision, "deny");
  EXPECT_EQ(again.reasons, changed.reasons);
}

TEST_F(ReportV2Test, UnknownBaseIsResentInFullAndRestartsResolveFromTheStore) {
  Sent full = Attest();
  ASSERT_EQ(full.decision, "admit");
  // The verifier restarted: its cache is empty, its store has the base.
  // (Same address: the agent keeps a base per verifier URL.)
  const std::string url = verifier_.url();
  verifier_.Stop();
  StartVerifier(url.substr(url.find("//") + 2));
  Sent small = Attest();
  EXPECT_EQ(ByDigest(small.payload), small.payload["evidence"].size());
  EXPECT_EQ(small.decision, "admit");
  EXPECT_EQ(WithoutUpgradeEdge(small.reasons), WithoutUpgradeEdge(full.reasons));

  // A base the verifier never accepted (another database, pruned): 409
  // evidence_unknown, then one resend in full with the same nonce.
  nlohmann::json state = nlohmann::json::parse(ReadText(key_ + ".evidence-base"));
  state["report_sha256"] = std::string(64, 'a');
  ASSERT_TRUE(WriteFileAtomic(key_ + ".evidence-base", AsBytes(state.dump()), 0600).ok());
  Sent resent = Attest();
  EXPECT_THAT(resent.proc.err, HasSubstr("resending in full"));
  EXPECT_EQ(ByDigest(resent.payload), 0u);
  EXPECT_EQ(resent.decision, "admit");
  EXPECT_EQ(resent.reasons, small.reasons);
  EXPECT_THAT(ReadText(verifier_.log()), HasSubstr("409"));
  // The new base is the resent report.
  state = nlohmann::json::parse(ReadText(key_ + ".evidence-base"));
  EXPECT_EQ(state["report_sha256"], Sha256Hex(AsBytes(resent.jws)));
}

}  // namespace report_v2_itest
}  // namespace dpuaudit
