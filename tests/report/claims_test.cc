#include "report/claims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "report/report_test_util.h"

namespace dpuaudit::report {
namespace {

using device::Evidence;
using device::EvidenceKind;
using nlohmann::json;
using testing::AcceptAllVerifier;
using testing::Command;
using ::testing::HasSubstr;
using testing::SignRaw;
using testing::StatusHas;
using testing::StatusIs;
using testing::TestKey;


Evidence File(EvidenceKind kind, std::string id, std::string path,
              std::string raw, int exit_code) {
  Evidence e;
  e.id = std::move(id);
  e.kind = kind;
  e.path = std::move(path);
  e.exit_code = exit_code;
  e.raw = ToBytes(raw);
  e.sha256 = Sha256Hex(e.raw);
  return e;
}

// Every field set to a distinct, non-default value.
ReportClaims FullClaims() {
  ReportClaims c;
  c.node_id = "dpu-rack7.slot3";
  c.nonce = Base64UrlEncode(Bytes(32, 0x5a));
  c.issued_at = 1732950000;
  c.device = {"BlueField-3",   "MT2334XZ0AB1",      "900-9D3B6-00CV-AA0",
              "MT_0000000884", "b8:3f:d2:aa:bb:cc", "32.41.1000"};
  c.evidence.push_back(Command(
      "mlxprivhost.query@/dev/mst/mt41692_pciconf0",
      {"mlxprivhost", "-d", "/dev/mst/mt41692_pciconf0", "q"},
      "Host configurations\n level : RESTRICTED\n", "-W- warning\n", 0));
  Evidence timed_out = Command("bfver", {"bfver"}, "partial", "", -1);
  timed_out.timed_out = true;
  timed_out.truncated = true;
  c.evidence.push_back(timed_out);
  c.evidence.push_back(File(EvidenceKind::kFile,
                            "file:/sys/bus/platform/devices/MLNXBF04:00/"
                            "lifecycle_state",
                            "/sys/bus/platform/devices/MLNXBF04:00/"
                            "lifecycle_state",
                            std::string("GA Secured\n\0\x01\xff", 14), 0));
  c.evidence.push_back(File(EvidenceKind::kDir, "dir:/dev/mst", "/dev/mst",
                            "mt41692_pciconf0\nmt41692_pciconf0.1", 0));
  c.findings.push_back({"host.privilege_level", Verdict::kPass, "RESTRICTED",
                        "RESTRICTED",
                        "mlxprivhost -d /dev/mst/mt41692_pciconf0 q", "",
                        "mlxprivhost.query@/dev/mst/mt41692_pciconf0"});
  c.findings.push_back({"boot.lifecycle", Verdict::kFail, "GA Non-Secured",
                        "GA Secured", "/sys/.../lifecycle_state",
                        "device is not secured", ""});
  c.findings.push_back({"fw.version", Verdict::kUnknown, "", "32.41.1000",
                        "bfver", "bfver timed out", "bfver"});
  c.firmware = {{"nic", {{"version", "32.41.1000"}, {"psid", "MT_1"}}},
                {"atf", "v2.2(release)"},
                {"count", 3}};
  c.boot_chain = {{"secure_boot", true}, {"stages", {"atf", "uefi"}}};
  c.tpm = json{{"quote_attest_b64", "AAEC"},
               {"quote_sig_b64", "AwQF"},
               {"ak_name", "000b1234"},
               {"pcrs", {{"sha256", {{"0", "00"}}}}},
               {"eventlog_b64", ""}};
  return c;
}

std::string Serialized() { return SerializeClaims(FullClaims()); }

Status ParseJson(const json& j, const ClaimsLimits& limits = {}) {
  std::string s = j.dump();
  return ParseClaims(AsBytes(s), limits).status();
}

TEST(ClaimsTest, RoundTripOfEveryField) {
  ReportClaims c = FullClaims();
  std::string bytes = SerializeClaims(c);
  auto parsed = ParseClaims(AsBytes(bytes));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->format, "dpuaudit-report/1");
  EXPECT_EQ(parsed->node_id, c.node_id);
  EXPECT_EQ(parsed->nonce, c.nonce);
  EXPECT_EQ(parsed->issued_at, c.issued_at);
  EXPECT_EQ(parsed->device, c.device);
  ASSERT_EQ(parsed->evidence.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(parsed->evidence[i], c.evidence[i]) << i;
  }
  EXPECT_EQ(parsed->evidence[0].stderr_raw, ToBytes("-W- warning\n"));
  EXPECT_TRUE(parsed->evidence[1].timed_out);
  EXPECT_EQ(parsed->evidence[1].exit_code, -1);
  EXPECT_EQ(parsed->evidence[2].raw.size(), 14u);
  EXPECT_EQ(parsed->findings, c.findings);
  EXPECT_EQ(parsed->firmware, c.firmware);
  EXPECT_EQ(parsed->boot_chain, c.boot_chain);
  EXPECT_EQ(parsed->tpm, c.tpm);
  EXPECT_TRUE(*parsed == c);
  // Canonical: re-serialising gives the same bytes.
  EXPECT_EQ(SerializeClaims(*parsed), bytes);
}

TEST(ClaimsTest, RoundTripWithoutTpmAndEmptyCollections) {
  ReportClaims c;
  c.node_id = "n";
  c.nonce = Base64UrlEncode(Bytes(32, 0));
  auto parsed = ParseClaims(AsBytes(SerializeClaims(c)));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_FALSE(parsed->tpm.has_value());
  EXPECT_TRUE(*parsed == c);
}

TEST(ClaimsTest, SerialisationIsTheDocumentedShape) {
  ReportClaims c;
  c.node_id = "n1";
  c.nonce = Base64UrlEncode(Bytes(32, 0));
  c.issued_at = 7;
  c.evidence.push_back(Command("bfver", {"bfver"}, "x", "e", 0));
  c.evidence.push_back(File(EvidenceKind::kFile, "file:/a", "/a", "", 2));
  c.findings.push_back({"f.id", Verdict::kFail, "o", "e", "s", "r", "bfver"});
  EXPECT_EQ(
      SerializeClaims(c),
      R"({"boot_chain":{},)"
      R"("device":{"base_mac":"","fw_version":"","model":"",)"
      R"("part_number":"","psid":"","serial":""},)"
      R"("evidence":[{"argv":["bfver"],"exit_code":0,"id":"bfver",)"
      R"("kind":"command","raw_b64":"eA==",)"
      R"("sha256":"2d711642b726b04401627ca9fbac32f5)"
      R"(c8530fb1903cc4db02258717921a4881",)"
      R"("source":"bfver","stderr_b64":"ZQ==","timed_out":false,)"
      R"("truncated":false},)"
      R"({"exit_code":2,"id":"file:/a","kind":"file","path":"/a",)"
      R"("raw_b64":"",)"
      R"("sha256":"e3b0c44298fc1c149afbf4c8996fb924)"
      R"(27ae41e4649b934ca495991b7852b855",)"
      R"("source":"/a","timed_out":false,"truncated":false}],)"
      R"("findings":[{"evidence_id":"bfver","expected":"e","id":"f.id",)"
      R"("observed":"o","reason":"r","source":"s","verdict":"fail"}],)"
      R"("firmware":{},"format":"dpuaudit-report/1",)"
      R"("issued_at":7,"node_id":"n1",)"
      R"("nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"})");
}

TEST(ClaimsTest, WithoutTpmOmitsOnlyTpm) {
  ReportClaims c = FullClaims();
  json full = json::parse(SerializeClaims(c));
  json no_tpm = json::parse(SerializeClaimsWithoutTpm(c));
  EXPECT_TRUE(full.contains("tpm"));
  EXPECT_FALSE(no_tpm.contains("tpm"));
  full.erase("tpm");
  EXPECT_EQ(full, no_tpm);
}

struct StrictCase {
  const char* name;
  std::function<void(json&)> mutate;
  StatusCode code;
  std::string message;
};

class ClaimsStrictTest : public ::testing::TestWithParam<StrictCase> {};

TEST_P(ClaimsStrictTest, Rejects) {
  json j = json::parse(Serialized());
  ASSERT_TRUE(ParseJson(j).ok());  // the unmutated document is valid
  GetParam().mutate(j);
  EXPECT_THAT(ParseJson(j), StatusIs(GetParam().code, GetParam().message));
}

const std::string kNonce32 = Base64UrlEncode(Bytes(32, 0x5a));

INSTANTIATE_TEST_SUITE_P(
    Rules, ClaimsStrictTest,
    ::testing::Values(
        // --- unknown members, at every level
        StrictCase{"UnknownTop", [](json& j) { j["extra"] = 1; },
                   StatusCode::kInvalidArgument,
                   "the document has unknown member \"extra\"."},
        StrictCase{"UnknownDevice", [](json& j) { j["device"]["imei"] = ""; },
                   StatusCode::kInvalidArgument,
                   "device has unknown member \"imei\"."},
        StrictCase{"UnknownEvidence",
                   [](json& j) { j["evidence"][2]["mode"] = "0644"; },
                   StatusCode::kInvalidArgument,
                   "evidence[2] has unknown member \"mode\"."},
        StrictCase{"UnknownFinding",
                   [](json& j) { j["findings"][1]["severity"] = "high"; },
                   StatusCode::kInvalidArgument,
                   "findings[1] has unknown member \"severity\"."},
        // --- format version
        StrictCase{"FormatV3",
                   [](json& j) { j["format"] = "dpuaudit-report/3"; },
                   StatusCode::kInvalidArgument,
                   "format \"dpuaudit-report/3\" is not supported (expected "
                   "\"dpuaudit-report/1\" or \"dpuaudit-report/2\")."},
        // A v1 document relabelled v2 lacks the v2 members.
        StrictCase{"FormatV2WithV1Items",
                   [](json& j) { j["format"] = "dpuaudit-report/2"; },
                   StatusCode::kInvalidArgument,
                   "evidence[0].by_digest is missing."},
        // v2 members are unknown in v1.
        StrictCase{"V1WithByDigest",
                   [](json& j) { j["evidence"][1]["by_digest"] = false; },
                   StatusCode::kInvalidArgument,
                   "evidence[1] has unknown member \"by_digest\"."},
        StrictCase{"V1WithEvidenceBase",
                   [](json& j) { j["evidence_base"] = std::string(64, 'a'); },
                   StatusCode::kInvalidArgument,
                   "the document has unknown member \"evidence_base\"."},
        StrictCase{"FormatMissing", [](json& j) { j.erase("format"); },
                   StatusCode::kInvalidArgument, "format is missing."},
        StrictCase{"FormatNumber", [](json& j) { j["format"] = 1; },
                   StatusCode::kInvalidArgument,
                   "format must be a string, got an integer."},
        // --- node_id
        StrictCase{"NodeIdEmpty", [](json& j) { j["node_id"] = ""; },
                   StatusCode::kInvalidArgument,
                   "node_id \"\" must be 1-128 characters of "
                   "[A-Za-z0-9._-]."},
        StrictCase{"NodeIdSlash", [](json& j) { j["node_id"] = "../etc"; },
                   StatusCode::kInvalidArgument,
                   "node_id \"../etc\" must be 1-128 characters of "
                   "[A-Za-z0-9._-]."},
        StrictCase{"NodeIdTooLong",
                   [](json& j) { j["node_id"] = std::string(129, 'a'); },
                   StatusCode::kInvalidArgument,
                   "node_id \"" + std::string(64, 'a') +
                       "...\" must be 1-128 characters of [A-Za-z0-9._-]."},
        // --- nonce
        StrictCase{"NonceShort",
                   [](json& j) { j["nonce"] = Base64UrlEncode(Bytes(16, 1)); },
                   StatusCode::kInvalidArgument,
                   "nonce must decode to 32 bytes, got 16."},
        StrictCase{"NonceLong",
                   [](json& j) { j["nonce"] = Base64UrlEncode(Bytes(33, 1)); },
                   StatusCode::kInvalidArgument,
                   "nonce must decode to 32 bytes, got 33."},
        StrictCase{"NoncePadded",
                   [](json& j) { j["nonce"] = Base64Encode(Bytes(32, 0xfb)); },
                   StatusCode::kInvalidArgument,
                   "nonce: base64url: invalid character at offset 0."},
        // --- issued_at
        StrictCase{"IssuedAtFloat", [](json& j) { j["issued_at"] = 1.5; },
                   StatusCode::kInvalidArgument,
                   "issued_at must be an integer, got a float."},
        StrictCase{"IssuedAtString", [](json& j) { j["issued_at"] = "1"; },
                   StatusCode::kInvalidArgument,
                   "issued_at must be an integer, got a string."},
        StrictCase{"IssuedAtNegative", [](json& j) { j["issued_at"] = -1; },
                   StatusCode::kInvalidArgument, "issued_at -1 is negative."},
        StrictCase{"IssuedAtHuge", [](json& j) { j["issued_at"] = UINT64_MAX; },
                   StatusCode::kInvalidArgument,
                   "issued_at is out of the int64 range."},
        // --- device
        StrictCase{"DeviceMissingField",
                   [](json& j) { j["device"].erase("psid"); },
                   StatusCode::kInvalidArgument, "device.psid is missing."},
        StrictCase{"DeviceNotObject", [](json& j) { j["device"] = "bf3"; },
                   StatusCode::kInvalidArgument,
                   "device must be an object, got a string."},
        // --- evidence
        StrictCase{
            "ShaMismatch",
            [](json& j) { j["evidence"][3]["sha256"] = std::string(64, '0'); },
            StatusCode::kInvalidArgument,
            "evidence[3].sha256 does not match raw_b64."},
        StrictCase{"RawTampered",
                   [](json& j) {
                     j["evidence"][0]["raw_b64"] =
                         Base64Encode(AsBytes("level : PRIVILEGED\n"));
                   },
                   StatusCode::kInvalidArgument,
                   "evidence[0].sha256 does not match raw_b64."},
        StrictCase{"ShaUpperCase",
                   [](json& j) {
                     std::string s = j["evidence"][1]["sha256"];
                     for (char& ch : s) ch = static_cast<char>(toupper(ch));
                     j["evidence"][1]["sha256"] = s;
                   },
                   StatusCode::kInvalidArgument,
                   "evidence[1].sha256 must be 64 lower-case hex digits."},
        StrictCase{
            "DuplicateEvidenceId",
            [](json& j) { j["evidence"][3]["id"] = j["evidence"][1]["id"]; },
            StatusCode::kInvalidArgument,
            "evidence[3].id \"bfver\" duplicates evidence[1]."},
        StrictCase{"EmptyEvidenceId",
                   [](json& j) { j["evidence"][0]["id"] = ""; },
                   StatusCode::kInvalidArgument, "evidence[0].id is empty."},
        StrictCase{"BadKind",
                   [](json& j) { j["evidence"][0]["kind"] = "shell"; },
                   StatusCode::kInvalidArgument,
                   "evidence[0].kind \"shell\" is not command|file|dir."},
        StrictCase{"CommandWithPath",
                   [](json& j) { j["evidence"][0]["path"] = "/x"; },
                   StatusCode::kInvalidArgument,
                   "evidence[0].path is not allowed for a command."},
        StrictCase{
            "FileWithArgv",
            [](json& j) { j["evidence"][2]["argv"] = json::array({"cat"}); },
            StatusCode::kInvalidArgument,
            "evidence[2].argv is not allowed for a file."},
        StrictCase{"DirWithStderr",
                   [](json& j) { j["evidence"][3]["stderr_b64"] = "AA=="; },
                   StatusCode::kInvalidArgument,
                   "evidence[3].stderr_b64 is not allowed for a dir."},
        StrictCase{"EmptyArgv",
                   [](json& j) { j["evidence"][1]["argv"] = json::array(); },
                   StatusCode::kInvalidArgument, "evidence[1].argv is empty."},
        StrictCase{"ArgvNotStrings",
                   [](json& j) { j["evidence"][1]["argv"][0] = 7; },
                   StatusCode::kInvalidArgument,
                   "evidence[1].argv[0] must be a string."},
        StrictCase{"RelativePath",
                   [](json& j) {
                     j["evidence"][3]["path"] = "dev/mst";
                     j["evidence"][3]["source"] = "dev/mst";
                   },
                   StatusCode::kInvalidArgument,
                   "evidence[3].path \"dev/mst\" is not an absolute path."},
        StrictCase{
            "SourceMismatch",
            [](json& j) { j["evidence"][0]["source"] = "mlxprivhost -d x q"; },
            StatusCode::kInvalidArgument,
            "evidence[0].source \"mlxprivhost -d x q\" does not match "
            "its argv."},
        StrictCase{"RawNotBase64",
                   [](json& j) { j["evidence"][0]["raw_b64"] = "a_b-"; },
                   StatusCode::kInvalidArgument,
                   "evidence[0].raw_b64: base64: invalid character at offset "
                   "1."},
        StrictCase{
            "RawMissing", [](json& j) { j["evidence"][0].erase("raw_b64"); },
            StatusCode::kInvalidArgument, "evidence[0].raw_b64 is missing."},
        StrictCase{"ExitCodeFloat",
                   [](json& j) { j["evidence"][0]["exit_code"] = 0.0; },
                   StatusCode::kInvalidArgument,
                   "evidence[0].exit_code must be an integer, got a float."},
        StrictCase{
            "ExitCodeHuge",
            [](json& j) { j["evidence"][0]["exit_code"] = int64_t{1} << 40; },
            StatusCode::kInvalidArgument,
            "evidence[0].exit_code 1099511627776 is out of range."},
        StrictCase{"TimedOutString",
                   [](json& j) { j["evidence"][0]["timed_out"] = "false"; },
                   StatusCode::kInvalidArgument,
                   "evidence[0].timed_out must be a boolean, got a string."},
        StrictCase{"EvidenceNotArray", [](json& j) { j["evidence"] = {}; },
                   StatusCode::kInvalidArgument,
                   "evidence must be an array, got null."},
        // --- findings
        StrictCase{"BadVerdict",
                   [](json& j) { j["findings"][1]["verdict"] = "maybe"; },
                   StatusCode::kInvalidArgument,
                   "findings[1].verdict \"maybe\" is not pass|fail|unknown."},
        StrictCase{"VerdictCase",
                   [](json& j) { j["findings"][0]["verdict"] = "PASS"; },
                   StatusCode::kInvalidArgument,
                   "findings[0].verdict \"PASS\" is not pass|fail|unknown."},
        StrictCase{"UnknownWithoutReason",
                   [](json& j) { j["findings"][2]["reason"] = ""; },
                   StatusCode::kInvalidArgument,
                   "findings[2] is unknown but has no reason."},
        StrictCase{"FindingMissingSource",
                   [](json& j) { j["findings"][0].erase("source"); },
                   StatusCode::kInvalidArgument,
                   "findings[0].source is missing."},
        StrictCase{"FindingDanglingEvidence",
                   [](json& j) { j["findings"][0]["evidence_id"] = "nope"; },
                   StatusCode::kInvalidArgument,
                   "findings[0].evidence_id \"nope\" names no evidence "
                   "entry."},
        StrictCase{"FindingObservedNumber",
                   [](json& j) { j["findings"][0]["observed"] = 3; },
                   StatusCode::kInvalidArgument,
                   "findings[0].observed must be a string, got an integer."},
        // --- free-form objects
        StrictCase{"FirmwareArray",
                   [](json& j) { j["firmware"] = json::array(); },
                   StatusCode::kInvalidArgument,
                   "firmware must be an object, got an array."},
        StrictCase{"BootChainMissing", [](json& j) { j.erase("boot_chain"); },
                   StatusCode::kInvalidArgument, "boot_chain is missing."},
        StrictCase{"TpmNull", [](json& j) { j["tpm"] = nullptr; },
                   StatusCode::kInvalidArgument,
                   "tpm must be an object, got null."},
        StrictCase{"NotAnObject", [](json& j) { j = json::array({1}); },
                   StatusCode::kInvalidArgument,
                   "the document must be an object, got an array."}),
    [](const ::testing::TestParamInfo<StrictCase>& p) { return p.param.name; });

TEST(ClaimsTest, RejectsMalformedJson) {
  auto parse = [](std::string_view s) {
    return ParseClaims(AsBytes(s)).status();
  };
  EXPECT_THAT(parse(""), StatusHas(StatusCode::kInvalidArgument,
                                   "report payload is not valid JSON"));
  EXPECT_THAT(parse("{\"format\":"),
              StatusHas(StatusCode::kInvalidArgument,
                        "report payload is not valid JSON"));
  EXPECT_THAT(parse(Serialized() + "x"),
              StatusHas(StatusCode::kInvalidArgument,
                        "report payload is not valid JSON"));
  EXPECT_THAT(parse("{\"node_id\":\"\xc3\x28\"}"),
              StatusHas(StatusCode::kInvalidArgument,
                        "report payload is not valid JSON"));
  std::string deep =
      "{\"firmware\":" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_THAT(parse(deep), StatusIs(StatusCode::kInvalidArgument,
                                    "report payload nests deeper than 64 "
                                    "levels."));
  // A million levels: no stack overflow, a clean error.
  std::string bomb = std::string(1 << 20, '[');
  EXPECT_EQ(parse(bomb).code(), StatusCode::kInvalidArgument);
}

TEST(ClaimsTest, RejectsDuplicateKeysAtAnyLevel) {
  std::string s = Serialized();
  // Top level: a second "node_id" after the first object member.
  std::string top = "{\"node_id\":\"evil\"," + s.substr(1);
  EXPECT_THAT(ParseClaims(AsBytes(top)).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "report payload has duplicate key \"node_id\"."));
  // Inside an evidence entry.
  size_t pos = s.find("\"sha256\":");
  ASSERT_NE(pos, std::string::npos);
  std::string nested = s.substr(0, pos) + "\"sha256\":\"" +
                       std::string(64, '0') + "\"," + s.substr(pos);
  EXPECT_THAT(ParseClaims(AsBytes(nested)).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "report payload has duplicate key \"sha256\"."));
  // Inside the free-form firmware object.
  json j = json::parse(s);
  j["firmware"] = json::object();
  std::string fw = j.dump();
  pos = fw.find("\"firmware\":{}");
  fw.replace(pos, 13, "\"firmware\":{\"a\":1,\"a\":2}");
  EXPECT_THAT(ParseClaims(AsBytes(fw)).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "report payload has duplicate key \"a\"."));
}

TEST(ClaimsTest, Limits) {
  json j = json::parse(Serialized());  // 4 evidence, 3 findings
  ClaimsLimits limits;
  limits.max_evidence = 3;
  EXPECT_THAT(ParseJson(j, limits),
              StatusIs(StatusCode::kResourceExhausted,
                       "evidence has 4 entries, more than the limit of 3."));
  limits = {};
  limits.max_findings = 2;
  EXPECT_THAT(ParseJson(j, limits),
              StatusIs(StatusCode::kResourceExhausted,
                       "findings has 3 entries, more than the limit of 2."));
  limits = {};
  limits.max_raw_bytes = 16;  // evidence[0] raw is 40 bytes
  EXPECT_THAT(ParseJson(j, limits),
              StatusIs(StatusCode::kResourceExhausted,
                       "evidence[0].raw_b64 decodes to more than 16 bytes."));
  limits = {};
  limits.max_total_raw_bytes = 60;  // 40+12, then +7, then +14
  EXPECT_THAT(ParseJson(j, limits),
              StatusIs(StatusCode::kResourceExhausted,
                       "evidence raw and stderr bytes exceed the total limit "
                       "of 60 at evidence[2]."));
  limits = {};
  limits.max_payload_bytes = 100;
  std::string s = j.dump();
  EXPECT_THAT(ParseClaims(AsBytes(s), limits).status(),
              StatusIs(StatusCode::kResourceExhausted,
                       "report payload of " + std::to_string(s.size()) +
                           " bytes exceeds the limit of 100 bytes."));
}

TEST(ClaimsTest, DefaultLimitsAreTheDocumentedOnes) {
  ClaimsLimits l;
  EXPECT_EQ(l.max_evidence, 256u);
  EXPECT_EQ(l.max_raw_bytes, 1u << 20);
  EXPECT_EQ(l.max_total_raw_bytes, 4u << 20);
  // One MiB of raw passes, one byte more does not.
  ReportClaims c = FullClaims();
  c.evidence.resize(1);
  c.findings.clear();
  c.evidence[0].stderr_raw.clear();
  c.evidence[0].raw = Bytes(1u << 20, 'a');
  c.evidence[0].sha256 = Sha256Hex(c.evidence[0].raw);
  EXPECT_TRUE(ParseClaims(AsBytes(SerializeClaims(c))).ok());
  c.evidence[0].raw.push_back('a');
  c.evidence[0].sha256 = Sha256Hex(c.evidence[0].raw);
  EXPECT_THAT(ParseClaims(AsBytes(SerializeClaims(c))).status(),
              StatusIs(StatusCode::kResourceExhausted,
                       "evidence[0].raw_b64 decodes to more than 1048576 "
                       "bytes."));
}

// ------------------------------------------------------------ sign/verify

class ReportJwsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = TestKey::New();
    attacker_ = TestKey::New();
  }
  TestKey agent_, attacker_;
};

TEST_F(ReportJwsTest, SignVerifyRoundTrip) {
  ReportClaims c = FullClaims();
  auto jws = SignReport(c, *agent_.signer, "dpu-rack7.slot3");
  ASSERT_TRUE(jws.ok()) << jws.status().ToString();
  auto peek = PeekUnverifiedHeader(*jws);
  ASSERT_TRUE(peek.ok());
  EXPECT_EQ(peek->typ, "dpuaudit-report+jws");
  EXPECT_EQ(peek->kid, "dpu-rack7.slot3");

  auto v = VerifyReport(*jws, *agent_.verifier);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->claims == c);
  EXPECT_EQ(ToString(v->payload), SerializeClaims(c));
  EXPECT_EQ(v->kid, "dpu-rack7.slot3");
  EXPECT_EQ(v->jws_sha256, Sha256Hex(AsBytes(*jws)));

  // The flattened form of the same report verifies to the same claims.
  auto flat = CompactToFlattened(*jws);
  ASSERT_TRUE(flat.ok());
  auto vf = VerifyReport(*flat, *agent_.verifier);
  ASSERT_TRUE(vf.ok()) << vf.status().ToString();
  EXPECT_TRUE(vf->claims == c);
}

TEST_F(ReportJwsTest, SignReportRefusesInvalidClaims) {
  ReportClaims c = FullClaims();
  c.evidence[1].sha256 = std::string(64, 'f');
  EXPECT_THAT(SignReport(c, *agent_.signer, "k").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "refusing to sign an invalid report: evidence[1]."
                       "sha256 does not match raw_b64."));
  c = FullClaims();
  c.findings[2].reason.clear();
  EXPECT_THAT(SignReport(c, *agent_.signer, "k").status(),
              StatusHas(StatusCode::kInvalidArgument,
                        "findings[2] is unknown but has no reason."));
}

TEST_F(ReportJwsTest, TamperedReportRejected) {
  auto jws = SignReport(FullClaims(), *agent_.signer, "k");
  ASSERT_TRUE(jws.ok());
  // Swap the payload for one claiming a better posture; keep the signature.
  ReportClaims better = FullClaims();
  better.findings[1].verdict = Verdict::kPass;
  std::string forged_payload =
      Base64UrlEncode(AsBytes(SerializeClaims(better)));
  size_t a = jws->find('.'), b = jws->rfind('.');
  std::string forged = jws->substr(0, a + 1) + forged_payload + jws->substr(b);
  EXPECT_THAT(VerifyReport(forged, *agent_.verifier).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
}

TEST_F(ReportJwsTest, ForgedReportNeverReachesTheParser) {
  // Payloads that make ParseClaims fail loudly (or would stress it).
  const std::string poison[] = {
      std::string(1 << 20, '['),
      "{\"format\":\"dpuaudit-report/1\",\"format\":\"x\"}",
      "\xff\xfe not json",
  };
  for (const std::string& payload : poison) {
    std::string forged =
        SignRaw(R"({"alg":"ES256","typ":"dpuaudit-report+jws"})", payload,
                *attacker_.signer);
    // Signed by the attacker: rejected at the signature, not by the parser.
    EXPECT_THAT(VerifyReport(forged, *agent_.verifier).status(),
                StatusIs(StatusCode::kUnauthenticated,
                         "JWS signature does not verify with the pinned "
                         "key."));
    // Control: had the signature passed, the parser would have refused it,
    // so the status above really comes from the signature check.
    AcceptAllVerifier accept_all;
    EXPECT_EQ(VerifyReport(forged, accept_all).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(accept_all.calls(), 1);
  }
}

TEST_F(ReportJwsTest, AlgNoneReportRejected) {
  std::string payload = SerializeClaims(FullClaims());
  std::string jws = Base64UrlEncode(AsBytes(R"({"alg":"none"})")) + "." +
                    Base64UrlEncode(AsBytes(payload)) + "." +
                    Base64UrlEncode(Bytes(64, 0));
  EXPECT_THAT(VerifyReport(jws, *agent_.verifier).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS alg \"none\" is not the pinned \"ES256\"."));
}

TEST_F(ReportJwsTest, WrongTypRejected) {
  std::string payload = SerializeClaims(FullClaims());
  std::string jws =
      SignRaw(R"({"alg":"ES256","typ":"JWT"})", payload, *agent_.signer);
  EXPECT_THAT(VerifyReport(jws, *agent_.verifier).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS typ \"JWT\" is not \"dpuaudit-report+jws\"."));
  jws = SignRaw(R"({"alg":"ES256"})", payload, *agent_.signer);
  EXPECT_THAT(VerifyReport(jws, *agent_.verifier).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS typ \"\" is not \"dpuaudit-report+jws\"."));
  // RFC 7515 §4.1.9: the "application/" prefix and case do not matter.
  jws = SignRaw(R"({"alg":"ES256","typ":"application/DPUAUDIT-report+jws"})",
                payload, *agent_.signer);
  EXPECT_TRUE(VerifyReport(jws, *agent_.verifier).ok());
}

TEST_F(ReportJwsTest, OversizeReportRejected) {
  auto jws = SignReport(FullClaims(), *agent_.signer, "k");
  ASSERT_TRUE(jws.ok());
  EXPECT_THAT(VerifyReport(*jws, *agent_.verifier, 1000).status(),
              StatusHas(StatusCode::kResourceExhausted,
                        "exceeds the limit of 1000 bytes."));
}

TEST(EvidenceHelpersTest, KindNamesAndSources) {
  EXPECT_EQ(EvidenceKindJsonName(EvidenceKind::kCommand), "command");
  EXPECT_EQ(EvidenceKindJsonName(EvidenceKind::kFile), "file");
  EXPECT_EQ(EvidenceKindJsonName(EvidenceKind::kDir), "dir");
  Evidence e = Command("x", {"mokutil", "--sb-state"}, "", "", 0);
  EXPECT_EQ(EvidenceSourceOf(e), "mokutil --sb-state");
  e = File(EvidenceKind::kFile, "file:/etc/mlnx-release", "/etc/mlnx-release",
           "", 0);
  EXPECT_EQ(EvidenceSourceOf(e), "/etc/mlnx-release");
}

}  // namespace
}  // namespace dpuaudit::report
