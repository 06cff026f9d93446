// device::MemoizingDeviceSource: one inner request per distinct request,
// the first answer (value or error) for every repeat.
#include "device/memoizing_source.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "device/device_source.h"
#include "testing/fake_device_source.h"

namespace dpuaudit::device {
namespace {

using dpuaudit::testing::FakeDeviceSource;

// Counts every request that reaches the inner source.
class Counting final : public ForwardingDeviceSource {
 public:
  using ForwardingDeviceSource::ForwardingDeviceSource;
  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override {
    ++files[path + "#" + std::to_string(max_bytes)];
    return inner().ReadFile(path, max_bytes);
  }
  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override {
    ++dirs[path];
    return inner().ListDir(path);
  }
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override {
    ++runs;
    return inner().Run(argv, options);
  }
  StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const override {
    ++streams;
    return inner().OpenStream(path);
  }
  std::string Describe() const override { return "counting"; }

  mutable std::map<std::string, int> files;
  mutable std::map<std::string, int> dirs;
  mutable int runs = 0;
  mutable int streams = 0;
};

TEST(MemoizingDeviceSourceTest, RunsEachCommandOnceAndReturnsTheFirstResult) {
  FakeDeviceSource fake;
  fake.Command({"flint", "q"}, "FW Version: 1\n");
  Counting counting(fake);
  MemoizingDeviceSource memo(counting);
  for (int i = 0; i < 3; ++i) {
    auto r = memo.Run({"flint", "q"}, CommandOptions{});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, 0);
    EXPECT_EQ(ToString(r->stdout_bytes), "FW Version: 1\n");
  }
  EXPECT_EQ(counting.runs, 1);
  EXPECT_EQ(fake.runs({"flint", "q"}), 1);
  // Another argv, and other options, are other requests.
  (void)memo.Run({"flint", "q", "full"}, CommandOptions{});
  CommandOptions small;
  small.max_output_bytes = 4;
  (void)memo.Run({"flint", "q"}, small);
  EXPECT_EQ(counting.runs, 3);
}

TEST(MemoizingDeviceSourceTest, NotInstalledAndErrorsAreMemoizedToo) {
  FakeDeviceSource fake;
  fake.RunError({"broken"}, UnavailableError("cannot fork."));
  Counting counting(fake);
  MemoizingDeviceSource memo(counting);
  for (int i = 0; i < 2; ++i) {
    auto missing = memo.Run({"absent"}, CommandOptions{});
    ASSERT_TRUE(missing.ok());
    EXPECT_EQ(missing->exit_code, kExitNotInstalled);
    auto broken = memo.Run({"broken"}, CommandOptions{});
    ASSERT_FALSE(broken.ok());
    EXPECT_EQ(broken.status().message(), "cannot fork.");
  }
  EXPECT_EQ(counting.runs, 2);
}

TEST(MemoizingDeviceSourceTest, FilesByPathAndLimitListingsByPath) {
  FakeDeviceSource fake;
  fake.File("/etc/mlnx-release", "DOCA_2.9\n");
  fake.Dir("/dev/mst", {"mt41692_pciconf0"});
  Counting counting(fake);
  MemoizingDeviceSource memo(counting);
  for (int i = 0; i < 2; ++i) {
    auto f = memo.ReadFile("/etc/mlnx-release", 4096);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(ToString(*f), "DOCA_2.9\n");
    // Too large for this limit: an error, remembered with its limit.
    auto small = memo.ReadFile("/etc/mlnx-release", 2);
    EXPECT_EQ(small.status().code(), StatusCode::kResourceExhausted);
    EXPECT_EQ(memo.ReadFile("/absent", 4096).status().code(),
              StatusCode::kNotFound);
    auto d = memo.ListDir("/dev/mst");
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(*d, std::vector<std::string>{"mt41692_pciconf0"});
  }
  EXPECT_EQ(counting.files["/etc/mlnx-release#4096"], 1);
  EXPECT_EQ(counting.files["/etc/mlnx-release#2"], 1);
  EXPECT_EQ(counting.files["/absent#4096"], 1);
  EXPECT_EQ(counting.dirs["/dev/mst"], 1);
}

TEST(MemoizingDeviceSourceTest, StreamsAndDescribePassThrough) {
  FakeDeviceSource fake;
  fake.File("/dev/mmcblk0boot0", "bfb");
  Counting counting(fake);
  MemoizingDeviceSource memo(counting);
  for (int i = 0; i < 2; ++i) {
    auto s = memo.OpenStream("/dev/mmcblk0boot0");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  EXPECT_EQ(counting.streams, 2);  // a stream is consumed: opened each time
  EXPECT_EQ(memo.Describe(), "counting");
}

}  // namespace
}  // namespace dpuaudit::device
