// `report export-quote` end to end: a synthetic quote inside a signed
// report, exported, then checked by the real tpm2_checkquote (tpm2-tools),
// which shares no code with ours.
#include "apps/cli/quote.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "attest/quote.h"
#include "attest/tpm_test_util.h"
#include "common/crypto.h"
#include "common/files.h"
#include "report/claims.h"
#include "report/jws.h"
#include "attest/tpm_claims.h"
#include "testing/temp_dir.h"

namespace dpuaudit::apps {
namespace {

namespace at = attest::testing;
using ::testing::HasSubstr;

struct Fixture {
  report::ReportClaims claims;
  at::SyntheticQuote quote;
  std::string jws;
};

report::ReportClaims BaseClaims() {
  report::ReportClaims c;
  c.node_id = "dpu-rack7.slot3";
  c.nonce = Base64UrlEncode(Bytes(32, 0x5a));
  c.issued_at = 1732950000;
  c.device = {"BlueField-3", "MT2334XZ0AB1", "900-9D3B6-00CV-AA0",
              "MT_0000000884", "b8:3f:d2:aa:bb:cc", "32.41.1000"};
  return c;
}

// A report whose tpm member carries a quote over sha256:0-15 + sha1:7,
// qualified with the report's own qualifying data (unless `qd` is given).
Fixture MakeReport(std::optional<Bytes> qd = std::nullopt) {
  Fixture f;
  f.claims = BaseClaims();
  Bytes nonce = *Base64UrlDecode(f.claims.nonce);
  Bytes expected = attest::QualifyingData(
      nonce, AsBytes(report::SerializeClaimsWithoutTpm(f.claims)));
  attest::PcrBanks values = {
      {attest::kTpmAlgSha256, at::FakeBank(attest::kTpmAlgSha256)},
      {attest::kTpmAlgSha1, at::FakeBank(attest::kTpmAlgSha1)}};
  std::map<uint16_t, std::set<uint32_t>> sel;
  for (uint32_t i = 0; i < 16; ++i) sel[attest::kTpmAlgSha256].insert(i);
  sel[attest::kTpmAlgSha1] = {7};
  f.quote = at::SyntheticQuote::Build(values, sel, qd.value_or(expected));
  attest::TpmClaims tpm;
  tpm.quote_attest = f.quote.attest;
  tpm.quote_sig = f.quote.signature;
  tpm.ak_name = f.quote.ak_name;
  tpm.pcrs = values;  // all 24 of each bank; only the quoted ones exported
  tpm.eventlog = ToBytes("not a real log");
  f.claims.tpm = attest::TpmClaimsJson(tpm);
  auto key = EcPrivateKey::Generate();
  EXPECT_TRUE(key.ok());
  auto signer = Es256Signer::New(*key);
  EXPECT_TRUE(signer.ok());
  auto jws = report::SignReport(f.claims, **signer, f.claims.node_id);
  EXPECT_TRUE(jws.ok()) << jws.status().ToString();
  f.jws = *jws;
  return f;
}

// The export as `dpuaudit report export-quote` runs it: the report file
// read, then ExportQuote over its text.
StatusOr<QuoteExportResult> Export(const std::string& report, const std::string& out,
                                   const std::string& ak = "") {
  DPA_ASSIGN_OR_RETURN(Bytes text, ReadFileLimited(report, 16u << 20));
  QuoteExport x;
  x.report_name = report;
  x.out_dir = out;
  x.ak_file = ak;
  x.ak_source = ak.empty() ? "" : "--ak " + ak;
  return ExportQuote(ToString(text), x);
}

std::string Trimmed(const Bytes& b) {
  std::string s = ToString(b);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

class ExportQuoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tool_ = at::FindTool("tpm2_checkquote");
  }
  // Runs tpm2_checkquote over the exported files; returns its exit code.
  int CheckQuote(const std::string& out, std::string* log) {
    std::string qd = Trimmed(at::ReadBytes(out + "/qualifying.hex"));
    return at::RunTool({tool_, "-u", out + "/ak.pub.pem", "-m",
                        out + "/quote.msg", "-s", out + "/quote.sig", "-f",
                        out + "/quote.pcrs", "-g", "sha256", "-q", qd},
                       log);
  }
  std::string tool_;
  dpuaudit::testing::TempDir dir_{"export-quote"};
};

TEST_F(ExportQuoteTest, Tpm2CheckquoteAcceptsTheExportAndRejectsATamperedPcr) {
  if (tool_.empty()) GTEST_SKIP() << "tpm2_checkquote (tpm2-tools) is not installed";
  Fixture f = MakeReport();
  at::WriteBytes(dir_ / "report.jws", AsBytes(f.jws));
  at::WriteBytes(dir_ / "ak.tpm2b", f.quote.ak_public);
  std::string out = dir_ / "out";
  auto r = Export(dir_ / "report.jws", out, dir_ / "ak.tpm2b");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->ak_checked);
  EXPECT_EQ(r->node_id, "dpu-rack7.slot3");
  EXPECT_EQ(r->hash_alg, "sha256");
  EXPECT_EQ(r->pcr_selection.dump(),
            R"({"sha1":[7],"sha256":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]})");
  // Every file written is listed with the SHA-256 of its bytes on disk.
  ASSERT_EQ(r->files.size(), 5u);
  for (const QuoteFile& qf : r->files) {
    EXPECT_EQ(qf.path, out + "/" + qf.name);
    EXPECT_EQ(qf.sha256, Sha256Hex(at::ReadBytes(qf.path))) << qf.name;
  }
  const nlohmann::json j = QuoteExportJson(*r);
  EXPECT_EQ(j["qualifying_data"], HexEncode(f.quote.spec.extra_data));
  EXPECT_EQ(j["check_command"][0], "tpm2_checkquote");
  EXPECT_EQ(j["ak"]["source"], "--ak " + (dir_ / "ak.tpm2b"));

  EXPECT_EQ(at::ReadBytes(out + "/quote.msg"), f.quote.attest);
  EXPECT_EQ(at::ReadBytes(out + "/quote.sig"), f.quote.signature);
  EXPECT_EQ(Trimmed(at::ReadBytes(out + "/qualifying.hex")),
            HexEncode(f.quote.spec.extra_data));
  // 17 quoted values: three TPML_DIGEST lists.
  EXPECT_EQ(at::ReadBytes(out + "/quote.pcrs").size(), 132u + 4u + 3u * 532u);

  std::string log;
  EXPECT_EQ(CheckQuote(out, &log), 0) << log;

  // One flipped byte in the first PCR value: tpm2_checkquote must refuse.
  Bytes pcrs = at::ReadBytes(out + "/quote.pcrs");
  pcrs[136 + 4 + 2] ^= 0x01;
  at::WriteBytes(out + "/quote.pcrs", pcrs);
  EXPECT_NE(CheckQuote(out, &log), 0) << log;
}

TEST_F(ExportQuoteTest, APemAkIsCheckedUnderTheDpuauditTemplate) {
  if (tool_.empty()) GTEST_SKIP() << "tpm2_checkquote (tpm2-tools) is not installed";
  Fixture f = MakeReport();
  auto ak = attest::TpmPublic::Decode(f.quote.ak_public);
  ASSERT_TRUE(ak.ok());
  at::WriteBytes(dir_ / "report.jws", AsBytes(f.jws));
  at::WriteBytes(dir_ / "ak.pem", AsBytes(ak->ToPem()));
  std::string out = dir_ / "out";
  auto r = Export(dir_ / "report.jws", out, dir_ / "ak.pem");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string log;
  EXPECT_EQ(CheckQuote(out, &log), 0) << log;
}

TEST_F(ExportQuoteTest, ReadsAFlattenedJws) {
  Fixture f = MakeReport();
  auto flat = report::CompactToFlattened(f.jws);
  ASSERT_TRUE(flat.ok()) << flat.status().ToString();
  at::WriteBytes(dir_ / "report.json", AsBytes(*flat));
  at::WriteBytes(dir_ / "ak.tpm2b", f.quote.ak_public);
  std::string out = dir_ / "out";
  auto r = Export(dir_ / "report.json", out, dir_ / "ak.tpm2b");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(at::ReadBytes(out + "/quote.msg"), f.quote.attest);
  EXPECT_TRUE(std::filesystem::exists(out + "/ak.pub.pem"));
}

TEST_F(ExportQuoteTest, WithoutAnAkWritesEverythingElse) {
  Fixture f = MakeReport();
  at::WriteBytes(dir_ / "report.jws", AsBytes(f.jws));
  std::string out = dir_ / "out";
  auto r = Export(dir_ / "report.jws", out);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(std::filesystem::exists(out + "/quote.msg"));
  EXPECT_TRUE(std::filesystem::exists(out + "/quote.pcrs"));
  EXPECT_FALSE(std::filesystem::exists(out + "/ak.pub.pem"));
  EXPECT_FALSE(r->ak_checked);
  EXPECT_EQ(r->files.size(), 4u);
  // Without the AK, tpm2_checkquote cannot be run: no command is offered.
  EXPECT_TRUE(QuoteExportJson(*r)["check_command"].is_null());
  EXPECT_THAT(QuoteExportText(*r), HasSubstr("ak.pub.pem not written"));
}

TEST_F(ExportQuoteTest, RefusesAnAkWhoseNameIsNotTheReported) {
  Fixture f = MakeReport();
  at::WriteBytes(dir_ / "report.jws", AsBytes(f.jws));
  at::TestKey other = at::TestKey::EccP256();
  at::WriteBytes(dir_ / "other.tpm2b",
                 at::PublicBlob(other, at::AkTemplate(other)));
  std::string out = dir_ / "out";
  auto r = Export(dir_ / "report.jws", out, dir_ / "other.tpm2b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("but the report's tpm.ak_name is " +
                                              HexEncode(f.quote.ak_name)));
  EXPECT_FALSE(std::filesystem::exists(out + "/ak.pub.pem"));
  EXPECT_FALSE(std::filesystem::exists(out + "/quote.msg"));

  at::WriteBytes(dir_ / "junk.bin", AsBytes("junk"));
  auto junk = Export(dir_ / "report.jws", out, dir_ / "junk.bin");
  ASSERT_FALSE(junk.ok());
  EXPECT_THAT(junk.status().message(), HasSubstr(dir_ / "junk.bin"));
  EXPECT_FALSE(Export(dir_ / "report.jws", out, dir_ / "missing").ok());
}

TEST_F(ExportQuoteTest, FailsOnReportsWithoutAUsableQuote) {
  // No tpm member at all.
  report::ReportClaims c = BaseClaims();
  auto key = EcPrivateKey::Generate();
  ASSERT_TRUE(key.ok());
  auto signer = Es256Signer::New(*key);
  ASSERT_TRUE(signer.ok());
  auto jws = report::SignReport(c, **signer, "n");
  ASSERT_TRUE(jws.ok());
  at::WriteBytes(dir_ / "no-tpm.jws", AsBytes(*jws));
  auto no_tpm = Export(dir_ / "no-tpm.jws", dir_ / "out");
  ASSERT_FALSE(no_tpm.ok());
  EXPECT_THAT(no_tpm.status().message(),
              HasSubstr((dir_ / "no-tpm.jws") + " has no \"tpm\" member"));

  at::WriteBytes(dir_ / "garbage.jws", AsBytes("not a jws"));
  auto garbage = Export(dir_ / "garbage.jws", dir_ / "out");
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), HasSubstr(dir_ / "garbage.jws"));
  EXPECT_FALSE(Export(dir_ / "absent.jws", dir_ / "out").ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "out"));
}

// The quote carries the qualifying data of other claims (e.g. a replayed
// quote): the export still works, and tpm2_checkquote catches it with -q.
TEST_F(ExportQuoteTest, Tpm2CheckquoteCatchesAQuoteOfOtherClaims) {
  if (tool_.empty()) GTEST_SKIP() << "tpm2_checkquote (tpm2-tools) is not installed";
  Fixture f = MakeReport(Bytes(32, 0x01));
  at::WriteBytes(dir_ / "report.jws", AsBytes(f.jws));
  at::WriteBytes(dir_ / "ak.tpm2b", f.quote.ak_public);
  std::string out = dir_ / "out";
  ASSERT_TRUE(Export(dir_ / "report.jws", out, dir_ / "ak.tpm2b").ok());
  std::string log;
  EXPECT_NE(CheckQuote(out, &log), 0) << log;
}

}  // namespace
}  // namespace dpuaudit::apps
