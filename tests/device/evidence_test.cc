// Evidence ids, capture, the evidence source and WriteRecording round trips.
#include "device/evidence.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "common/crypto.h"
#include "device/canonical_commands.h"
#include "device/device_source.h"
#include "device/recorded.h"
#include "testing/device_test_util.h"

namespace dpuaudit::device {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::WriteFile;

constexpr char kMst[] = "/dev/mst/mt41692_pciconf0";

TEST(EvidenceIdTest, CanonicalCommands) {
  struct Case {
    Argv argv;
    std::string id;
  };
  const Case cases[] = {
      {MstStatusArgv(), "mst.status"},
      {MlxprivhostQueryArgv(kMst),
       "mlxprivhost.query@/dev/mst/mt41692_pciconf0"},
      {MlxconfigQueryArgv(kMst), "mlxconfig.query@/dev/mst/mt41692_pciconf0"},
      {FlintQueryArgv(kMst), "flint.query@/dev/mst/mt41692_pciconf0"},
      {FlintQueryArgv("/dev/mst/mt41692_pciconf0.1"),
       "flint.query@/dev/mst/mt41692_pciconf0.1"},
      {MlxfwmanagerQueryArgv(), "mlxfwmanager.query"},
      {BfverArgv(), "bfver"},
      {MokutilSbStateArgv(), "mokutil.sb_state"},
      {BfsbdumpArgv(), "bfsbdump"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EvidenceIdForCommand(c.argv), c.id);
  }
}

TEST(EvidenceIdTest, OtherCommandsAreQuotedWhereNeeded) {
  struct Case {
    Argv argv;
    std::string id;
  };
  const Case cases[] = {
      // Not the canonical argv: generic ids.
      {{"mst", "status"}, "cmd:mst status"},
      {{"mlxprivhost", "-d", "/dev/sda", "q"}, "cmd:mlxprivhost -d /dev/sda q"},
      {{"mlxprivhost", "-d", "/dev/mst/../sda", "q"},
       "cmd:mlxprivhost -d /dev/mst/../sda q"},
      {{"mlxprivhost", "-d", "/dev/mst/a/b", "q"},
       "cmd:mlxprivhost -d /dev/mst/a/b q"},
      {{"mlxprivhost", "-d", kMst, "query"},
       "cmd:mlxprivhost -d /dev/mst/mt41692_pciconf0 query"},
      // Quoting keeps distinct argv apart.
      {{"echo", "a", "b"}, "cmd:echo a b"},
      {{"echo", "a b"}, "cmd:echo 'a b'"},
      {{"echo", ""}, "cmd:echo ''"},
      {{"echo", "it's"}, "cmd:echo 'it'\\''s'"},
      {{"echo", "$x;y"}, "cmd:echo '$x;y'"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(EvidenceIdForCommand(c.argv), c.id);
  }
}

TEST(EvidenceIdTest, PathsAndNames) {
  EXPECT_EQ(EvidenceIdForFile("/etc/mlnx-release"), "file:/etc/mlnx-release");
  EXPECT_EQ(EvidenceIdForDir("/dev/mst"), "dir:/dev/mst");
  EXPECT_EQ(EvidenceKindName(EvidenceKind::kCommand), "command");
  EXPECT_EQ(EvidenceKindName(EvidenceKind::kFile), "file");
  EXPECT_EQ(EvidenceKindName(EvidenceKind::kDir), "dir");

  Evidence cmd;
  cmd.kind = EvidenceKind::kCommand;
  cmd.argv = {"echo", "a b"};
  EXPECT_EQ(cmd.Source(), "echo a b");
  Evidence file;
  file.kind = EvidenceKind::kFile;
  file.path = "/etc/mlnx-release";
  EXPECT_EQ(file.Source(), "/etc/mlnx-release");
}

// A hand-built recording with every kind of access a probe makes.
void BuildRecording(const std::string& dir) {
  WriteFile(dir + "/fs/etc/mlnx-release", "DOCA_2.9.0\n");
  WriteFile(dir + "/fs/dev/mst/mt41692_pciconf0", "");
  WriteFile(dir + "/fs/dev/mst/mt41692_pciconf0.1", "");
  WriteFile(dir + "/fs/sys/bus/platform/devices/MLNXBF04:00/lifecycle_state",
            "GA Secured\n");
  WriteFile(dir + "/fs/sys/bus/platform/devices/MLNXBF04:00/secure_boot_fuse",
            "0x3\n");
  WriteFile(dir + "/fs/boot/big.bin", std::string(4096, '\x7f'));
  WriteFile(dir + "/out/mst.txt", "MST PCI configuration module loaded\n");
  WriteFile(dir + "/out/priv.txt", "level  : RESTRICTED\n");
  WriteFile(dir + "/out/priv.err", "-W- something\n");
  WriteFile(dir + "/out/empty.txt", "");
  WriteFile(dir + "/out/partial.txt", "partial");
  WriteFile(dir + "/commands.json", R"({"commands": [
      {"argv": ["mst", "status", "-v"], "stdout": "out/mst.txt",
       "exit_code": 0},
      {"argv": ["mlxprivhost", "-d", "/dev/mst/mt41692_pciconf0", "q"],
       "stdout": "out/priv.txt", "stderr": "out/priv.err", "exit_code": 0},
      {"argv": ["bfver"], "stdout": "out/empty.txt", "exit_code": 1},
      {"argv": ["echo", "a b"], "stdout": "out/partial.txt", "exit_code": -1,
       "timed_out": true},
      {"argv": ["mlxfwmanager", "--query"], "stdout": "out/partial.txt",
       "exit_code": 0, "truncated": true}]})");
}

// The fixed sequence of accesses a probe run would make.
void Probe(const DeviceSource& source) {
  CommandOptions options;
  (void)source.ListDir("/dev/mst");
  (void)source.ListDir("/sys/bus/platform/devices/MLNXBF04:00");
  (void)source.ListDir("/nonexistent");
  (void)source.ReadFile("/etc/mlnx-release", 1024);
  (void)source.ReadFile("/etc/mlnx-release", 1024);  // deduplicated
  (void)source.ReadFile("/sys/bus/platform/devices/MLNXBF04:00/lifecycle_state",
                        1024);
  (void)source.ReadFile("/etc/missing", 1024);
  (void)source.Run(MstStatusArgv(), options);
  (void)source.Run(MlxprivhostQueryArgv(kMst), options);
  (void)source.Run(MlxprivhostQueryArgv("/dev/mst/mt41692_pciconf0.1"),
                   options);
  (void)source.Run(BfverArgv(), options);
  (void)source.Run({"echo", "a b"}, options);
  (void)source.Run(MlxfwmanagerQueryArgv(), options);
  (void)source.Run(MokutilSbStateArgv(), options);  // not recorded
}

std::vector<Evidence> Capture(const DeviceSource& source) {
  CapturingDeviceSource capture(source);
  Probe(capture);
  return capture.evidence();
}

const Evidence* Find(const std::vector<Evidence>& ev, const std::string& id) {
  for (const Evidence& e : ev) {
    if (e.id == id) return &e;
  }
  return nullptr;
}

TEST(CapturingTest, RecordsEveryAccessOnce) {
  TempDir dir;
  BuildRecording(dir.path());
  auto source = NewRecordedDeviceSource(dir.path());
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  CapturingDeviceSource capture(**source);
  EXPECT_EQ(capture.Describe(), "capturing(recorded:" + dir.path() + ")");
  Probe(capture);
  std::vector<Evidence> ev = capture.evidence();

  std::vector<std::string> ids;
  for (const Evidence& e : ev) {
    ids.push_back(e.id);
    EXPECT_EQ(e.sha256, Sha256Hex(e.raw)) << e.id;
  }
  EXPECT_EQ(ids, (std::vector<std::string>{
                     "dir:/dev/mst",
                     "dir:/sys/bus/platform/devices/MLNXBF04:00",
                     "dir:/nonexistent",
                     "file:/etc/mlnx-release",
                     "file:/sys/bus/platform/devices/MLNXBF04:00/"
                     "lifecycle_state",
                     "file:/etc/missing",
                     "mst.status",
                     "mlxprivhost.query@/dev/mst/mt41692_pciconf0",
                     "mlxprivhost.query@/dev/mst/mt41692_pciconf0.1",
                     "bfver",
                     "cmd:echo 'a b'",
                     "mlxfwmanager.query",
                     "mokutil.sb_state",
                 }));

  const Evidence* mst = Find(ev, "dir:/dev/mst");
  EXPECT_EQ(mst->kind, EvidenceKind::kDir);
  EXPECT_EQ(ToString(mst->raw), "mt41692_pciconf0\nmt41692_pciconf0.1");
  EXPECT_EQ(mst->exit_code, 0);
  EXPECT_EQ(Find(ev, "dir:/nonexistent")->exit_code, 2);
  const Evidence* missing = Find(ev, "file:/etc/missing");
  EXPECT_EQ(missing->exit_code, 2);
  EXPECT_TRUE(missing->raw.empty());
  const Evidence* release = Find(ev, "file:/etc/mlnx-release");
  EXPECT_EQ(release->kind, EvidenceKind::kFile);
  EXPECT_EQ(release->path, "/etc/mlnx-release");
  EXPECT_EQ(ToString(release->raw), "DOCA_2.9.0\n");
  const Evidence* priv =
      Find(ev, "mlxprivhost.query@/dev/mst/mt41692_pciconf0");
  EXPECT_EQ(priv->kind, EvidenceKind::kCommand);
  EXPECT_EQ(priv->argv, MlxprivhostQueryArgv(kMst));
  EXPECT_EQ(ToString(priv->raw), "level  : RESTRICTED\n");
  EXPECT_EQ(ToString(priv->stderr_raw), "-W- something\n");
  EXPECT_EQ(Find(ev, "bfver")->exit_code, 1);
  const Evidence* timed = Find(ev, "cmd:echo 'a b'");
  EXPECT_TRUE(timed->timed_out);
  EXPECT_EQ(timed->exit_code, -1);
  EXPECT_TRUE(Find(ev, "mlxfwmanager.query")->truncated);
  EXPECT_EQ(Find(ev, "mokutil.sb_state")->exit_code, kExitNotInstalled);
  EXPECT_EQ(
      Find(ev, "mlxprivhost.query@/dev/mst/mt41692_pciconf0.1")->exit_code,
      kExitNotInstalled);
}

TEST(CapturingTest, InvalidPathsAndRunErrorsAreNotEvidence) {
  auto live = NewLiveDeviceSource();
  CapturingDeviceSource capture(*live);
  EXPECT_EQ(capture.ReadFile("/../etc/passwd", 10).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(capture.ListDir("relative").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(capture.Run({}, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(capture.evidence().empty());
}

TEST(CapturingTest, TooLargeThenWholeKeepsTheBytes) {
  TempDir dir;
  BuildRecording(dir.path());
  auto source = NewRecordedDeviceSource(dir.path());
  ASSERT_TRUE(source.ok());
  CapturingDeviceSource capture(**source);
  EXPECT_EQ(capture.ReadFile("/boot/big.bin", 100).status().code(),
            StatusCode::kResourceExhausted);
  std::vector<Evidence> first = capture.evidence();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].exit_code, 27);
  EXPECT_TRUE(first[0].raw.empty());

  ASSERT_TRUE(capture.ReadFile("/boot/big.bin", 10000).ok());
  std::vector<Evidence> second = capture.evidence();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].exit_code, 0);
  EXPECT_EQ(second[0].raw.size(), 4096u);

  // Replay answers both reads as the device did.
  auto replay = NewEvidenceDeviceSource(second);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  EXPECT_EQ((*replay)->ReadFile("/boot/big.bin", 100).status().code(),
            StatusCode::kResourceExhausted);
  auto whole = (*replay)->ReadFile("/boot/big.bin", 10000);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 4096u);
}

TEST(RoundTripTest, RecordedCaptureWriteReplay) {
  TempDir a, b;
  BuildRecording(a.path());
  auto source_a = NewRecordedDeviceSource(a.path());
  ASSERT_TRUE(source_a.ok()) << source_a.status().ToString();
  std::vector<Evidence> first = Capture(**source_a);

  const std::string out = b / "rec";
  Status written = WriteRecording(first, out);
  ASSERT_TRUE(written.ok()) << written.ToString();
  auto source_b = NewRecordedDeviceSource(out);
  ASSERT_TRUE(source_b.ok()) << source_b.status().ToString();
  std::vector<Evidence> second = Capture(**source_b);
  EXPECT_EQ(second, first);

  auto from_evidence = NewEvidenceDeviceSource(first);
  ASSERT_TRUE(from_evidence.ok()) << from_evidence.status().ToString();
  EXPECT_EQ(Capture(**from_evidence), first);
}

TEST(RoundTripTest, LayoutOfTheWrittenFolder) {
  TempDir a, b;
  BuildRecording(a.path());
  auto source_a = NewRecordedDeviceSource(a.path());
  ASSERT_TRUE(source_a.ok());
  std::vector<Evidence> ev = Capture(**source_a);
  const std::string out = b / "rec";
  ASSERT_TRUE(WriteRecording(ev, out).ok());

  namespace fs = std::filesystem;
  // Listed device nodes become empty regular files.
  EXPECT_TRUE(fs::is_regular_file(out + "/fs/dev/mst/mt41692_pciconf0"));
  EXPECT_EQ(fs::file_size(out + "/fs/dev/mst/mt41692_pciconf0"), 0u);
  EXPECT_TRUE(fs::is_regular_file(
      out + "/fs/sys/bus/platform/devices/MLNXBF04:00/secure_boot_fuse"));
  // Files read are there with their bytes; failed ones are not.
  EXPECT_EQ(fs::file_size(out + "/fs/etc/mlnx-release"), 11u);
  EXPECT_FALSE(fs::exists(out + "/fs/etc/missing"));
  EXPECT_FALSE(fs::exists(out + "/fs/nonexistent"));
  // Outputs are numbered in evidence order, stderr only when non-empty.
  EXPECT_TRUE(fs::is_regular_file(out + "/out/01-mst.status.txt"));
  EXPECT_TRUE(fs::is_regular_file(
      out + "/out/02-mlxprivhost.query__dev_mst_mt41692_pciconf0.txt"));
  EXPECT_TRUE(fs::is_regular_file(
      out + "/out/02-mlxprivhost.query__dev_mst_mt41692_pciconf0.stderr.txt"));
  EXPECT_FALSE(fs::exists(out + "/out/01-mst.status.stderr.txt"));
  EXPECT_TRUE(fs::is_regular_file(out + "/out/05-cmd_echo__a_b_.txt"));

  auto json = NewLiveDeviceSource()->ReadFile(out + "/commands.json", 1 << 20);
  ASSERT_TRUE(json.ok());
  auto cmds = ParseCommandsJson(*json);
  ASSERT_TRUE(cmds.ok()) << cmds.status().ToString();
  ASSERT_EQ(cmds->size(), 7u);
  EXPECT_EQ((*cmds)[0].argv, MstStatusArgv());
  EXPECT_EQ((*cmds)[0].stdout_path, "out/01-mst.status.txt");
  EXPECT_EQ((*cmds)[4].exit_code, -1);
  EXPECT_TRUE((*cmds)[4].timed_out);
  EXPECT_TRUE((*cmds)[5].truncated);
}

TEST(RoundTripTest, LiveCaptureWriteReplay) {
  TempDir data, b;
  WriteFile(data / "dev/mst/mt41692_pciconf0", "");
  WriteFile(data / "etc/release", "v1\n");
  const std::string mst_dir = data / "dev/mst";
  const std::string release = data / "etc/release";
  const std::string missing = data / "etc/missing";
  auto probe = [&](const DeviceSource& s) {
    CommandOptions options;
    (void)s.ListDir(mst_dir);
    (void)s.ReadFile(release, 100);
    (void)s.ReadFile(missing, 100);
    (void)s.Run({"/bin/echo", "hello"}, options);
    (void)s.Run({"sh", "-c", "echo out; echo err >&2; exit 4"}, options);
    (void)s.Run({"dpuaudit-no-such-tool", "q"}, options);
    CommandOptions small;
    small.max_output_bytes = 1000;
    (void)s.Run({"head", "-c", "5000", "/dev/zero"}, small);
    CommandOptions quick;
    quick.timeout = std::chrono::milliseconds(200);
    (void)s.Run({"sh", "-c", "echo started; exec sleep 5"}, quick);
  };
  auto live = NewLiveDeviceSource();
  CapturingDeviceSource first_capture(*live);
  probe(first_capture);
  std::vector<Evidence> first = first_capture.evidence();
  ASSERT_EQ(first.size(), 8u);
  EXPECT_TRUE(first[6].truncated);
  EXPECT_EQ(first[6].raw.size(), 1000u);
  EXPECT_TRUE(first[7].timed_out);
  EXPECT_EQ(ToString(first[7].raw), "started\n");

  const std::string out = b / "rec";
  Status written = WriteRecording(first, out);
  ASSERT_TRUE(written.ok()) << written.ToString();
  auto replay = NewRecordedDeviceSource(out);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  CapturingDeviceSource second_capture(**replay);
  probe(second_capture);
  EXPECT_EQ(second_capture.evidence(), first);
}

TEST(WriteRecordingTest, RefusesANonEmptyFolder) {
  TempDir dir;
  WriteFile(dir / "something", "x");
  Status s = WriteRecording({}, dir.path());
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), dir.path() + " exists and is not empty.");

  TempDir empty;  // an existing empty folder is fine
  ASSERT_TRUE(WriteRecording({}, empty.path()).ok());
  EXPECT_TRUE(std::filesystem::is_regular_file(empty / "commands.json"));
  auto source = NewRecordedDeviceSource(empty.path());
  EXPECT_TRUE(source.ok()) << source.status().ToString();
}

TEST(WriteRecordingTest, RefusesInvalidEvidenceBeforeWriting) {
  TempDir dir;
  Evidence bad;
  bad.kind = EvidenceKind::kDir;
  bad.path = "/dev/mst";
  bad.id = EvidenceIdForDir(bad.path);
  bad.raw = ToBytes("ok\n..");
  Status s = WriteRecording({bad}, dir / "rec");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "listing of /dev/mst has an invalid entry name \"..\".");
  EXPECT_FALSE(std::filesystem::exists(dir / "rec"));
}

Evidence FileEvidence(const std::string& path, int exit_code,
                      std::string raw = "") {
  Evidence e;
  e.kind = EvidenceKind::kFile;
  e.path = path;
  e.id = EvidenceIdForFile(path);
  e.exit_code = exit_code;
  e.raw = ToBytes(raw);
  e.sha256 = Sha256Hex(e.raw);
  return e;
}

Evidence CommandEvidence(const Argv& argv, int exit_code, std::string out) {
  Evidence e;
  e.kind = EvidenceKind::kCommand;
  e.argv = argv;
  e.id = EvidenceIdForCommand(argv);
  e.exit_code = exit_code;
  e.raw = ToBytes(out);
  e.sha256 = Sha256Hex(e.raw);
  return e;
}

TEST(EvidenceSourceTest, ReproducesFileErrors) {
  auto source = NewEvidenceDeviceSource({
      FileEvidence("/a", 0, "bytes"),
      FileEvidence("/b", 2),
      FileEvidence("/c", 13),
      FileEvidence("/d", 27),
      FileEvidence("/e", 5),
  });
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto a = (*source)->ReadFile("/a", 100);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(ToString(*a), "bytes");
  EXPECT_EQ((*source)->ReadFile("/a", 2).status().code(),
            StatusCode::kResourceExhausted);
  struct Case {
    std::string path;
    StatusCode code;
  };
  const Case cases[] = {
      {"/b", StatusCode::kNotFound},
      {"/c", StatusCode::kPermissionDenied},
      {"/d", StatusCode::kResourceExhausted},
      {"/e", StatusCode::kUnavailable},
      {"/not-captured", StatusCode::kNotFound},
  };
  for (const Case& c : cases) {
    auto got = (*source)->ReadFile(c.path, 100);
    EXPECT_EQ(got.status().code(), c.code) << c.path;
    EXPECT_THAT(got.status().message(), HasSubstr(c.path));
  }
  // And a capture over it records the same exit codes.
  CapturingDeviceSource capture(**source);
  for (const char* p : {"/a", "/b", "/c", "/d", "/e"}) {
    (void)capture.ReadFile(p, 100);
  }
  std::vector<int> codes;
  for (const Evidence& e : capture.evidence()) codes.push_back(e.exit_code);
  EXPECT_EQ(codes, (std::vector<int>{0, 2, 13, 27, 5}));
}

TEST(EvidenceSourceTest, ServesCommandsByExactArgv) {
  Evidence echo = CommandEvidence({"echo", "hi"}, 0, "hi\n");
  echo.stderr_raw = ToBytes("warn");
  auto source = NewEvidenceDeviceSource({echo});
  ASSERT_TRUE(source.ok());
  auto hit = (*source)->Run({"echo", "hi"}, {});
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(ToString(hit->stdout_bytes), "hi\n");
  EXPECT_EQ(ToString(hit->stderr_bytes), "warn");
  EXPECT_FALSE(hit->truncated);
  CommandOptions tiny;
  tiny.max_output_bytes = 1;
  auto cut = (*source)->Run({"echo", "hi"}, tiny);
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(ToString(cut->stdout_bytes), "h");
  EXPECT_TRUE(cut->truncated);
  auto miss = (*source)->Run({"echo", "hi", "there"}, {});
  ASSERT_TRUE(miss.ok());
  EXPECT_EQ(miss->exit_code, kExitNotInstalled);
  EXPECT_TRUE(miss->stdout_bytes.empty());
}

TEST(EvidenceSourceTest, RejectsInconsistentEvidence) {
  struct Case {
    std::vector<Evidence> evidence;
    std::string message;
  };
  Evidence wrong_id = CommandEvidence(MstStatusArgv(), 0, "");
  wrong_id.id = "bfver";
  Evidence bad_code = FileEvidence("/x", 1);
  Evidence bad_path = FileEvidence("x", 0);
  Evidence timed = CommandEvidence({"a"}, 0, "");
  timed.timed_out = true;
  const Case cases[] = {
      {{FileEvidence("/a", 0, "1"), FileEvidence("/a", 0, "2")},
       "evidence[1] repeats id \"file:/a\" of evidence[0]."},
      {{wrong_id},
       "evidence[0].id \"bfver\" does not match its command (expected "
       "\"mst.status\")."},
      {{bad_code}, "evidence[0].exit_code 1 is not one of 0, 2, 5, 13, 27."},
      {{bad_path}, "evidence[0].path: device path \"x\" is not absolute."},
      {{timed},
       "evidence[0].exit_code must be -1 exactly when evidence[0].timed_out "
       "is true."},
  };
  for (const Case& c : cases) {
    auto got = NewEvidenceDeviceSource(c.evidence);
    ASSERT_FALSE(got.ok()) << c.message;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), c.message);
  }
}

TEST(EvidenceSourceTest, ListsDirectories) {
  Evidence dir;
  dir.kind = EvidenceKind::kDir;
  dir.path = "/dev/mst";
  dir.id = EvidenceIdForDir(dir.path);
  dir.raw = ToBytes("a\nb");
  Evidence empty = dir;
  empty.path = "/empty";
  empty.id = EvidenceIdForDir(empty.path);
  empty.raw.clear();
  auto source = NewEvidenceDeviceSource({dir, empty});
  ASSERT_TRUE(source.ok());
  auto names = (*source)->ListDir("/dev/mst");
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"a", "b"}));
  auto none = (*source)->ListDir("/empty");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_EQ((*source)->ListDir("/other").status().code(),
            StatusCode::kNotFound);
  // A dir entry does not make the path readable as a file.
  EXPECT_EQ((*source)->ReadFile("/dev/mst", 10).status().code(),
            StatusCode::kNotFound);
}

}  // namespace
}  // namespace dpuaudit::device
