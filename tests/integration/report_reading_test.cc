// Issue 16 §5, reading reports: `dpuaudit report show` and `result show`
// over what the real agent and verifier produce: findings grouped fail,
// unknown, pass with observed vs expected, tier and source; the firmware
// and boot-chain tables; the matched releases with `report show --ear`;
// the EAR collateral (unit tests cover "not recorded" for EARs that predate it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;
using itest::ReadAll;
using nlohmann::json;
namespace fs = std::filesystem;

class ReportReadingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-reading-XXXXXX";
    dir_ = mkdtemp(tmpl);
    token_file_ = dir_ + "/token";
    ASSERT_TRUE(WriteFileAtomic(token_file_, AsBytes("integration-test-bootstrap-token-42\n"),
                                0600)
                    .ok());
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", token_file_};
    for (auto& f : itest::AdminFlags(dir_, &admin_token_file_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    jwks_ = itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/jwks.json");
    ASSERT_EQ(itest::ImportFixtureRefvals(verifier_.url(), admin_token_file_).exit_code, 0);
    for (const char* node : {"bf3-zero-trust", "bf3-privileged-host", "bf3-fw-outdated"}) {
      ASSERT_EQ(Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(),
                      "--node-id", node, "--key", dir_ + "/" + node + ".key",
                      "--bootstrap-token-file", token_file_})
                    .exit_code,
                0);
      Proc a = Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(),
                     "--node-id", node, "--key", dir_ + "/" + node + ".key", "--device-root",
                     Fixture(node), "--report-out", dir_ + "/" + node + ".report.jws",
                     "--ear-out", dir_ + "/" + node + ".ear.jwt"});
      ASSERT_EQ(a.exit_code, 0) << a.err;
    }
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string Report(const std::string& n) { return dir_ + "/" + n + ".report.jws"; }
  std::string Ear(const std::string& n) { return dir_ + "/" + n + ".ear.jwt"; }
  std::string dir_, token_file_, admin_token_file_, jwks_;
  itest::VerifierProcess verifier_;
};

// "fail (", "unknown (", "pass (" appear once each, in that order, after
// the header line `header`.
void ExpectGroupsInOrder(const std::string& out, const std::string& header) {
  const size_t h = out.find(header);
  ASSERT_NE(h, std::string::npos) << out;
  const size_t f = out.find("\nfail (", h);
  const size_t u = out.find("\nunknown (", h);
  const size_t p = out.find("\npass (", h);
  ASSERT_NE(f, std::string::npos);
  ASSERT_NE(u, std::string::npos);
  ASSERT_NE(p, std::string::npos);
  EXPECT_LT(f, u);
  EXPECT_LT(u, p);
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    size_t width = 0;
    for (unsigned char c : line) width += (c & 0xC0) != 0x80;
    EXPECT_LE(width, 100u) << line;
  }
}

TEST_F(ReportReadingTest, ReportShowGroupsFindingsAndShowsTheFirmwareAndBootChainTables) {
  Proc show = Exec({kBin + "/dpuaudit", "report", "show", Report("bf3-privileged-host")});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  ExpectGroupsInOrder(show.out, "findings by verdict (observed vs expected, trust tier");
  // The failing finding with observed vs expected, tier and source.
  EXPECT_THAT(show.out, HasSubstr("  host.privilege_level: observed \"PRIVILEGED\", expected "
                                  "\"RESTRICTED\""));
  EXPECT_THAT(show.out, HasSubstr("      tier self-reported, source mlxprivhost"));
  // Firmware table: component, version, digest.
  EXPECT_THAT(show.out, HasSubstr("COMPONENT"));
  EXPECT_THAT(show.out, HasSubstr("v2.2(release):4.9.1-21-gfc25b08d9"));
  EXPECT_THAT(show.out, HasSubstr("boot-stream"));
  // Boot-chain table: stage, digest, integrity, signed/verified.
  EXPECT_THAT(show.out, HasSubstr("STAGE"));
  EXPECT_THAT(show.out, HasSubstr("SIGNED/VERIFIED"));
  EXPECT_THAT(show.out, HasSubstr("not recorded"));
  EXPECT_THAT(show.out, HasSubstr("os:kernel"));

  Proc j = Exec({kBin + "/dpuaudit", "report", "show", "--json", Report("bf3-privileged-host")});
  ASSERT_EQ(j.exit_code, 0);
  if (itest::HaveJsonschema()) EXPECT_EQ(itest::SchemaErrors(dir_, "report-show", j.out), "");
  json doc = json::parse(j.out);
  EXPECT_THAT(doc["groups"]["fail"].dump(), HasSubstr("host.privilege_level"));
  EXPECT_FALSE(doc["groups"]["pass"].empty());
  bool bl31 = false;
  for (const auto& r : doc["boot_chain_table"]) {
    if (r["stage"] == "bl31") {
      bl31 = true;
      EXPECT_EQ(r["integrity"], "crc ok");
      EXPECT_EQ(r["signed"], "not recorded");
      EXPECT_EQ(r["digest"].get<std::string>().substr(0, 7), "sha384:");
    }
  }
  EXPECT_TRUE(bl31);
  EXPECT_EQ(doc["firmware_table"][0]["component"], "atf");
  // The members older consumers read are still there.
  EXPECT_TRUE(doc.contains("findings") && doc.contains("firmware") && doc.contains("boot_chain"));
}

TEST_F(ReportReadingTest, ReportShowWithItsEarNamesTheMatchedReleases) {
  Proc show = Exec({kBin + "/dpuaudit", "report", "show", Report("bf3-zero-trust"), "--ear",
                    Ear("bf3-zero-trust")});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  // Admitted: every refval rule passed, and passing rules carry no reason.
  EXPECT_THAT(show.out, HasSubstr("releases its refval findings matched: not named"));
  EXPECT_THAT(show.out, HasSubstr("refval.arm_firmware  pass  observed active"));
  // The EAR names its collateral (issue 16 §2): the release it matched.
  EXPECT_THAT(show.out, HasSubstr("matched release   bf-bundle-2.9.1-40"));
  EXPECT_THAT(show.out, HasSubstr("reference values  sha256:"));
  // Next to the firmware table: after it, before the evidence.
  EXPECT_LT(show.out.find("COMPONENT"), show.out.find("reference values (EAR"));
  EXPECT_LT(show.out.find("reference values (EAR"), show.out.find("\nevidence ("));
  Proc j = Exec({kBin + "/dpuaudit", "report", "show", "--json", Report("bf3-zero-trust"),
                 "--ear", Ear("bf3-zero-trust")});
  ASSERT_EQ(j.exit_code, 0);
  if (itest::HaveJsonschema()) EXPECT_EQ(itest::SchemaErrors(dir_, "report-show", j.out), "");
  json ear = json::parse(j.out)["ear"];
  EXPECT_EQ(ear["decision"], "admit");
  EXPECT_EQ(ear["collateral"]["recorded"], true);
  EXPECT_THAT(ear["collateral"]["matched"].dump(), HasSubstr("bf-bundle-2.9.1-40"));
  EXPECT_TRUE(ear["releases_in_reasons"].empty());
  // A node on the obsolete release: its reasons name it.
  Proc old = Exec({kBin + "/dpuaudit", "report", "show", "--json", Report("bf3-fw-outdated"),
                   "--ear", Ear("bf3-fw-outdated")});
  ASSERT_EQ(old.exit_code, 0) << old.err;
  EXPECT_THAT(json::parse(old.out)["ear"]["releases_in_reasons"].dump(),
              HasSubstr("bf-bundle-2.9.0-90"));
  Proc old_text = Exec({kBin + "/dpuaudit", "report", "show", Report("bf3-fw-outdated"), "--ear",
                        Ear("bf3-fw-outdated")});
  EXPECT_THAT(old_text.out, HasSubstr("releases its refval findings matched: bf-bundle-2.9.0-90"));
  // Another report's EAR is refused (matched by the report's sha256).
  Proc other = Exec({kBin + "/dpuaudit", "report", "show", Report("bf3-zero-trust"), "--ear",
                     Ear("bf3-privileged-host")});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_THAT(other.err, HasSubstr("is the result of another report"));
  // A report given as --ear: the wrong-kind message.
  Proc kind = Exec({kBin + "/dpuaudit", "report", "show", Report("bf3-zero-trust"), "--ear",
                    Report("bf3-privileged-host")});
  EXPECT_EQ(kind.exit_code, 2);
  EXPECT_THAT(kind.err, HasSubstr("not a result: read it with `dpuaudit report show"));
}

TEST_F(ReportReadingTest, ResultShowGroupsReasonsAndNamesTheCollateral) {
  Proc show = Exec({kBin + "/dpuaudit", "result", "show", Ear("bf3-privileged-host"), "--jwks",
                    jwks_});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  ExpectGroupsInOrder(show.out, "findings by verdict (observed vs expected, trust tier");
  EXPECT_THAT(show.out, HasSubstr("host.privilege_level: observed \"PRIVILEGED\""));
  EXPECT_THAT(show.out, HasSubstr("  reference values  sha256:"));
  Proc j = Exec({kBin + "/dpuaudit", "result", "show", "--json", Ear("bf3-privileged-host"),
                 "--jwks", jwks_});
  ASSERT_EQ(j.exit_code, 0);
  if (itest::HaveJsonschema()) EXPECT_EQ(itest::SchemaErrors(dir_, "result-show", j.out), "");
  json doc = json::parse(j.out);
  EXPECT_EQ(doc["collateral"]["recorded"], true);
  EXPECT_THAT(doc["groups"]["fail"].dump(), HasSubstr("host.privilege_level"));
  // The wrong-kind messages stay.
  Proc r = Exec({kBin + "/dpuaudit", "result", "show", Report("bf3-zero-trust")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("read it with `dpuaudit report show"));
}

}  // namespace
}  // namespace dpuaudit
