// dpuaudit-report/2: evidence carried by digest (docs/architecture.md#report-format).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "common/files.h"
#include "report/claims.h"
#include "report/report_test_util.h"

namespace dpuaudit::report {
namespace claims_v2_test {

using device::Evidence;
using device::EvidenceKind;
using nlohmann::json;
using testing::AcceptAllVerifier;
using testing::Command;
using testing::SignRaw;
using testing::StatusIs;
using testing::TestKey;


Evidence File(std::string path, std::string raw) {
  Evidence e;
  e.id = "file:" + path;
  e.kind = EvidenceKind::kFile;
  e.path = std::move(path);
  e.raw = ToBytes(raw);
  e.sha256 = Sha256Hex(e.raw);
  return e;
}

// Four items: a command with stderr, one without, a timed-out one, a file.
ReportClaims FullV2() {
  ReportClaims c;
  c.node_id = "dpu-1";
  c.nonce = Base64UrlEncode(Bytes(32, 0x5a));
  c.issued_at = 1732950000;
  c.device = {"BlueField-3", "MT2334XZ0AB1", "900-9D3B6-00CV-AA0",
              "MT_0000000884", "b8:3f:d2:aa:bb:cc", "32.41.1000"};
  c.evidence.push_back(Command("mlxprivhost.query@/dev/mst/mt41692_pciconf0",
                               {"mlxprivhost", "-d", "/dev/mst/mt41692_pciconf0", "q"},
                               "level : RESTRICTED\n", "-W- warning\n", 0));
  c.evidence.push_back(Command("mst.status", {"mst", "status", "-v"}, "MST modules\n", "", 0));
  Evidence slow = Command("bfver", {"bfver"}, "partial", "", -1);
  slow.timed_out = true;
  slow.truncated = true;
  c.evidence.push_back(slow);
  c.evidence.push_back(File("/etc/mlnx-release", "DOCA_2.9.1\n"));
  c.findings.push_back({"host.privilege_level", Verdict::kPass, "RESTRICTED", "RESTRICTED",
                        "mlxprivhost -d /dev/mst/mt41692_pciconf0 q", "",
                        "mlxprivhost.query@/dev/mst/mt41692_pciconf0"});
  c.format = std::string(kReportFormatV2);
  return c;
}

const std::string kBase = std::string(64, 'b');

std::set<std::string> DigestsOf(const ReportClaims& c) {
  std::set<std::string> d;
  for (const Evidence& e : c.evidence) d.insert(EvidenceItemDigest(e));
  return d;
}

// Every item by digest against kBase.
ReportClaims ByDigestV2() {
  ReportClaims c = FullV2();
  CarryByDigest(c, kBase, DigestsOf(c));
  return c;
}

Status ParseJson(const json& j) {
  std::string s = j.dump();
  return ParseClaims(AsBytes(s)).status();
}

TEST(ClaimsV2Test, FullRoundTripAndShape) {
  ReportClaims c = FullV2();
  CarryByDigest(c, kBase, {});  // nothing held: all full, no base
  EXPECT_TRUE(c.by_digest.empty());
  EXPECT_TRUE(c.evidence_base.empty());
  std::string bytes = SerializeClaims(c);
  json j = json::parse(bytes);
  EXPECT_EQ(j["format"], "dpuaudit-report/2");
  EXPECT_FALSE(j.contains("evidence_base"));
  EXPECT_EQ(j["evidence"][0]["by_digest"], false);
  EXPECT_EQ(j["evidence"][0]["stderr_sha256"], Sha256Hex(AsBytes("-W- warning\n")));
  EXPECT_TRUE(j["evidence"][0].contains("stderr_b64"));
  EXPECT_FALSE(j["evidence"][1].contains("stderr_sha256"));
  EXPECT_FALSE(j["evidence"][3].contains("stderr_sha256"));
  auto parsed = ParseClaims(AsBytes(bytes));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, c);
  EXPECT_TRUE(parsed->evidence_resolved);
  EXPECT_EQ(SerializeClaims(*parsed), bytes);
}

TEST(ClaimsV2Test, ByDigestRoundTripAndShape) {
  ReportClaims c = ByDigestV2();
  ASSERT_EQ(c.by_digest.size(), 4u);
  std::string bytes = SerializeClaims(c);
  json j = json::parse(bytes);
  EXPECT_EQ(j["evidence_base"], kBase);
  for (const auto& e : j["evidence"]) {
    EXPECT_EQ(e["by_digest"], true);
    EXPECT_FALSE(e.contains("raw_b64"));
    EXPECT_FALSE(e.contains("stderr_b64"));
  }
  EXPECT_EQ(j["evidence"][0]["stderr_sha256"], Sha256Hex(AsBytes("-W- warning\n")));
  EXPECT_EQ(j["evidence"][0]["sha256"], Sha256Hex(AsBytes("level : RESTRICTED\n")));
  EXPECT_LT(bytes.size(), SerializeClaims(FullV2()).size());
  auto parsed = ParseClaims(AsBytes(bytes));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_FALSE(parsed->evidence_resolved);
  EXPECT_TRUE(parsed->evidence[0].raw.empty());
  EXPECT_TRUE(parsed->evidence[0].stderr_raw.empty());
  EXPECT_EQ(parsed->evidence_base, kBase);
  EXPECT_EQ(SerializeClaims(*parsed), bytes);  // the signed bytes again
  EXPECT_EQ(SerializeClaimsWithoutTpm(*parsed), SerializeClaimsWithoutTpm(c));
}

TEST(ClaimsV2Test, V1IsUnchanged) {
  ReportClaims c = FullV2();
  c.format = std::string(kReportFormatV1);
  json j = json::parse(SerializeClaims(c));
  EXPECT_FALSE(j["evidence"][0].contains("by_digest"));
  EXPECT_FALSE(j["evidence"][0].contains("stderr_sha256"));
  EXPECT_FALSE(j.contains("evidence_base"));
}

struct StrictCase {
  std::string name;
  std::function<void(json&)> mutate;
  std::string message;
};

class ClaimsV2StrictTest : public ::testing::TestWithParam<StrictCase> {};

TEST_P(ClaimsV2StrictTest, Rejects) {
  // Items 0 and 1 by digest, 2 and 3 full.
  ReportClaims c = FullV2();
  CarryByDigest(c, kBase,
                {EvidenceItemDigest(c.evidence[0]), EvidenceItemDigest(c.evidence[1])});
  ASSERT_EQ(c.by_digest.size(), 2u);
  json j = json::parse(SerializeClaims(c));
  ASSERT_TRUE(ParseJson(j).ok());  // the unmutated document is valid
  GetParam().mutate(j);
  EXPECT_THAT(ParseJson(j), StatusIs(StatusCode::kInvalidArgument, GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Rules, ClaimsV2StrictTest,
    ::testing::Values(
        StrictCase{"ByDigestWithRaw",
                   [](json& j) { j["evidence"][0]["raw_b64"] = ""; },
                   "evidence[0].raw_b64 is not allowed for an item carried by digest."},
        StrictCase{"ByDigestWithStderr",
                   [](json& j) { j["evidence"][0]["stderr_b64"] = "AA=="; },
                   "evidence[0].stderr_b64 is not allowed for an item carried by digest."},
        StrictCase{"FullWithoutRaw", [](json& j) { j["evidence"][2].erase("raw_b64"); },
                   "evidence[2].raw_b64 is missing."},
        StrictCase{"ByDigestMissing", [](json& j) { j["evidence"][2].erase("by_digest"); },
                   "evidence[2].by_digest is missing."},
        StrictCase{"ByDigestNotBool", [](json& j) { j["evidence"][2]["by_digest"] = 1; },
                   "evidence[2].by_digest must be a boolean, got an integer."},
        StrictCase{"ByDigestBadSha",
                   [](json& j) { j["evidence"][1]["sha256"] = std::string(64, 'G'); },
                   "evidence[1].sha256 must be 64 lower-case hex digits."},
        StrictCase{"StderrShaWithoutStderr",
                   [](json& j) { j["evidence"][2]["stderr_sha256"] = std::string(64, 'a'); },
                   "evidence[2].stderr_sha256 needs stderr_b64."},
        StrictCase{"StderrWithoutSha",
                   [](json& j) { j["evidence"][2]["stderr_b64"] = "AA=="; },
                   "evidence[2].stderr_b64 needs stderr_sha256."},
        StrictCase{"StderrShaMismatch",
                   [](json& j) {
                     j["evidence"][2]["stderr_b64"] = "AA==";
                     j["evidence"][2]["stderr_sha256"] = std::string(64, 'a');
                   },
                   "evidence[2].stderr_sha256 does not match stderr_b64."},
        StrictCase{"StderrEmpty",
                   [](json& j) {
                     j["evidence"][2]["stderr_b64"] = "";
                     j["evidence"][2]["stderr_sha256"] = Sha256Hex(Bytes{});
                   },
                   "evidence[2].stderr_b64 is empty (omit it and stderr_sha256)."},
        StrictCase{"StderrShaOnFile",
                   [](json& j) { j["evidence"][3]["stderr_sha256"] = std::string(64, 'a'); },
                   "evidence[3].stderr_sha256 is not allowed for a file."},
        StrictCase{"StderrShaNotHex",
                   [](json& j) { j["evidence"][0]["stderr_sha256"] = "abc"; },
                   "evidence[0].stderr_sha256 must be 64 lower-case hex digits."},
        StrictCase{"RawShaMismatchOnFull",
                   [](json& j) { j["evidence"][2]["sha256"] = std::string(64, 'a'); },
                   "evidence[2].sha256 does not match raw_b64."},
        StrictCase{"BaseMissing", [](json& j) { j.erase("evidence_base"); },
                   "evidence \"mlxprivhost.query@/dev/mst/mt41692_pciconf0\" is carried by "
                   "digest but evidence_base is missing."},
        StrictCase{"BaseNotHex", [](json& j) { j["evidence_base"] = std::string(64, 'B'); },
                   "evidence_base must be 64 lower-case hex digits."},
        StrictCase{"BaseNotString", [](json& j) { j["evidence_base"] = 7; },
                   "evidence_base must be a string, got an integer."},
        StrictCase{"BaseWithoutByDigest",
                   [](json& j) {
                     for (int i : {0, 1}) {
                       j["evidence"][i]["by_digest"] = false;
                     }
                     j["evidence"][1]["raw_b64"] = Base64Encode(ToBytes("MST modules\n"));
                     j["evidence"][0]["raw_b64"] =
                         Base64Encode(ToBytes("level : RESTRICTED\n"));
                     j["evidence"][0]["stderr_b64"] = Base64Encode(ToBytes("-W- warning\n"));
                   },
                   "evidence_base is set but no evidence item is carried by digest."},
        StrictCase{"UnknownItemMember",
                   [](json& j) { j["evidence"][0]["item_sha256"] = std::string(64, 'a'); },
                   "evidence[0] has unknown member \"item_sha256\"."},
        StrictCase{"UnknownTop", [](json& j) { j["held"] = json::array(); },
                   "the document has unknown member \"held\"."}),
    [](const ::testing::TestParamInfo<StrictCase>& p) { return p.param.name; });

TEST(ClaimsV2Test, DuplicateKeysAndDepthAsInV1) {
  std::string s = SerializeClaims(ByDigestV2());
  std::string dup = "{\"evidence_base\":\"" + kBase + "\"," + s.substr(1);
  EXPECT_EQ(ParseClaims(AsBytes(dup)).status().code(), StatusCode::kInvalidArgument);
  // In an evidence item.
  std::string item = s;
  item.replace(item.find("\"by_digest\":true"), 16, "\"by_digest\":true,\"by_digest\":false");
  EXPECT_THAT(ParseClaims(AsBytes(item)).status(),
              testing::StatusHas(StatusCode::kInvalidArgument, "duplicate"));
  std::string deep = s;
  deep.replace(deep.find("\"firmware\":{}"), 13,
               "\"firmware\":{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}");
  EXPECT_THAT(ParseClaims(AsBytes(deep)).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "report payload nests deeper than 64 levels."));
}

// The item digest covers everything the derivation of findings reads.
TEST(ClaimsV2Test, ItemDigestCoversEveryDerivationInput) {
  const Evidence base = FullV2().evidence[0];
  const std::string d = EvidenceItemDigest(base);
  std::vector<std::pair<std::string, std::function<void(Evidence&)>>> changes = {
      {"raw", [](Evidence& e) { e.raw.push_back('x'); e.sha256 = Sha256Hex(e.raw); }},
      {"stderr", [](Evidence& e) { e.stderr_raw.push_back('x'); }},
      {"exit_code", [](Evidence& e) { e.exit_code = 1; }},
      {"timed_out", [](Evidence& e) { e.timed_out = true; }},
      {"truncated", [](Evidence& e) { e.truncated = true; }},
      {"argv", [](Evidence& e) { e.argv.back() = "x"; }},
      {"id", [](Evidence& e) { e.id += "x"; }},
      {"kind", [](Evidence& e) { e.kind = EvidenceKind::kFile; e.path = "/x"; }},
  };
  for (const auto& [what, change] : changes) {
    Evidence e = base;
    change(e);
    EXPECT_NE(EvidenceItemDigest(e), d) << what;
  }
  Evidence file = File("/etc/mlnx-release", "x");
  Evidence other = File("/etc/mlnx-release2", "x");
  other.id = file.id;
  EXPECT_NE(EvidenceItemDigest(file), EvidenceItemDigest(other)) << "path";
}

TEST(ClaimsV2Test, ResolveFillsTheBytesFromTheBase) {
  ReportClaims full = FullV2();
  HeldEvidence held = IndexHeldEvidence(full.evidence);
  auto parsed = ParseClaims(AsBytes(SerializeClaims(ByDigestV2())));
  ASSERT_TRUE(parsed.ok());
  const std::string signed_bytes = SerializeClaims(*parsed);
  EXPECT_TRUE(ResolveEvidence(*parsed, held).empty());
  EXPECT_TRUE(parsed->evidence_resolved);
  EXPECT_EQ(parsed->evidence, full.evidence);
  EXPECT_EQ(SerializeClaims(*parsed), signed_bytes);
}

TEST(ClaimsV2Test, ResolveRefusesAnyDifferenceAndChangesNothing) {
  std::vector<std::pair<std::string, std::function<void(Evidence&)>>> changes = {
      {"raw", [](Evidence& e) { e.raw.push_back('x'); e.sha256 = Sha256Hex(e.raw); }},
      {"stderr", [](Evidence& e) { e.stderr_raw.push_back('x'); }},
      {"exit_code", [](Evidence& e) { e.exit_code = 3; }},
      {"timed_out", [](Evidence& e) { e.timed_out = !e.timed_out; }},
      {"truncated", [](Evidence& e) { e.truncated = !e.truncated; }},
  };
  for (const auto& [what, change] : changes) {
    ReportClaims base = FullV2();
    change(base.evidence[1]);  // the base holds a different mst.status
    HeldEvidence held = IndexHeldEvidence(base.evidence);
    auto parsed = ParseClaims(AsBytes(SerializeClaims(ByDigestV2())));
    ASSERT_TRUE(parsed.ok());
    const ReportClaims before = *parsed;
    EXPECT_THAT(ResolveEvidence(*parsed, held), ::testing::ElementsAre("mst.status")) << what;
    EXPECT_EQ(*parsed, before) << what;  // nothing filled
    EXPECT_FALSE(parsed->evidence_resolved);
  }
  // An item the base does not have at all.
  ReportClaims base = FullV2();
  base.evidence.pop_back();
  auto parsed = ParseClaims(AsBytes(SerializeClaims(ByDigestV2())));
  ASSERT_TRUE(parsed.ok());
  EXPECT_THAT(ResolveEvidence(*parsed, IndexHeldEvidence(base.evidence)),
              ::testing::ElementsAre("file:/etc/mlnx-release"));
}

TEST(ClaimsV2Test, HeldDigestsComeFromTheBytes) {
  // A held item whose sha256 member lies is indexed by its bytes.
  ReportClaims base = FullV2();
  base.evidence[1].sha256 = std::string(64, 'f');
  HeldEvidence held = IndexHeldEvidence(base.evidence);
  EXPECT_EQ(held.items.at("mst.status").digest, EvidenceItemDigest(FullV2().evidence[1]));
}

TEST(ClaimsV2Test, FuzzSeedsParse) {
  for (const char* name : {"v2_full.json", "v2_by_digest.json"}) {
    auto bytes = ReadFileLimited(std::string(DPUAUDIT_SOURCE_DIR) +
                                     "/tests/fuzz/corpus/report_claims/" + name,
                                 1 << 20);
    ASSERT_TRUE(bytes.ok()) << name;
    auto c = ParseClaims(*bytes);
    ASSERT_TRUE(c.ok()) << name << ": " << c.status().ToString();
    EXPECT_EQ(c->format, "dpuaudit-report/2");
    EXPECT_EQ(c->by_digest.size(), std::string(name) == "v2_full.json" ? 0u : 2u) << name;
  }
}

class ClaimsV2JwsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = TestKey::New();
    attacker_ = TestKey::New();
  }
  TestKey agent_, attacker_;
};

TEST_F(ClaimsV2JwsTest, SignVerifyByDigest) {
  auto jws = SignReport(ByDigestV2(), *agent_.signer, "dpu-1");
  ASSERT_TRUE(jws.ok()) << jws.status().ToString();
  auto v = VerifyReport(*jws, *agent_.verifier);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_FALSE(v->claims.evidence_resolved);
  EXPECT_EQ(v->claims.by_digest.size(), 4u);
}

TEST_F(ClaimsV2JwsTest, SignReportRefusesByDigestOutsideV2) {
  ReportClaims c = ByDigestV2();
  c.format = std::string(kReportFormatV1);
  EXPECT_THAT(SignReport(c, *agent_.signer, "dpu-1").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "refusing to sign an invalid report: only dpuaudit-report/2 carries "
                       "evidence by digest."));
  ReportClaims wrong = ByDigestV2();
  wrong.by_digest["mst.status"] = std::string(64, 'a');  // has no stderr
  EXPECT_THAT(SignReport(wrong, *agent_.signer, "dpu-1").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "refusing to sign an invalid report: the stderr digest of "
                       "\"mst.status\" does not match its bytes."));
  ReportClaims no_base = ByDigestV2();
  no_base.evidence_base.clear();
  EXPECT_EQ(SignReport(no_base, *agent_.signer, "dpu-1").status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(ClaimsV2JwsTest, ForgedOrTamperedV2NeverReachesTheParser) {
  std::string payload = SerializeClaims(ByDigestV2());
  std::string forged =
      SignRaw(R"({"alg":"ES256","typ":"dpuaudit-report+jws"})", payload, *attacker_.signer);
  EXPECT_THAT(VerifyReport(forged, *agent_.verifier).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
  // Tampered: a digest swapped in the signed payload.
  auto jws = SignReport(ByDigestV2(), *agent_.signer, "dpu-1");
  ASSERT_TRUE(jws.ok());
  std::string header = jws->substr(0, jws->find('.'));
  std::string sig = jws->substr(jws->rfind('.'));
  std::string tampered_payload = payload;
  tampered_payload.replace(tampered_payload.find(kBase), 64, std::string(64, 'c'));
  std::string tampered = header + "." + Base64UrlEncode(AsBytes(tampered_payload)) + sig;
  EXPECT_EQ(VerifyReport(tampered, *agent_.verifier).status().code(),
            StatusCode::kUnauthenticated);
  // Control: the tampered payload itself would parse.
  AcceptAllVerifier accept_all;
  EXPECT_TRUE(VerifyReport(tampered, accept_all).ok());
}

}  // namespace claims_v2_test
}  // namespace dpuaudit::report
