// `mlxbf-bootctl` parsing, boot-partition measurement over fake and recorded
// devices, and the strict JSON form (attest/boot_partitions.h).
#include "firmware/boot_partitions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cctype>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "testing/device_test_util.h"
#include "testing/fake_device_source.h"

namespace dpuaudit::firmware {
namespace {

using ::dpuaudit::testing::FakeDeviceSource;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr char kBoot0[] = "/dev/mmcblk0boot0";
constexpr char kBoot1[] = "/dev/mmcblk0boot1";

// `sudo mlxbf-bootctl` on a BlueField, from a public DPU cheat sheet
// (quoted in BLUEFIELD.md §4.3; code index id 35363144354).
constexpr std::string_view kCheatSheetBootctl =
    "primary: /dev/mmcblk0boot1\n"
    "backup: /dev/mmcblk0boot0\n"
    "boot-bus-width: x8\n"
    "reset to x1 after reboot: FALSE\n"
    "watchdog-swap: disabled\n"
    "lifecycle state: GA Secured\n"
    "secure boot key free slots: 3\n";

// `mlxbf-bootctl` as mocked in SONiC's sonic_platform watchdog test (a newer
// version with the boot watchdog lines; quoted in BLUEFIELD.md §4.3).
constexpr std::string_view kSonicBootctl =
    "primary: /dev/mmcblk0boot0\n"
    "backup: /dev/mmcblk0boot1\n"
    "boot-bus-width: x8\n"
    "reset to x1 after reboot: FALSE\n"
    "boot watchdog interval: 0\n"
    "boot watchdog mode: disabled\n"
    "watchdog-swap: disabled\n"
    "lifecycle state: Secured (development)\n"
    "secure boot key free slots: 3\n";

std::string Sha384Hex(ByteView data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(
      EVP_Digest(data.data(), data.size(), md, &len, EVP_sha384(), nullptr), 1);
  return HexEncode(ByteView(md, len));
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

TEST(ParseMlxbfBootctlTest, CheatSheet) {
  auto got = ParseMlxbfBootctl(kCheatSheetBootctl);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->primary, kBoot1);
  EXPECT_EQ(got->backup, kBoot0);
  EXPECT_EQ(got->lifecycle_state, "GA Secured");
  EXPECT_EQ(got->other, (Pairs{{"boot-bus-width", "x8"},
                               {"reset to x1 after reboot", "FALSE"},
                               {"watchdog-swap", "disabled"},
                               {"secure boot key free slots", "3"}}));
}

TEST(ParseMlxbfBootctlTest, SonicWithWatchdogLines) {
  auto got = ParseMlxbfBootctl(kSonicBootctl);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->primary, kBoot0);
  EXPECT_EQ(got->backup, kBoot1);
  EXPECT_EQ(got->lifecycle_state, "Secured (development)");
  EXPECT_EQ(got->other, (Pairs{{"boot-bus-width", "x8"},
                               {"reset to x1 after reboot", "FALSE"},
                               {"boot watchdog interval", "0"},
                               {"boot watchdog mode", "disabled"},
                               {"watchdog-swap", "disabled"},
                               {"secure boot key free slots", "3"}}));
}

TEST(ParseMlxbfBootctlTest, Rejects) {
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"backup: /dev/mmcblk0boot0\n",
       "mlxbf-bootctl output: no 'primary' line."},
      {"primary: /dev/mmcblk0boot0\n",
       "mlxbf-bootctl output: no 'backup' line."},
      {"primary: /dev/mmcblk0boot0\nbackup: /dev/mmcblk0boot0\n",
       "mlxbf-bootctl output: primary and backup are both /dev/mmcblk0boot0."},
      {"primary: /dev/sda\nbackup: /dev/mmcblk0boot0\n",
       "mlxbf-bootctl output line 1: 'primary' is '/dev/sda', expected "
       "/dev/mmcblk0boot0 or /dev/mmcblk0boot1."},
      {"primary: /dev/mmcblk0boot1\nbackup: /dev/mmcblk0boot0\n"
       "primary: /dev/mmcblk0boot0\n",
       "mlxbf-bootctl output line 3: 'primary' repeated."},
      {std::string(kCheatSheetBootctl) + "watchdog-swap: enabled\n",
       "mlxbf-bootctl output line 8: 'watchdog-swap' repeated."},
      {"primary: /dev/mmcblk0boot1\nbackup /dev/mmcblk0boot0\n",
       "mlxbf-bootctl output line 2: expected 'key: value', got 'backup "
       "/dev/mmcblk0boot0'."},
      {"primary:/dev/mmcblk0boot1\n",
       "mlxbf-bootctl output line 1: expected 'key: value', got "
       "'primary:/dev/mmcblk0boot1'."},
      {": x\n", "mlxbf-bootctl output line 1: empty key in ': x'."},
      {"", "mlxbf-bootctl output: no 'primary' line."},
  };
  for (const Case& c : cases) {
    auto got = ParseMlxbfBootctl(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_EQ(got.status().message(), c.message) << c.text;
  }
  auto nul = ParseMlxbfBootctl(std::string_view("primary: a\0b\n", 13));
  EXPECT_EQ(nul.status().code(), StatusCode::kInvalidArgument);
}

// A boot partition as the eMMC holds it: a boot stream, then fill.
Bytes Partition(const std::vector<std::pair<uint8_t, Bytes>>& images,
                size_t size, uint8_t fill) {
  Bytes p = bluefield::BuildBfb(images);
  if (p.size() < size) p.resize(size, fill);
  return p;
}

Bytes Boot0() {
  return Partition({{6, ToBytes("bl2 certificate")},
                    {1, ToBytes("bl2 binary")},
                    {3, ToBytes("bl31 binary!")}},
                   64 * 1024, 0xff);
}

Bytes Boot1() {
  return Partition({{6, ToBytes("bl2 certificate v2")},
                    {1, ToBytes("bl2 binary v2")},
                    {5, ToBytes("uefi")}},
                   64 * 1024, 0x00);
}

FakeDeviceSource& WithPartitions(FakeDeviceSource& f) {
  return f.File(kBoot0, ToString(Boot0())).File(kBoot1, ToString(Boot1()));
}

TEST(MeasureBootPartitionsTest, PrimaryIsBoot1FromCheatSheet) {
  FakeDeviceSource f;
  WithPartitions(f).Command(device::MlxbfBootctlArgv(), kCheatSheetBootctl);
  BootPartitions p = MeasureBootPartitions(f);
  EXPECT_TRUE(p.bootctl_status.ok()) << p.bootctl_status.ToString();
  EXPECT_EQ(p.bootctl_evidence_id,
            device::EvidenceIdForCommand({"mlxbf-bootctl"}));
  EXPECT_EQ(p.primary, kBoot1);
  ASSERT_EQ(p.partitions.size(), 2u);
  ASSERT_NE(p.Primary(), nullptr);
  EXPECT_EQ(p.Primary(), &p.partitions[1]);

  const PartitionMeasurement& b0 = p.partitions[0];
  EXPECT_EQ(b0.path, kBoot0);
  EXPECT_TRUE(b0.status.ok()) << b0.status.ToString();
  EXPECT_EQ(b0.size, 64u * 1024);
  EXPECT_EQ(b0.sha256, Sha256Hex(Boot0()));
  ASSERT_TRUE(b0.layout.has_value());
  ASSERT_EQ(b0.layout->images.size(), 3u);
  EXPECT_EQ(b0.layout->images[2].name, "bl31");
  EXPECT_EQ(b0.layout->trailing, bluefield::BfbTrailing::kPadding);
  EXPECT_EQ(b0.layout->total_bytes, b0.size);

  const PartitionMeasurement& b1 = p.partitions[1];
  EXPECT_EQ(b1.path, kBoot1);
  EXPECT_EQ(b1.sha256, Sha256Hex(Boot1()));
  ASSERT_TRUE(b1.layout.has_value());
  EXPECT_EQ(b1.layout->images[2].name, "bl33");
  EXPECT_NE(b1.sha256, b0.sha256);
}

TEST(MeasureBootPartitionsTest, PrimaryIsBoot0FromSonic) {
  FakeDeviceSource f;
  WithPartitions(f).Command(device::MlxbfBootctlArgv(), kSonicBootctl);
  BootPartitions p = MeasureBootPartitions(f);
  EXPECT_TRUE(p.bootctl_status.ok());
  EXPECT_EQ(p.primary, kBoot0);
  ASSERT_NE(p.Primary(), nullptr);
  EXPECT_EQ(p.Primary()->path, kBoot0);
  EXPECT_EQ(p.Primary()->sha256, Sha256Hex(Boot0()));
}

TEST(MeasureBootPartitionsTest, MissingPartition) {
  FakeDeviceSource f;
  f.File(kBoot0, ToString(Boot0()))
      .Command(device::MlxbfBootctlArgv(), kCheatSheetBootctl);
  BootPartitions p = MeasureBootPartitions(f);
  ASSERT_EQ(p.partitions.size(), 2u);
  EXPECT_TRUE(p.partitions[0].status.ok());
  const PartitionMeasurement& b1 = p.partitions[1];
  EXPECT_EQ(b1.status.code(), StatusCode::kNotFound);
  EXPECT_EQ(b1.status.message(), "/dev/mmcblk0boot1 not found.");
  EXPECT_EQ(b1.size, 0u);
  EXPECT_EQ(b1.sha256, "");
  EXPECT_FALSE(b1.layout.has_value());
  // The primary is known but was not measured.
  EXPECT_EQ(p.primary, kBoot1);
  EXPECT_EQ(p.Primary(), nullptr);
}

TEST(MeasureBootPartitionsTest, GarbagePartitionIsStillHashedWhole) {
  Bytes garbage(48 * 1024);
  for (size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<uint8_t>(i * 37 + 11);
  }
  FakeDeviceSource f;
  f.File(kBoot0, ToString(Boot0()))
      .File(kBoot1, ToString(garbage))
      .Command(device::MlxbfBootctlArgv(), kCheatSheetBootctl);
  BootPartitions p = MeasureBootPartitions(f);
  const PartitionMeasurement& b1 = p.partitions[1];
  EXPECT_EQ(b1.status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b1.status.message(),
            "/dev/mmcblk0boot1: BFB image 0 at offset 0x0: bad magic "
            "0x7a55300b (expected 0x13026642).");
  EXPECT_EQ(b1.size, garbage.size());
  EXPECT_EQ(b1.sha256, Sha256Hex(garbage));
  EXPECT_FALSE(b1.layout.has_value());
  EXPECT_EQ(p.Primary(), nullptr);

  // An erased partition (all 0xFF) holds no stream either.
  FakeDeviceSource erased;
  erased.File(kBoot0, std::string(4096, '\xff'));
  BootPartitions e = MeasureBootPartitions(erased);
  EXPECT_EQ(e.partitions[0].status.message(),
            "/dev/mmcblk0boot0: BFB image 0 at offset 0x0: bad magic "
            "0xffffffff (expected 0x13026642).");
  EXPECT_EQ(e.partitions[0].sha256, Sha256Hex(Bytes(4096, 0xff)));
}

TEST(MeasureBootPartitionsTest, MissingBootctl) {
  FakeDeviceSource f;  // mlxbf-bootctl not installed: exit 127
  WithPartitions(f);
  BootPartitions p = MeasureBootPartitions(f);
  EXPECT_EQ(f.runs(device::MlxbfBootctlArgv()), 1);
  EXPECT_EQ(p.bootctl_status.code(), StatusCode::kNotFound);
  EXPECT_EQ(p.bootctl_status.message(),
            "`mlxbf-bootctl` is not installed (exit 127)");
  EXPECT_EQ(p.primary, "");
  EXPECT_EQ(p.Primary(), nullptr);
  // The partitions are measured all the same.
  EXPECT_TRUE(p.partitions[0].status.ok());
  EXPECT_TRUE(p.partitions[1].status.ok());
}

TEST(MeasureBootPartitionsTest, BootctlFailuresGiveAReason) {
  device::CommandResult failed;
  failed.exit_code = 1;
  failed.stderr_bytes = ToBytes("mlxbf-bootctl: cannot open /dev/mmcblk0\n");
  FakeDeviceSource f;
  f.Result(device::MlxbfBootctlArgv(), failed);
  BootPartitions p = MeasureBootPartitions(f);
  EXPECT_EQ(p.bootctl_status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(p.bootctl_status.message(),
            "`mlxbf-bootctl` exited with status 1: mlxbf-bootctl: cannot open "
            "/dev/mmcblk0");

  FakeDeviceSource g;
  g.Command(device::MlxbfBootctlArgv(), "primary: /dev/sdb\n");
  BootPartitions q = MeasureBootPartitions(g);
  EXPECT_EQ(q.bootctl_status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(q.bootctl_status.message(), HasSubstr("'/dev/sdb'"));
  EXPECT_EQ(q.primary, "");
}

// Serves the partitions only as streams, counting the bytes read: proves
// one pass over each partition and that nothing is read whole.
class StreamOnlySource final : public device::DeviceSource {
 public:
  StatusOr<Bytes> ReadFile(const std::string& path, size_t) const override {
    ADD_FAILURE() << "partition read whole: " << path;
    return NotFoundError(path + " not found.");
  }
  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override {
    return NotFoundError(path + " not found.");
  }
  StatusOr<device::CommandResult> Run(
      const std::vector<std::string>& argv,
      const device::CommandOptions&) const override {
    device::CommandResult r;
    if (argv == device::MlxbfBootctlArgv()) {
      r.exit_code = 0;
      r.stdout_bytes = ToBytes(kSonicBootctl);
    }
    return r;
  }
  std::string Describe() const override { return "stream-only"; }

  StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const override {
    ++opens_;
    Bytes data = path == kBoot0 ? Boot0() : Boot1();
    return std::unique_ptr<ByteStream>(
        std::make_unique<Counting>(NewMemoryByteStream(data, path), &read_));
  }
  int opens() const { return opens_; }
  uint64_t bytes_read() const { return read_; }

 private:
  class Counting final : public ByteStream {
   public:
    Counting(std::unique_ptr<ByteStream> in, uint64_t* read)
        : in_(std::move(in)), read_(read) {}
    StatusOr<size_t> Read(uint8_t* out, size_t max) override {
      auto n = in_->Read(out, max);
      if (n.ok()) *read_ += *n;
      return n;
    }
    std::string Name() const override { return in_->Name(); }

   private:
    std::unique_ptr<ByteStream> in_;
    uint64_t* read_;
  };
  mutable int opens_ = 0;
  mutable uint64_t read_ = 0;
};

TEST(MeasureBootPartitionsTest, OnePassPerPartition) {
  StreamOnlySource s;
  BootPartitions p = MeasureBootPartitions(s);
  EXPECT_EQ(s.opens(), 2);
  EXPECT_EQ(s.bytes_read(), Boot0().size() + Boot1().size());
  ASSERT_NE(p.Primary(), nullptr);
  EXPECT_EQ(p.Primary()->sha256, Sha256Hex(Boot0()));
}

TEST(MeasureBootPartitionsTest, RecordedDevice) {
  device::testing::TempDir dir;
  // A 2 MiB boot1 partition (larger than the parser's buffer).
  Bytes boot1 = Partition({{6, ToBytes("cert")}, {5, Bytes(1536 * 1024, 0x5a)}},
                          2 << 20, 0xff);
  device::testing::WriteFile(dir / "fs/dev/mmcblk0boot0", ToString(Boot0()));
  device::testing::WriteFile(dir / "fs/dev/mmcblk0boot1", ToString(boot1));
  device::testing::WriteFile(dir / "out/bootctl.txt", kCheatSheetBootctl);
  device::testing::WriteFile(dir / "commands.json",
                             R"({"commands": [{"argv": ["mlxbf-bootctl"],
                        "stdout": "out/bootctl.txt", "exit_code": 0}]})");
  auto source = device::NewRecordedDeviceSource(dir.path());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  BootPartitions p = MeasureBootPartitions(**source);
  EXPECT_TRUE(p.bootctl_status.ok()) << p.bootctl_status.ToString();
  ASSERT_NE(p.Primary(), nullptr);
  EXPECT_EQ(p.Primary()->path, kBoot1);
  EXPECT_EQ(p.Primary()->size, boot1.size());
  EXPECT_EQ(p.Primary()->sha256, Sha256Hex(boot1));
  EXPECT_EQ(p.Primary()->layout->images[1].name, "bl33");
  EXPECT_EQ(p.Primary()->layout->images[1].sha384,
            Sha384Hex(Bytes(1536 * 1024, 0x5a)));
  EXPECT_EQ(p.partitions[0].sha256, Sha256Hex(Boot0()));
}

// ---- JSON ----

BootPartitions Measured(std::string_view bootctl, bool boot1_garbage) {
  FakeDeviceSource f;
  f.File(kBoot0, ToString(Boot0()))
      .File(kBoot1, boot1_garbage ? std::string(100, 'x') : ToString(Boot1()));
  if (!bootctl.empty()) f.Command(device::MlxbfBootctlArgv(), bootctl);
  return MeasureBootPartitions(f);
}

TEST(BootPartitionsJsonTest, RoundTrip) {
  BootPartitions p = Measured(kSonicBootctl, /*boot1_garbage=*/true);
  json j = BootPartitionsJson(p);
  EXPECT_EQ(j["primary"], kBoot0);
  EXPECT_FALSE(j.contains("bootctl_error"));
  ASSERT_EQ(j["items"].size(), 2u);
  EXPECT_EQ(j["items"][0]["path"], kBoot0);
  EXPECT_EQ(j["items"][0]["size"], 64 * 1024);
  EXPECT_EQ(j["items"][0]["sha256"], Sha256Hex(Boot0()));
  EXPECT_EQ(j["items"][0]["layout"], BfbLayoutToJson(*p.partitions[0].layout));
  EXPECT_FALSE(j["items"][0].contains("error"));
  EXPECT_EQ(j["items"][1]["error"],
            "/dev/mmcblk0boot1: BFB image 0 at offset 0x0: bad magic "
            "0x78787878 (expected 0x13026642).");
  EXPECT_FALSE(j["items"][1].contains("layout"));

  // Through text, as a report carries it.
  auto back = ParseBootPartitionsJson(json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(back->bootctl_status.ok());
  EXPECT_EQ(back->bootctl_evidence_id, p.bootctl_evidence_id);
  EXPECT_EQ(back->primary, p.primary);
  ASSERT_EQ(back->partitions.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back->partitions[i].path, p.partitions[i].path);
    EXPECT_EQ(back->partitions[i].size, p.partitions[i].size);
    EXPECT_EQ(back->partitions[i].sha256, p.partitions[i].sha256);
    EXPECT_EQ(back->partitions[i].layout, p.partitions[i].layout);
  }
  EXPECT_TRUE(back->partitions[0].status.ok());
  EXPECT_EQ(back->partitions[1].status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(back->partitions[1].status.message(),
            p.partitions[1].status.message());
  ASSERT_NE(back->Primary(), nullptr);
  EXPECT_EQ(back->Primary()->path, kBoot0);
  EXPECT_EQ(BootPartitionsJson(*back), j);
}

TEST(BootPartitionsJsonTest, UnknownPrimaryCarriesTheReason) {
  BootPartitions p = Measured("", /*boot1_garbage=*/false);
  json j = BootPartitionsJson(p);
  EXPECT_TRUE(j["primary"].is_null());
  EXPECT_EQ(j["bootctl_error"], "`mlxbf-bootctl` is not installed (exit 127)");
  auto back = ParseBootPartitionsJson(j);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->primary, "");
  EXPECT_EQ(back->bootctl_status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(back->bootctl_status.message(),
            "`mlxbf-bootctl` is not installed (exit 127)");
  EXPECT_EQ(back->Primary(), nullptr);
}

struct JsonCase {
  std::string name;
  std::function<void(json&)> mutate;
  std::string message;
};

TEST(BootPartitionsJsonTest, StrictParseRejects) {
  const json good = BootPartitionsJson(Measured(kSonicBootctl, false));
  ASSERT_TRUE(ParseBootPartitionsJson(good).ok());
  const std::string i0 = "partitions.items[0]";
  const JsonCase cases[] = {
      {"not an object", [](json& j) { j = json::array(); },
       "partitions must be an object."},
      {"unknown member", [](json& j) { j["extra"] = 1; },
       "partitions has unknown member \"extra\"."},
      {"no items", [](json& j) { j.erase("items"); },
       "partitions.items is required."},
      {"no primary", [](json& j) { j.erase("primary"); },
       "partitions.primary is required."},
      {"primary type", [](json& j) { j["primary"] = 0; },
       "partitions.primary must be a string or null."},
      {"primary path", [](json& j) { j["primary"] = "/dev/sda"; },
       "partitions.primary \"/dev/sda\" is not /dev/mmcblk0boot0 or "
       "/dev/mmcblk0boot1."},
      {"null primary without reason", [](json& j) { j["primary"] = nullptr; },
       "partitions.bootctl_error is required when primary is null."},
      {"empty reason",
       [](json& j) {
         j["primary"] = nullptr;
         j["bootctl_error"] = "";
       },
       "partitions.bootctl_error must not be empty."},
      {"reason with primary", [](json& j) { j["bootctl_error"] = "x"; },
       "partitions.bootctl_error must be absent when primary is known."},
      {"items type", [](json& j) { j["items"] = json::object(); },
       "partitions.items must be an array."},
      {"three items", [](json& j) { j["items"].push_back(j["items"][0]); },
       "partitions.items holds more than 2 items."},
      {"repeated path", [](json& j) { j["items"][1] = j["items"][0]; },
       "partitions.items[1].path \"/dev/mmcblk0boot0\" is repeated."},
      {"item unknown member", [](json& j) { j["items"][0]["extra"] = true; },
       i0 + " has unknown member \"extra\"."},
      {"item path", [](json& j) { j["items"][0]["path"] = "/etc/passwd"; },
       i0 + ".path \"/etc/passwd\" is not /dev/mmcblk0boot0 or "
            "/dev/mmcblk0boot1."},
      {"item size negative", [](json& j) { j["items"][0]["size"] = -1; },
       i0 + ".size must be a non-negative integer."},
      {"item size float", [](json& j) { j["items"][0]["size"] = 65536.0; },
       i0 + ".size must be a non-negative integer."},
      {"item size mismatch", [](json& j) { j["items"][0]["size"] = 5; },
       i0 + ".size 5 is not layout.total_bytes 65536."},
      {"item sha256 upper case",
       [](json& j) {
         std::string s = j["items"][0]["sha256"];
         for (char& c : s) c = static_cast<char>(std::toupper(c));
         j["items"][0]["sha256"] = s;
       },
       i0 + ".sha256 is not 64 lower-case hex digits."},
      {"item sha256 empty but measured",
       [](json& j) { j["items"][0]["sha256"] = ""; },
       i0 + ".sha256 must be set for a measured partition."},
      {"error and layout", [](json& j) { j["items"][0]["error"] = "x"; },
       i0 + " must have exactly one of \"error\" and \"layout\"."},
      {"neither error nor layout",
       [](json& j) { j["items"][0].erase("layout"); },
       i0 + " must have exactly one of \"error\" and \"layout\"."},
      {"empty error",
       [](json& j) {
         j["items"][0].erase("layout");
         j["items"][0]["error"] = "";
       },
       i0 + ".error must not be empty."},
      {"layout sha384 not hex",
       [](json& j) {
         j["items"][1]["layout"]["images"][2]["sha384"] = std::string(96, 'g');
       },
       "partitions.items[1].layout.images[2].sha384 is not 96 lower-case hex "
       "digits."},
  };
  for (const JsonCase& c : cases) {
    json j = good;
    c.mutate(j);
    auto got = ParseBootPartitionsJson(j);
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(got.status().message(), c.message) << c.name;
  }
}

TEST(BfbLayoutFromJsonTest, StrictParseRejects) {
  BootPartitions p = Measured(kSonicBootctl, false);
  const json good = BfbLayoutToJson(*p.partitions[0].layout);
  ASSERT_TRUE(bluefield::BfbLayoutFromJson(good, "layout").ok());
  const std::string i1 = "layout.images[1]";
  auto image = [](json& j) -> json& { return j["images"][1]; };
  const JsonCase cases[] = {
      {"not an object", [](json& j) { j = "x"; }, "layout must be an object."},
      {"unknown member", [](json& j) { j["version"] = 2; },
       "layout has unknown member \"version\"."},
      {"missing member", [](json& j) { j.erase("all_crc_ok"); },
       "layout.all_crc_ok is required."},
      {"format", [](json& j) { j["format"] = "dpuaudit-bfb-layout/2"; },
       "layout.format \"dpuaudit-bfb-layout/2\" is not "
       "\"dpuaudit-bfb-layout/1\"."},
      {"images type", [](json& j) { j["images"] = json::object(); },
       "layout.images must be an array."},
      {"no images", [](json& j) { j["images"] = json::array(); },
       "layout.images must hold at least one image."},
      {"image unknown member", [&](json& j) { image(j)["data"] = "AAAA"; },
       i1 + " has unknown member \"data\"."},
      {"image missing member", [&](json& j) { image(j).erase("sha512"); },
       i1 + ".sha512 is required."},
      {"index", [&](json& j) { image(j)["index"] = 7; },
       i1 + ".index 7 is not the image's position 1."},
      {"offset", [&](json& j) { image(j)["offset"] = 41; },
       i1 + ".offset 41 is not 40, the end of the previous image."},
      {"first offset", [](json& j) { j["images"][0]["offset"] = 8; },
       "layout.images[0].offset 8 is not 0."},
      {"length string", [&](json& j) { image(j)["length"] = "10"; },
       i1 + ".length must be a non-negative integer."},
      {"length range", [&](json& j) { image(j)["length"] = 1ull << 32; },
       i1 + ".length 4294967296 exceeds 4294967295."},
      {"id range", [&](json& j) { image(j)["id"] = 256; },
       i1 + ".id 256 exceeds 255."},
      {"major", [&](json& j) { image(j)["major"] = 2; },
       i1 + ".major 2 is not 1."},
      {"minor", [&](json& j) { image(j)["minor"] = 3; },
       i1 + ".minor 3 exceeds 2."},
      {"version range", [&](json& j) { image(j)["cur_img_ver"] = 16; },
       i1 + ".cur_img_ver 16 exceeds 15."},
      {"crc_ok contradicts", [&](json& j) { image(j)["crc_ok"] = false; },
       i1 + ".crc_ok is false but crc and crc_computed are equal."},
      {"crc_ok type", [&](json& j) { image(j)["crc_ok"] = 1; },
       i1 + ".crc_ok must be a boolean."},
      {"name", [&](json& j) { image(j)["name"] = "bl31"; },
       i1 + ".name \"bl31\" is not the name of id 1 (\"bl2\")."},
      {"known", [&](json& j) { image(j)["known"] = false; },
       i1 + ".known is false for id 1."},
      {"sha256 length", [&](json& j) { image(j)["sha256"] = "abcd"; },
       i1 + ".sha256 is not 64 lower-case hex digits."},
      {"sha512 type", [&](json& j) { image(j)["sha512"] = 5; },
       i1 + ".sha512 must be a string."},
      {"bitmap number", [&](json& j) { image(j)["following_images"] = 8; },
       i1 + ".following_images must be a string."},
      {"bitmap short", [&](json& j) { image(j)["following_images"] = "0x8"; },
       i1 + ".following_images is not \"0x\" and 16 lower-case hex digits."},
      {"end_offset", [](json& j) { j["end_offset"] = 1; },
       "layout.end_offset 1 is not the end of the last image (120)."},
      {"total_bytes", [](json& j) { j["total_bytes"] = 1; },
       "layout.total_bytes 1 is not end_offset + trailing.bytes."},
      {"trailing kind", [](json& j) { j["trailing"]["kind"] = "fill"; },
       "layout.trailing.kind \"fill\" is not none, padding or garbage."},
      {"trailing none with bytes",
       [](json& j) { j["trailing"]["kind"] = "none"; },
       "layout.trailing.bytes 65416 contradicts kind \"none\"."},
      {"trailing offset", [](json& j) { j["trailing"]["offset"] = 0; },
       "layout.trailing.offset 0 is not end_offset 120."},
      {"trailing unknown member", [](json& j) { j["trailing"]["x"] = 0; },
       "layout.trailing has unknown member \"x\"."},
      {"all_crc_ok", [](json& j) { j["all_crc_ok"] = false; },
       "layout.all_crc_ok contradicts the images' crc_ok values."},
      {"following_consistent",
       [](json& j) { j["following_consistent"] = false; },
       "layout.following_consistent contradicts the images' "
       "following_images bitmaps."},
      {"bitmap edited",
       [&](json& j) { image(j)["following_images"] = "0x0000000000000000"; },
       "layout.following_consistent contradicts the images' "
       "following_images bitmaps."},
  };
  for (const JsonCase& c : cases) {
    json j = good;
    c.mutate(j);
    auto got = bluefield::BfbLayoutFromJson(j, "layout");
    ASSERT_FALSE(got.ok()) << c.name;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(got.status().message(), c.message) << c.name;
  }
}

}  // namespace
}  // namespace dpuaudit::firmware
