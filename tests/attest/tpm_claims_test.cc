#include "attest/tpm_claims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

namespace dpuaudit::attest {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

TpmClaims Sample() {
  TpmClaims c;
  c.quote_attest = {0xff, 0x54, 0x43, 0x47, 0x80, 0x18};
  c.quote_sig = {0x00, 0x18, 0x00, 0x0b};
  c.ak_name = Bytes(34, 0xab);
  c.ak_name[0] = 0x00;
  c.ak_name[1] = 0x0b;
  for (uint32_t i = 0; i < 16; ++i) {
    c.pcrs[attest::kTpmAlgSha256][i] = Bytes(32, static_cast<uint8_t>(i));
  }
  c.pcrs[attest::kTpmAlgSha1][7] = Bytes(20, 0x77);
  c.eventlog = ToBytes("\x00\x00\x00\x00 event log");
  return c;
}

TEST(TpmClaimsTest, RoundTrips) {
  TpmClaims c = Sample();
  json j = TpmClaimsJson(c);
  EXPECT_EQ(j["ak_name"], "000b" + HexEncode(Bytes(32, 0xab)));
  EXPECT_EQ(j["pcrs"]["sha1"]["7"], std::string(40, '7'));
  EXPECT_EQ(j["quote_attest_b64"], "/1RDR4AY");
  auto back = ParseTpmClaims(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
}

TEST(TpmClaimsTest, AcceptsAnEmptyEventLogAndOtherBanks) {
  TpmClaims c = Sample();
  c.eventlog.clear();
  c.pcrs.clear();
  c.pcrs[attest::kTpmAlgSha384][23] = Bytes(48, 1);
  c.pcrs[attest::kTpmAlgSha512][0] = Bytes(64, 2);
  c.ak_name = Bytes(50, 0);
  c.ak_name[1] = 0x0c;  // sha384 name
  json j = TpmClaimsJson(c);
  EXPECT_EQ(j["eventlog_b64"], "");
  auto back = ParseTpmClaims(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, c);
}

struct Case {
  std::string label;
  std::function<void(json&)> mutate;
  StatusCode code;
  std::string message;
};

TEST(TpmClaimsTest, RejectsEverythingElseNamingThePath) {
  const std::string hex32(64, 'a');
  std::vector<Case> cases = {
      {"not an object", [](json& j) { j = json::array(); },
       StatusCode::kInvalidArgument, "tpm must be an object, got an array."},
      {"unknown member", [](json& j) { j["extra"] = 1; },
       StatusCode::kInvalidArgument, "tpm has unknown member \"extra\"."},
      {"missing quote", [](json& j) { j.erase("quote_attest_b64"); },
       StatusCode::kInvalidArgument, "tpm.quote_attest_b64 is missing."},
      {"quote not a string", [](json& j) { j["quote_attest_b64"] = 5; },
       StatusCode::kInvalidArgument,
       "tpm.quote_attest_b64 must be a string, got an integer."},
      {"empty quote", [](json& j) { j["quote_attest_b64"] = ""; },
       StatusCode::kInvalidArgument, "tpm.quote_attest_b64 is empty."},
      {"non-canonical base64", [](json& j) { j["quote_attest_b64"] = "/1RDR4A"; },
       StatusCode::kInvalidArgument, "tpm.quote_attest_b64: "},
      {"base64url alphabet", [](json& j) { j["quote_attest_b64"] = "_1RDR4AY"; },
       StatusCode::kInvalidArgument, "tpm.quote_attest_b64: "},
      {"empty signature", [](json& j) { j["quote_sig_b64"] = ""; },
       StatusCode::kInvalidArgument, "tpm.quote_sig_b64 is empty."},
      {"upper-case ak_name",
       [&](json& j) { j["ak_name"] = "000B" + hex32; },
       StatusCode::kInvalidArgument,
       "tpm.ak_name \"000B" + hex32.substr(0, 60) +
           "...\" is not lower-case hex of a TPM name."},
      {"short ak_name", [](json& j) { j["ak_name"] = "00"; },
       StatusCode::kInvalidArgument,
       "tpm.ak_name \"00\" is not lower-case hex of a TPM name."},
      {"ak_name of unknown alg", [&](json& j) { j["ak_name"] = "0099" + hex32; },
       StatusCode::kInvalidArgument,
       "tpm.ak_name nameAlg 0x0099 is not sha1|sha256|sha384|sha512."},
      {"ak_name digest size", [&](json& j) { j["ak_name"] = "0004" + hex32; },
       StatusCode::kInvalidArgument,
       "tpm.ak_name is 34 bytes; a sha1 name is 22."},
      {"pcrs not an object", [](json& j) { j["pcrs"] = json::array(); },
       StatusCode::kInvalidArgument, "tpm.pcrs must be an object, got an array."},
      {"no PCR at all", [](json& j) { j["pcrs"] = json::object(); },
       StatusCode::kInvalidArgument, "tpm.pcrs holds no PCR value."},
      {"unknown bank", [](json& j) { j["pcrs"]["md5"] = {{"0", "00"}}; },
       StatusCode::kInvalidArgument,
       "tpm.pcrs bank \"md5\" is not sha1|sha256|sha384|sha512."},
      {"sm3 bank", [](json& j) { j["pcrs"]["sm3_256"] = {{"0", "00"}}; },
       StatusCode::kInvalidArgument,
       "tpm.pcrs bank \"sm3_256\" is not sha1|sha256|sha384|sha512."},
      {"empty bank", [](json& j) { j["pcrs"]["sha384"] = json::object(); },
       StatusCode::kInvalidArgument, "tpm.pcrs.sha384 has no PCR."},
      {"bank not an object", [](json& j) { j["pcrs"]["sha1"] = "x"; },
       StatusCode::kInvalidArgument, "tpm.pcrs.sha1 must be an object."},
      {"index 24", [&](json& j) { j["pcrs"]["sha256"]["24"] = hex32; },
       StatusCode::kInvalidArgument,
       "tpm.pcrs.sha256[\"24\"] is not a PCR index in [0, 23]."},
      {"leading zero", [&](json& j) { j["pcrs"]["sha256"]["07"] = hex32; },
       StatusCode::kInvalidArgument,
       "tpm.pcrs.sha256[\"07\"] is not a PCR index in [0, 23]."},
      {"signed index", [&](json& j) { j["pcrs"]["sha256"]["+1"] = hex32; },
       StatusCode::kInvalidArgument,
       "tpm.pcrs.sha256[\"+1\"] is not a PCR index in [0, 23]."},
      {"empty index", [&](json& j) { j["pcrs"]["sha256"][""] = hex32; },
       StatusCode::kInvalidArgument,
       "tpm.pcrs.sha256[\"\"] is not a PCR index in [0, 23]."},
      {"value not a string", [](json& j) { j["pcrs"]["sha256"]["3"] = 3; },
       StatusCode::kInvalidArgument, "tpm.pcrs.sha256[\"3\"] must be a string."},
      {"value of sha1 size in sha256",
       [](json& j) { j["pcrs"]["sha256"]["3"] = std::string(40, '0'); },
       StatusCode::kInvalidArgument,
       "tpm.pcrs.sha256[\"3\"] must be 64 lower-case hex digits."},
      {"upper-case value",
       [](json& j) { j["pcrs"]["sha1"]["7"] = std::string(40, 'A'); },
       StatusCode::kInvalidArgument,
       "tpm.pcrs.sha1[\"7\"] must be 40 lower-case hex digits."},
      {"missing eventlog", [](json& j) { j.erase("eventlog_b64"); },
       StatusCode::kInvalidArgument, "tpm.eventlog_b64 is missing."},
      {"eventlog null", [](json& j) { j["eventlog_b64"] = nullptr; },
       StatusCode::kInvalidArgument,
       "tpm.eventlog_b64 must be a string, got null."},
      {"quote too large",
       [](json& j) { j["quote_attest_b64"] = Base64Encode(Bytes(1025, 1)); },
       StatusCode::kResourceExhausted,
       "tpm.quote_attest_b64 decodes to more than 1024 bytes."},
      {"signature too large",
       [](json& j) { j["quote_sig_b64"] = Base64Encode(Bytes(2000, 1)); },
       StatusCode::kResourceExhausted,
       "tpm.quote_sig_b64 decodes to more than 1024 bytes."},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.label);
    json j = TpmClaimsJson(Sample());
    c.mutate(j);
    auto r = ParseTpmClaims(j);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
    EXPECT_THAT(r.status().message(), HasSubstr(c.message));
  }
}

TEST(TpmClaimsTest, EventLogLimitIsConfigurable) {
  TpmClaims c = Sample();
  c.eventlog = Bytes(100, 0x5a);
  TpmClaimsLimits small;
  small.max_eventlog_bytes = 99;
  auto r = ParseTpmClaims(TpmClaimsJson(c), small);
  EXPECT_EQ(r.status(), ResourceExhaustedError(
                            "tpm.eventlog_b64 decodes to more than 99 bytes."));
  small.max_eventlog_bytes = 100;
  EXPECT_TRUE(ParseTpmClaims(TpmClaimsJson(c), small).ok());
}

}  // namespace
}  // namespace dpuaudit::attest
