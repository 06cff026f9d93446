// commands.json parsing and the recorded DeviceSource over real folders.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "device/device_source.h"
#include "device/recorded.h"
#include "testing/device_test_util.h"

namespace dpuaudit::device {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::TempDir;
using testing::WriteFile;

StatusOr<std::vector<RecordedCommand>> Parse(std::string_view json) {
  return ParseCommandsJson(AsBytes(json));
}

TEST(ParseCommandsJsonTest, ParsesAllFields) {
  auto got = Parse(R"({"commands": [
      {"argv": ["mlxprivhost", "-d", "/dev/mst/mt41692_pciconf0", "q"],
       "stdout": "out/01.txt", "stderr": "out/01.err", "exit_code": 0},
      {"argv": ["sleep", "5"], "stdout": "out/02.txt", "exit_code": -1,
       "timed_out": true, "truncated": true}]})");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 2u);
  const RecordedCommand& a = (*got)[0];
  EXPECT_EQ(a.argv,
            (std::vector<std::string>{"mlxprivhost", "-d",
                                      "/dev/mst/mt41692_pciconf0", "q"}));
  EXPECT_EQ(a.stdout_path, "out/01.txt");
  EXPECT_EQ(a.stderr_path, "out/01.err");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_FALSE(a.timed_out);
  EXPECT_FALSE(a.truncated);
  const RecordedCommand& b = (*got)[1];
  EXPECT_EQ(b.stderr_path, "");
  EXPECT_EQ(b.exit_code, -1);
  EXPECT_TRUE(b.timed_out);
  EXPECT_TRUE(b.truncated);

  auto empty = Parse(R"({"commands": []})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(ParseCommandsJsonTest, StrictErrors) {
  // Two valid entries first, so the errors must name the right index.
  const std::string ok2 =
      R"({"argv": ["a"], "stdout": "out/a", "exit_code": 0},)"
      R"({"argv": ["b"], "stdout": "out/b", "exit_code": 1},)";
  auto with = [&](const std::string& third) {
    return R"({"commands": [)" + ok2 + third + "]}";
  };
  struct Case {
    std::string json;
    std::string message;
  };
  const Case cases[] = {
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": 0, "extra": 1})"),
       "commands[2] has unknown key \"extra\"."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": "0"})"),
       "commands[2].exit_code must be an integer."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": 1.5})"),
       "commands[2].exit_code must be an integer."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": 256})"),
       "commands[2].exit_code 256 is out of range [-1, 255]."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": -2})"),
       "commands[2].exit_code -2 is out of range [-1, 255]."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": -1})"),
       "commands[2].exit_code must be -1 exactly when commands[2].timed_out "
       "is true."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": 0,
                "timed_out": true})"),
       "commands[2].exit_code must be -1 exactly when commands[2].timed_out "
       "is true."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": 0,
                "timed_out": 1})"),
       "commands[2].timed_out must be a boolean."},
      {with(R"({"argv": ["c"], "stdout": "o", "exit_code": 0,
                "truncated": "no"})"),
       "commands[2].truncated must be a boolean."},
      {with(R"({"argv": ["c"], "stdout": "../x", "exit_code": 0})"),
       "commands[2].stdout must not contain a \"..\" component, got "
       "\"../x\"."},
      {with(R"({"argv": ["c"], "stdout": "out/../../x", "exit_code": 0})"),
       "commands[2].stdout must not contain a \"..\" component, got "
       "\"out/../../x\"."},
      {with(R"({"argv": ["c"], "stdout": "/etc/passwd", "exit_code": 0})"),
       "commands[2].stdout must be a relative path, not \"/etc/passwd\"."},
      {with(R"({"argv": ["c"], "stdout": "o", "stderr": "/x",
                "exit_code": 0})"),
       "commands[2].stderr must be a relative path, not \"/x\"."},
      {with(R"({"argv": ["c"], "stdout": "", "exit_code": 0})"),
       "commands[2].stdout must not be empty."},
      {with(R"({"argv": ["c"], "stdout": 7, "exit_code": 0})"),
       "commands[2].stdout must be a string."},
      {with(R"({"argv": ["a"], "stdout": "o", "exit_code": 0})"),
       "commands[2].argv duplicates commands[0].argv."},
      {with(R"({"argv": [], "stdout": "o", "exit_code": 0})"),
       "commands[2].argv must not be empty."},
      {with(R"({"argv": "c", "stdout": "o", "exit_code": 0})"),
       "commands[2].argv must be an array of strings."},
      {with(R"({"argv": ["c", 1], "stdout": "o", "exit_code": 0})"),
       "commands[2].argv[1] must be a string."},
      {with(R"({"argv": [""], "stdout": "o", "exit_code": 0})"),
       "commands[2].argv[0] must not be empty."},
      {with(R"({"argv": ["c", "a\u0000b"], "stdout": "o", "exit_code": 0})"),
       "commands[2].argv[1] must not contain a NUL byte."},
      {with(R"({"argv": ["c"], "exit_code": 0})"),
       "commands[2].stdout is required."},
      {with(R"({"argv": ["c"], "stdout": "o"})"),
       "commands[2].exit_code is required."},
      {with(R"({"stdout": "o", "exit_code": 0})"),
       "commands[2].argv is required."},
      {with(R"(["c"])"), "commands[2] must be an object."},
      {with(R"({"argv": ["c"], "argv": ["d"], "stdout": "o",
                "exit_code": 0})"),
       "duplicate key \"argv\"."},
      {R"({"commands": [], "version": 1})",
       "commands.json has unknown key \"version\"."},
      {R"({})", "commands is required."},
      {R"({"commands": {}})", "commands must be an array."},
      {R"([])", "commands.json must be a JSON object."},
      {R"({"commands": [[[[[[[[[[]]]]]]]]]]})",
       "commands.json is nested more than 8 levels deep."},
  };
  for (const Case& c : cases) {
    auto got = Parse(c.json);
    ASSERT_FALSE(got.ok()) << c.json;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_EQ(got.status().message(), c.message) << c.json;
  }
}

TEST(ParseCommandsJsonTest, RejectsMalformedJson) {
  for (std::string_view bad :
       {"", "{", "{\"commands\": [}", "{\"commands\": []} x",
        "{\"commands\": [\"\xff\"]}"}) {
    auto got = Parse(bad);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(got.status().message(),
                StartsWith("commands.json is not valid JSON"));
  }
}

TEST(SerializeCommandsJsonTest, RoundTrips) {
  std::vector<RecordedCommand> cmds(3);
  cmds[0] = {{"mst", "status", "-v"}, "out/01.txt", "", 0, false, false};
  cmds[1] = {
      {"echo", "a b", "\xc3\xa9"}, "out/02.txt", "out/02.err", 3, false, true};
  cmds[2] = {{"sleep", "5"}, "out/03.txt", "", -1, true, false};
  auto text = SerializeCommandsJson(cmds);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto back = Parse(*text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, cmds);
  EXPECT_THAT(*text, ::testing::Not(HasSubstr("\"timed_out\": false")));
}

TEST(SerializeCommandsJsonTest, RefusesWhatWouldNotParseBack) {
  std::vector<RecordedCommand> not_utf8 = {
      {{"echo", "\xff"}, "out/01.txt", "", 0, false, false}};
  auto a = SerializeCommandsJson(not_utf8);
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(a.status().message(), StartsWith("commands cannot be written"));

  std::vector<RecordedCommand> dup = {
      {{"a"}, "out/01.txt", "", 0, false, false},
      {{"a"}, "out/02.txt", "", 0, false, false}};
  auto b = SerializeCommandsJson(dup);
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b.status().message(),
            "commands[1].argv duplicates commands[0].argv.");
}

// A recording built by hand, as a fixture author would.
class RecordedSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_ / "fs/etc/mlnx-release",
              "DOCA_2.9.0_BSP_4.9.0_Ubuntu_22.04\n");
    WriteFile(dir_ / "fs/dev/mst/mt41692_pciconf0", "");
    WriteFile(dir_ / "fs/dev/mst/mt41692_pciconf0.1", "");
    WriteFile(dir_ / "out/mst.txt", "MST modules:\n");
    WriteFile(dir_ / "out/flint.txt", "Image type: FS4\n");
    WriteFile(dir_ / "out/flint.err", "warning\n");
    WriteFile(dir_ / "outside/secret", "secret");
  }

  void WriteCommands(const std::string& json) {
    WriteFile(dir_ / "rec/commands.json", json);
  }

  std::string Rec() const { return dir_ / "rec"; }

  // Moves the fixture into rec/ (the folder under test), keeping outside/
  // next to it for escape attempts.
  void Build() {
    std::filesystem::create_directories(dir_ / "rec");
    std::filesystem::rename(dir_ / "fs", dir_ / "rec/fs");
    std::filesystem::rename(dir_ / "out", dir_ / "rec/out");
  }

  TempDir dir_;
};

TEST_F(RecordedSourceTest, ServesFilesDirsAndCommands) {
  Build();
  WriteCommands(R"({"commands": [
      {"argv": ["mst", "status", "-v"], "stdout": "out/mst.txt",
       "exit_code": 0},
      {"argv": ["flint", "-d", "/dev/mst/mt41692_pciconf0", "q", "full"],
       "stdout": "out/flint.txt", "stderr": "out/flint.err",
       "exit_code": 3}]})");
  auto source = NewRecordedDeviceSource(Rec());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->Describe(), "recorded:" + Rec());

  auto release = (*source)->ReadFile("/etc/mlnx-release", 1000);
  ASSERT_TRUE(release.ok()) << release.status().ToString();
  EXPECT_EQ(ToString(*release), "DOCA_2.9.0_BSP_4.9.0_Ubuntu_22.04\n");
  EXPECT_EQ((*source)->ReadFile("/etc/mlnx-release", 5).status().code(),
            StatusCode::kResourceExhausted);
  auto missing = (*source)->ReadFile("/etc/shadow", 1000);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "/etc/shadow is not in recording " + Rec() + ".");

  auto mst = (*source)->ListDir("/dev/mst");
  ASSERT_TRUE(mst.ok()) << mst.status().ToString();
  EXPECT_EQ(*mst, (std::vector<std::string>{"mt41692_pciconf0",
                                            "mt41692_pciconf0.1"}));
  auto root = (*source)->ListDir("/");
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(*root, (std::vector<std::string>{"dev", "etc"}));

  auto status = (*source)->Run({"mst", "status", "-v"}, CommandOptions{});
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  EXPECT_EQ(status->exit_code, 0);
  EXPECT_EQ(ToString(status->stdout_bytes), "MST modules:\n");
  EXPECT_TRUE(status->stderr_bytes.empty());
  EXPECT_FALSE(status->truncated);
  EXPECT_FALSE(status->timed_out);

  auto flint = (*source)->Run(
      {"flint", "-d", "/dev/mst/mt41692_pciconf0", "q", "full"}, {});
  ASSERT_TRUE(flint.ok());
  EXPECT_EQ(flint->exit_code, 3);
  EXPECT_EQ(ToString(flint->stderr_bytes), "warning\n");
}

TEST_F(RecordedSourceTest, CommandNotRecordedIsNotInstalled) {
  Build();
  WriteCommands(R"({"commands": [{"argv": ["mst", "status", "-v"],
                    "stdout": "out/mst.txt", "exit_code": 0}]})");
  auto source = NewRecordedDeviceSource(Rec());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  // Same tool, different argv: not recorded.
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"mst", "status"},
        std::vector<std::string>{"bfver"}}) {
    auto r = (*source)->Run(argv, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->exit_code, kExitNotInstalled);
    EXPECT_TRUE(r->stdout_bytes.empty());
    EXPECT_FALSE(r->timed_out);
  }
  EXPECT_EQ((*source)->Run({}, {}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(RecordedSourceTest, MissingCommandsJsonMeansNoCommands) {
  Build();
  auto source = NewRecordedDeviceSource(Rec());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto r = (*source)->Run({"mst", "status", "-v"}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, kExitNotInstalled);
  EXPECT_TRUE((*source)->ReadFile("/etc/mlnx-release", 1000).ok());
}

TEST_F(RecordedSourceTest, OutputsAreBoundedAndFlagsReplayed) {
  Build();
  WriteFile(Rec() + "/out/big.txt", std::string(5000, 'x'));
  WriteCommands(R"({"commands": [
      {"argv": ["big"], "stdout": "out/big.txt", "exit_code": 0},
      {"argv": ["cut"], "stdout": "out/mst.txt", "exit_code": 0,
       "truncated": true},
      {"argv": ["slow"], "stdout": "out/mst.txt", "exit_code": -1,
       "timed_out": true}]})");
  auto source = NewRecordedDeviceSource(Rec());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  CommandOptions small;
  small.max_output_bytes = 100;
  auto big = (*source)->Run({"big"}, small);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->stdout_bytes.size(), 100u);
  EXPECT_TRUE(big->truncated);
  auto whole = (*source)->Run({"big"}, {});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->stdout_bytes.size(), 5000u);
  EXPECT_FALSE(whole->truncated);
  auto cut = (*source)->Run({"cut"}, {});
  ASSERT_TRUE(cut.ok());
  EXPECT_TRUE(cut->truncated);
  auto slow = (*source)->Run({"slow"}, {});
  ASSERT_TRUE(slow.ok());
  EXPECT_TRUE(slow->timed_out);
  EXPECT_EQ(slow->exit_code, -1);
}

TEST_F(RecordedSourceTest, StrictCommandsJsonAtOpen) {
  Build();
  WriteCommands(R"({"commands": [{"argv": ["a"], "stdout": "out/mst.txt",
                    "exit_code": 0, "stdin": "x"}]})");
  auto source = NewRecordedDeviceSource(Rec());
  ASSERT_FALSE(source.ok());
  EXPECT_EQ(source.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(source.status().message(),
            Rec() + "/commands.json: commands[0] has unknown key \"stdin\".");
}

TEST_F(RecordedSourceTest, OutputFilesMustExistInsideTheRecording) {
  Build();
  WriteCommands(R"({"commands": [{"argv": ["a"], "stdout": "out/none.txt",
                    "exit_code": 0}]})");
  auto missing = NewRecordedDeviceSource(Rec());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(),
            Rec() +
                "/commands.json: commands[0].stdout \"out/none.txt\" "
                "does not exist in the recording.");

  // A symlink inside out/ pointing out of the recording.
  ASSERT_EQ(::symlink((dir_ / "outside/secret").c_str(),
                      (Rec() + "/out/link.txt").c_str()),
            0);
  WriteCommands(R"({"commands": [{"argv": ["a"], "stdout": "out/mst.txt",
                    "stderr": "out/link.txt", "exit_code": 0}]})");
  auto escape = NewRecordedDeviceSource(Rec());
  EXPECT_EQ(escape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(escape.status().message(),
            Rec() +
                "/commands.json: commands[0].stderr \"out/link.txt\" "
                "resolves outside the recording.");
}

TEST_F(RecordedSourceTest, PathTraversalRejected) {
  Build();
  auto source = NewRecordedDeviceSource(Rec());
  ASSERT_TRUE(source.ok());
  for (const std::string& path :
       {std::string("/../etc/passwd"), std::string("/etc/../../outside/secret"),
        std::string("etc/mlnx-release"), std::string("../outside/secret")}) {
    auto got = (*source)->ReadFile(path, 1000);
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_THAT(got.status().message(), StartsWith("device path \"" + path))
        << path;
    EXPECT_EQ((*source)->ListDir(path).status().code(),
              StatusCode::kInvalidArgument)
        << path;
  }
}

TEST_F(RecordedSourceTest, SymlinkEscapeRejected) {
  Build();
  // Absolute and relative links out of fs/, a link to the directory above,
  // and one link that stays inside (allowed).
  ASSERT_EQ(::symlink((dir_ / "outside/secret").c_str(),
                      (Rec() + "/fs/etc/abs").c_str()),
            0);
  ASSERT_EQ(
      ::symlink("../../../outside/secret", (Rec() + "/fs/etc/rel").c_str()), 0);
  ASSERT_EQ(::symlink("../..", (Rec() + "/fs/etc/up").c_str()), 0);
  ASSERT_EQ(::symlink("mlnx-release", (Rec() + "/fs/etc/inside").c_str()), 0);
  auto source = NewRecordedDeviceSource(Rec());
  ASSERT_TRUE(source.ok());
  for (const std::string& path :
       {std::string("/etc/abs"), std::string("/etc/rel"),
        std::string("/etc/up/out/mst.txt")}) {
    auto got = (*source)->ReadFile(path, 1000);
    EXPECT_EQ(got.status().code(), StatusCode::kPermissionDenied) << path;
    EXPECT_THAT(got.status().message(), HasSubstr("outside")) << path;
  }
  EXPECT_EQ((*source)->ListDir("/etc/up").status().code(),
            StatusCode::kPermissionDenied);
  auto inside = (*source)->ReadFile("/etc/inside", 1000);
  ASSERT_TRUE(inside.ok()) << inside.status().ToString();
  EXPECT_EQ(ToString(*inside), "DOCA_2.9.0_BSP_4.9.0_Ubuntu_22.04\n");
}

TEST_F(RecordedSourceTest, FsSymlinkOutOfTheRecordingRejected) {
  std::filesystem::create_directories(dir_ / "rec");
  ASSERT_EQ(::symlink((dir_ / "fs").c_str(), (Rec() + "/fs").c_str()), 0);
  auto source = NewRecordedDeviceSource(Rec());
  EXPECT_EQ(source.status().code(), StatusCode::kPermissionDenied);
}

TEST(RecordedSourceOpenTest, MissingFolderIsNotFound) {
  TempDir dir;
  auto source = NewRecordedDeviceSource(dir / "none");
  EXPECT_EQ(source.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(source.status().message(),
            "recording " + (dir / "none") + " is not a directory.");
}

TEST(RecordedSourceOpenTest, NoFsMeansEveryPathIsNotFound) {
  TempDir dir;
  auto source = NewRecordedDeviceSource(dir.path());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->ReadFile("/etc/mlnx-release", 10).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ((*source)->ListDir("/").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace dpuaudit::device
