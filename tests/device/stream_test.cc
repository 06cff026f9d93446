// DeviceSource::OpenStream of the live and recorded sources: they stream
// from disk (the base-class default reads the whole file, at most 64 MiB),
// with the same path checks as ReadFile.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "device/device_source.h"
#include "testing/device_test_util.h"

namespace dpuaudit::device {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempDir;
using testing::WriteFile;

constexpr size_t kPiece = 256 * 1024;

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    s[i] = static_cast<char>((i * 31) ^ (i >> 10));
  }
  return s;
}

// Reads `stream` to the end in reads of at most kPiece bytes; checks that no
// read returns more than asked, and counts the reads.
std::string ReadInPieces(ByteStream& stream, size_t* reads) {
  std::string out;
  std::vector<uint8_t> buf(kPiece);
  *reads = 0;
  for (;;) {
    auto n = stream.Read(buf.data(), buf.size());
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    if (!n.ok() || *n == 0) return out;
    EXPECT_LE(*n, kPiece);
    ++*reads;
    out.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
}

// A sparse file just over the base class's 64 MiB whole-file limit: only a
// real stream can open it.
void MakeSparse(const std::string& path, off_t size) {
  WriteFile(path, "");
  ASSERT_EQ(::truncate(path.c_str(), size), 0) << path;
}

uint64_t CountBytes(ByteStream& stream) {
  std::vector<uint8_t> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    auto n = stream.Read(buf.data(), buf.size());
    EXPECT_TRUE(n.ok()) << n.status().ToString();
    if (!n.ok() || *n == 0) return total;
    total += *n;
  }
}

constexpr off_t kOverDefaultLimit =
    static_cast<off_t>(kMaxDefaultStreamBytes) + 4096;

TEST(LiveOpenStreamTest, AbsentFileIsNotFound) {
  TempDir dir;
  auto source = NewLiveDeviceSource();
  auto got = source->OpenStream(dir / "none");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr(dir / "none"));
}

TEST(LiveOpenStreamTest, InvalidPathsAreRejected) {
  auto source = NewLiveDeviceSource();
  for (const std::string& path :
       {std::string("dev/mmcblk0boot0"), std::string("/dev/../etc/shadow"),
        std::string("/dev//mmcblk0boot0")}) {
    auto got = source->OpenStream(path);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(got.status().message(), StartsWith("device path \"" + path))
        << path;
  }
}

TEST(LiveOpenStreamTest, LargeFileStreamsInPieces) {
  TempDir dir;
  const std::string content = Pattern(1536 * 1024);  // 1.5 MiB
  WriteFile(dir / "boot0", content);
  auto source = NewLiveDeviceSource();
  auto stream = source->OpenStream(dir / "boot0");
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ((*stream)->SizeHint(), static_cast<int64_t>(content.size()));
  size_t reads = 0;
  EXPECT_EQ(ReadInPieces(**stream, &reads), content);
  EXPECT_GE(reads, content.size() / kPiece);

  MakeSparse(dir / "big", kOverDefaultLimit);
  auto big = source->OpenStream(dir / "big");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(CountBytes(**big), static_cast<uint64_t>(kOverDefaultLimit));
}

class RecordedOpenStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_ / "rec/fs/dev/mmcblk0boot0", content_);
    WriteFile(dir_ / "outside/secret", "secret");
  }
  std::string Rec() const { return dir_ / "rec"; }
  std::unique_ptr<DeviceSource> Open() {
    auto s = NewRecordedDeviceSource(Rec());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  TempDir dir_;
  const std::string content_ = Pattern(1536 * 1024 + 7);
};

TEST_F(RecordedOpenStreamTest, AbsentFileIsNotFound) {
  auto source = Open();
  ASSERT_NE(source, nullptr);
  auto got = source->OpenStream("/dev/mmcblk0boot1");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(got.status().message(),
            "/dev/mmcblk0boot1 is not in recording " + Rec() + ".");
}

TEST_F(RecordedOpenStreamTest, SymlinkEscapeIsPermissionDenied) {
  ASSERT_EQ(::symlink((dir_ / "outside/secret").c_str(),
                      (Rec() + "/fs/dev/mmcblk0boot1").c_str()),
            0);
  ASSERT_EQ(::symlink("../../../outside", (Rec() + "/fs/dev/up").c_str()), 0);
  auto source = Open();
  ASSERT_NE(source, nullptr);
  for (const std::string& path :
       {std::string("/dev/mmcblk0boot1"), std::string("/dev/up/secret")}) {
    auto got = source->OpenStream(path);
    ASSERT_FALSE(got.ok()) << path;
    EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied) << path;
    EXPECT_THAT(got.status().message(), HasSubstr("outside")) << path;
    // Exactly as ReadFile refuses it.
    EXPECT_EQ(source->ReadFile(path, 1 << 20).status(), got.status()) << path;
  }
}

TEST_F(RecordedOpenStreamTest, InvalidPathsAreRejected) {
  auto source = Open();
  ASSERT_NE(source, nullptr);
  for (const std::string& path :
       {std::string("/../outside/secret"), std::string("dev/mmcblk0boot0")}) {
    auto got = source->OpenStream(path);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(got.status().message(), StartsWith("device path \"" + path))
        << path;
  }
}

TEST_F(RecordedOpenStreamTest, LargeFileStreamsInPieces) {
  auto source = Open();
  ASSERT_NE(source, nullptr);
  auto stream = source->OpenStream("/dev/mmcblk0boot0");
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ((*stream)->SizeHint(), static_cast<int64_t>(content_.size()));
  size_t reads = 0;
  EXPECT_EQ(ReadInPieces(**stream, &reads), content_);
  EXPECT_GE(reads, content_.size() / kPiece);

  MakeSparse(Rec() + "/fs/dev/mmcblk0boot1", kOverDefaultLimit);
  auto big = source->OpenStream("/dev/mmcblk0boot1");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(CountBytes(**big), static_cast<uint64_t>(kOverDefaultLimit));
  // The whole-file path refuses it: streaming is what makes it readable.
  EXPECT_EQ(source->ReadFile("/dev/mmcblk0boot1", kMaxDefaultStreamBytes)
                .status()
                .code(),
            StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace dpuaudit::device
