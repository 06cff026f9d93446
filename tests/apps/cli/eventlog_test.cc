// apps/cli/eventlog.h: `dpuaudit eventlog FILE [--json]` on the
// project's simulated BlueField-3 fTPM boot log.
#include "apps/cli/eventlog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "testing/temp_dir.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;

const std::string kLog =
    DPUAUDIT_SOURCE_DIR "/tests/fixtures/eventlogs/bf3-ftpm-boot.bin";
const std::string kExpected = DPUAUDIT_SOURCE_DIR
    "/tests/fixtures/eventlogs/bf3-ftpm-boot.expected-pcrs.json";

struct CliRun {
  int code;
  std::string out, err;
};

CliRun Eventlog(const std::string& file, bool json) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = EventlogCommand(file, json);
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  return {code, out, err};
}

TEST(CliEventlogTest, JsonPcrsMatchTheExpectedValues) {
  CliRun r = Eventlog(kLog, /*json=*/true);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out.substr(0, 200);
  std::ifstream in(kExpected);
  nlohmann::json expected = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(expected.is_discarded());
  EXPECT_EQ(j["format"], "crypto-agile");
  EXPECT_EQ(j["pcrs"], expected["pcrs"]);
  EXPECT_EQ(j["pcrs"]["sha256"].size(), 10u);
  ASSERT_EQ(j["events"].size(), 31u);
  const nlohmann::json& shim = j["events"][22];
  EXPECT_EQ(shim["type"], "EV_EFI_BOOT_SERVICES_APPLICATION");
  EXPECT_EQ(shim["pcr"], 4);
  EXPECT_THAT(shim["description"].get<std::string>(),
              HasSubstr("\\EFI\\ubuntu\\shimaa64.efi"));
  EXPECT_EQ(shim["digests"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(shim["digests"]["sha1"].get<std::string>().size(), 40u);
}

TEST(CliEventlogTest, TextListsEventsAndReplayedPcrs) {
  CliRun r = Eventlog(kLog, /*json=*/false);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::StartsWith(
                         "format: crypto-agile (sha256, sha1), 31 events\n"
                         "startup locality: 0\n"));
  EXPECT_THAT(r.out, HasSubstr("EV_EFI_VARIABLE_DRIVER_CONFIG"));
  EXPECT_THAT(r.out, HasSubstr("SecureBoot = 1"));
  EXPECT_THAT(r.out, HasSubstr("Boot0000: ubuntu0"));
  std::ifstream in(kExpected);
  nlohmann::json expected = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(expected.is_discarded());
  EXPECT_THAT(
      r.out,
      HasSubstr("\nsha256:\n   0: " +
                expected["pcrs"]["sha256"]["0"].get<std::string>() + "\n"));
  EXPECT_THAT(
      r.out,
      HasSubstr("\nsha1:\n   0: " +
                expected["pcrs"]["sha1"]["0"].get<std::string>() + "\n"));
  EXPECT_THAT(
      r.out,
      HasSubstr("   9: " + expected["pcrs"]["sha256"]["9"].get<std::string>() +
                "\n"));
}

TEST(CliEventlogTest, UnreadableAndUnparseableFilesExit2WithTheReason) {
  dpuaudit::testing::TempDir dir;
  CliRun missing = Eventlog(dir / "absent.bin", false);
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.out, "");
  EXPECT_THAT(missing.err, HasSubstr("absent.bin"));

  const std::string garbage = dir / "garbage.bin";
  // pcrIndex = "not " read as a little-endian u32.
  std::ofstream(garbage, std::ios::binary) << "not an event log";
  CliRun bad = Eventlog(garbage, true);
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err, "dpuaudit: " + garbage +
                         ": event 0 at offset 0x0: PCR index 544501614 out of "
                         "range [0, 23].\n");

  const std::string empty = dir / "empty.bin";
  std::ofstream(empty, std::ios::binary).flush();
  CliRun none = Eventlog(empty, false);
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err, "dpuaudit: " + empty + ": the event log is empty.\n");
}

}  // namespace
}  // namespace dpuaudit::apps
