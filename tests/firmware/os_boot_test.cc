#include "firmware/os_boot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/crypto.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "isolation/shared_fixtures.h"
#include "testing/fake_device_source.h"
#include "testing/load_option_bytes.h"
#include "testing/temp_dir.h"
#include "uefi/guid.h"

namespace dpuaudit::firmware {
namespace {

using ::testing::ElementsAre;
using testing::FakeDeviceSource;
using namespace ::dpuaudit::testing;  // load option byte builders
using ::testing::HasSubstr;
using ::testing::Pair;

std::string Efivar(const std::string& name) {
  return std::string(device::kEfivarsDir) + "/" + name + "-" +
         uefi::kEfiGlobalVariableText;
}

// ---- kernel command line ----

TEST(KernelCmdlineTest, SplitsLikeTheKernel) {
  StatusOr<KernelCmdline> c = ParseKernelCmdline(
      "BOOT_IMAGE=/vmlinuz-5.15.0-1035-bluefield root=UUID=a3d5 ro  "
      "console=hvc0\tquiet dyndbg=\"file foo.c +p\" \"acpi=a b\" "
      "=odd x=\"\" BOOT_IMAGE=/second\n");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->raw,
            "BOOT_IMAGE=/vmlinuz-5.15.0-1035-bluefield root=UUID=a3d5 ro  "
            "console=hvc0\tquiet dyndbg=\"file foo.c +p\" \"acpi=a b\" "
            "=odd x=\"\" BOOT_IMAGE=/second");
  EXPECT_EQ(c->boot_image, "/vmlinuz-5.15.0-1035-bluefield");  // first wins
  EXPECT_THAT(c->params,
              ElementsAre(Pair("BOOT_IMAGE", "/vmlinuz-5.15.0-1035-bluefield"),
                          Pair("root", "UUID=a3d5"), Pair("ro", ""),
                          Pair("console", "hvc0"), Pair("quiet", ""),
                          Pair("dyndbg", "file foo.c +p"), Pair("acpi", "a b"),
                          Pair("=odd", ""), Pair("x", ""),
                          Pair("BOOT_IMAGE", "/second")));
}

TEST(KernelCmdlineTest, FirstBootImageWinsEvenWhenEmpty) {
  StatusOr<KernelCmdline> c = ParseKernelCmdline("BOOT_IMAGE= BOOT_IMAGE=/x");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->boot_image, "");
  EXPECT_EQ(c->params.size(), 2u);
}

TEST(KernelCmdlineTest, EmptyAndLimit) {
  StatusOr<KernelCmdline> c = ParseKernelCmdline("\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->raw, "");
  EXPECT_TRUE(c->params.empty());
  EXPECT_EQ(c->boot_image, "");
  const std::string max(4096, 'a');
  c = ParseKernelCmdline(max);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->params.size(), 1u);
}

TEST(KernelCmdlineTest, Errors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string(4097, 'a'),
       "kernel command line is 4097 bytes; the limit is 4096."},
      {std::string("ro\0quiet", 8),
       "kernel command line has a NUL byte at offset 2."},
      {"ro dyndbg=\"file foo.c",
       "kernel command line has an unterminated "
       "quote in the parameter at offset 3."},
      {"a \"b",
       "kernel command line has an unterminated quote in the "
       "parameter at offset 2."},
      {"root=\xff", "kernel command line is not valid UTF-8 at offset 5."},
      {"x=\xc0\xaf", "kernel command line is not valid UTF-8 at offset 2."},
      {"x=\xed\xa0\x80", "kernel command line is not valid UTF-8 at offset 2."},
  };
  for (const auto& [text, message] : cases) {
    StatusOr<KernelCmdline> c = ParseKernelCmdline(text);
    ASSERT_FALSE(c.ok()) << message;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(c.status().message(), message);
  }
  EXPECT_TRUE(ParseKernelCmdline("x=caf\xc3\xa9 y=\xf0\x9d\x84\x9e").ok());
}

// ---- MeasureOsBoot over a fake source ----

std::string OneShotHex(const EVP_MD* md, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EXPECT_EQ(EVP_Digest(data.data(), data.size(), out, &n, md, nullptr), 1);
  return HexEncode(ByteView(out, n));
}

constexpr char kKernel[] = "/boot/vmlinuz-5.15.0-1035-bluefield";
constexpr char kInitrd[] = "/boot/initrd.img-5.15.0-1035-bluefield";
constexpr char kShim[] = "/boot/efi/EFI/ubuntu/shimaa64.efi";
constexpr char kGrub[] = "/boot/efi/EFI/ubuntu/grubaa64.efi";

// A booted BlueField: everything present.
FakeDeviceSource HealthyDevice(const std::string& kernel_bytes) {
  FakeDeviceSource s;
  s.File(device::kProcCmdlinePath,
         "BOOT_IMAGE=/vmlinuz-5.15.0-1035-bluefield root=UUID=x ro\n")
      .File(kKernel, kernel_bytes)
      .File(kInitrd, "initrd bytes")
      .File(kShim, "shim bytes")
      .File(kGrub, "grub bytes")
      .File(Efivar("BootCurrent"), ToString(BootCurrentFile(1)))
      .File(Efivar("Boot0001"),
            ToString(LoadOptionFile(1, u"ubuntu0", ShimList())));
  return s;
}

void ExpectMeasured(const OsArtefact& a, const std::string& role,
                    const std::string& path, const std::string& named_by,
                    const std::string& content) {
  EXPECT_EQ(a.role, role);
  EXPECT_TRUE(a.status.ok()) << role << ": " << a.status.ToString();
  EXPECT_EQ(a.path, path) << role;
  EXPECT_EQ(a.named_by, named_by) << role;
  EXPECT_EQ(a.size, content.size()) << role;
  EXPECT_EQ(a.sha256, OneShotHex(EVP_sha256(), content)) << role;
  EXPECT_EQ(a.sha384, OneShotHex(EVP_sha384(), content)) << role;
}

TEST(MeasureOsBootTest, MeasuresAllFourArtefacts) {
  // 200 KiB + 3: several stream chunks, not a multiple of the chunk size.
  std::string kernel(200 * 1024 + 3, '\0');
  for (size_t i = 0; i < kernel.size(); ++i) {
    kernel[i] = static_cast<char>((i * 131) ^ (i >> 7));
  }
  FakeDeviceSource s = HealthyDevice(kernel);
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_TRUE(info.cmdline_status.ok());
  EXPECT_EQ(info.cmdline.boot_image, "/vmlinuz-5.15.0-1035-bluefield");
  EXPECT_EQ(info.cmdline_evidence_id, "file:/proc/cmdline");
  EXPECT_TRUE(info.efi_status.ok()) << info.efi_status.ToString();
  EXPECT_EQ(info.boot_current, 1);
  ASSERT_TRUE(info.boot_option.has_value());
  EXPECT_EQ(info.boot_option->description, "ubuntu0");
  ASSERT_EQ(info.artefacts.size(), 4u);
  ExpectMeasured(info.artefacts[0], "kernel", kKernel, "cmdline BOOT_IMAGE",
                 kernel);
  ExpectMeasured(info.artefacts[1], "initrd", kInitrd, "cmdline BOOT_IMAGE",
                 "initrd bytes");
  ExpectMeasured(info.artefacts[2], "shim", kShim, "efivar Boot0001",
                 "shim bytes");
  ExpectMeasured(info.artefacts[3], "grub", kGrub, "efivar Boot0001",
                 "grub bytes");
}

TEST(MeasureOsBootTest, KernelAtTheGivenPathAndGrubDevicePrefix) {
  FakeDeviceSource s = HealthyDevice("k");
  // Root file system layout: BOOT_IMAGE names /boot/... with a GRUB device.
  s.File(device::kProcCmdlinePath,
         "BOOT_IMAGE=(hd0,gpt2)/boot/vmlinuz-5.15.0-1035-bluefield ro");
  OsBootInfo info = MeasureOsBoot(s);
  ExpectMeasured(info.artefacts[0], "kernel", kKernel, "cmdline BOOT_IMAGE",
                 "k");
  ExpectMeasured(info.artefacts[1], "initrd", kInitrd, "cmdline BOOT_IMAGE",
                 "initrd bytes");
}

TEST(MeasureOsBootTest, InitrdBesideTheKernel) {
  FakeDeviceSource s;
  s.File(device::kProcCmdlinePath, "BOOT_IMAGE=/images/vmlinuz-6.1 ro")
      .File("/images/vmlinuz-6.1", "k")
      .File("/images/initrd.img-6.1", "i");
  OsBootInfo info = MeasureOsBoot(s);
  ExpectMeasured(info.artefacts[0], "kernel", "/images/vmlinuz-6.1",
                 "cmdline BOOT_IMAGE", "k");
  ExpectMeasured(info.artefacts[1], "initrd", "/images/initrd.img-6.1",
                 "cmdline BOOT_IMAGE", "i");
}

TEST(MeasureOsBootTest, MissingBootImage) {
  FakeDeviceSource s = HealthyDevice("k");
  s.File(device::kProcCmdlinePath, "root=UUID=x ro\n");
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_TRUE(info.cmdline_status.ok());
  for (int i : {0, 1}) {
    const OsArtefact& a = info.artefacts[static_cast<size_t>(i)];
    EXPECT_EQ(a.status.code(), StatusCode::kNotFound) << a.role;
    EXPECT_EQ(a.status.message(),
              "the kernel command line has no BOOT_IMAGE parameter.");
    EXPECT_EQ(a.path, "");
    EXPECT_EQ(a.named_by, "cmdline BOOT_IMAGE");
  }
  EXPECT_TRUE(info.artefacts[2].status.ok());  // EFI side unaffected
}

TEST(MeasureOsBootTest, MissingInitrd) {
  FakeDeviceSource s;
  s.File(device::kProcCmdlinePath, "BOOT_IMAGE=/vmlinuz-5.15.0-1035-bluefield")
      .File(kKernel, "k");
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_TRUE(info.artefacts[0].status.ok());
  const OsArtefact& initrd = info.artefacts[1];
  EXPECT_EQ(initrd.status.code(), StatusCode::kNotFound);
  EXPECT_EQ(initrd.status.message(),
            "initrd not found (tried /boot/initrd.img-5.15.0-1035-bluefield).");
  EXPECT_EQ(initrd.path, "");
}

TEST(MeasureOsBootTest, MissingKernelListsBothCandidates) {
  FakeDeviceSource s;
  s.File(device::kProcCmdlinePath, "BOOT_IMAGE=/vmlinuz-6.1");
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_EQ(info.artefacts[0].status,
            NotFoundError("kernel not found (tried /vmlinuz-6.1, "
                          "/boot/vmlinuz-6.1)."));
  // Beside the kernel's (unfound) BOOT_IMAGE directory "/" too.
  EXPECT_EQ(info.artefacts[1].status.ToString(),
            "NOT_FOUND: initrd not found (tried /boot/initrd.img-6.1, "
            "/initrd.img-6.1).");
}

TEST(MeasureOsBootTest, KernelNotNamedVmlinuz) {
  FakeDeviceSource s;
  s.File(device::kProcCmdlinePath, "BOOT_IMAGE=/Image").File("/Image", "k");
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_TRUE(info.artefacts[0].status.ok());
  EXPECT_EQ(info.artefacts[1].status,
            FailedPreconditionError("kernel file name 'Image' is not "
                                    "vmlinuz-<release>, so the initrd name is "
                                    "unknown."));
}

TEST(MeasureOsBootTest, RelativeBootImage) {
  FakeDeviceSource s;
  s.File(device::kProcCmdlinePath, "BOOT_IMAGE=vmlinuz-6.1");
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_EQ(info.artefacts[0].status,
            InvalidArgumentError("BOOT_IMAGE 'vmlinuz-6.1' is not an absolute "
                                 "path."));
}

TEST(MeasureOsBootTest, UnreadableCmdline) {
  FakeDeviceSource s;  // no /proc/cmdline at all
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_EQ(info.cmdline_status.code(), StatusCode::kNotFound);
  EXPECT_EQ(info.cmdline_evidence_id, "file:/proc/cmdline");
  EXPECT_EQ(info.artefacts[0].status.code(), StatusCode::kNotFound);
  EXPECT_EQ(info.artefacts[0].status.message(),
            "no kernel command line: /proc/cmdline not found.");

  s.File(device::kProcCmdlinePath, "a \"b");
  info = MeasureOsBoot(s);
  EXPECT_EQ(info.cmdline_status,
            InvalidArgumentError("/proc/cmdline: kernel command line has an "
                                 "unterminated quote in the parameter at "
                                 "offset 2."));
}

TEST(MeasureOsBootTest, NoEfivars) {
  FakeDeviceSource s;
  s.File(device::kProcCmdlinePath, "ro");
  OsBootInfo info = MeasureOsBoot(s);
  const std::string msg =
      "BootCurrent: " + Efivar("BootCurrent") + " not found.";
  EXPECT_EQ(info.efi_status, NotFoundError(msg));
  EXPECT_FALSE(info.boot_current.has_value());
  EXPECT_FALSE(info.boot_option.has_value());
  for (int i : {2, 3}) {
    const OsArtefact& a = info.artefacts[static_cast<size_t>(i)];
    EXPECT_EQ(a.status, NotFoundError(msg)) << a.role;
    EXPECT_EQ(a.named_by, "efivar BootCurrent");
  }
}

TEST(MeasureOsBootTest, BootCurrentPointsAtAMissingEntry) {
  FakeDeviceSource s = HealthyDevice("k");
  s.File(Efivar("BootCurrent"), ToString(BootCurrentFile(0x000A)));
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_EQ(info.boot_current, 0x000A);
  EXPECT_FALSE(info.boot_option.has_value());
  EXPECT_EQ(info.efi_status,
            NotFoundError("Boot000A: " + Efivar("Boot000A") + " not found."));
  EXPECT_EQ(info.artefacts[2].named_by, "efivar Boot000A");
  EXPECT_EQ(info.artefacts[2].status, info.efi_status);
  EXPECT_EQ(info.artefacts[3].status, info.efi_status);
  EXPECT_TRUE(info.artefacts[0].status.ok());  // kernel side unaffected
}

TEST(MeasureOsBootTest, BadBootCurrent) {
  FakeDeviceSource s = HealthyDevice("k");
  s.File(Efivar("BootCurrent"), std::string("\x06\0\0\0\x01", 5));
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_EQ(info.efi_status,
            InvalidArgumentError("BootCurrent: BootCurrent is 5 bytes; "
                                 "expected 6 (4 attribute bytes, then a "
                                 "UINT16)."));
}

TEST(MeasureOsBootTest, TruncatedLoadOption) {
  FakeDeviceSource s = HealthyDevice("k");
  Bytes opt = LoadOptionFile(1, u"ubuntu0", ShimList());
  opt.resize(opt.size() - 10);  // cuts into the file-path node
  s.File(Efivar("Boot0001"), ToString(opt));
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_EQ(info.efi_status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(info.efi_status.message(),
            "Boot0001: file path list at offset 26 (length 100) runs past the "
            "end of the data (90 bytes left).");
  EXPECT_EQ(info.artefacts[2].status, info.efi_status);
  EXPECT_EQ(info.artefacts[2].path, "");
}

TEST(MeasureOsBootTest, NodePastTheListAndOddFilePath) {
  FakeDeviceSource s = HealthyDevice("k");
  Bytes list = HdNode();  // at 26..67
  Bytes f = FileNode(u"\\EFI\\ubuntu\\shimaa64.efi");
  f[2] = 0xff;  // Length 255 > 58 bytes left (54 + end node 4)
  Append(list, f);
  Append(list, EndNode());
  s.File(Efivar("Boot0001"), ToString(LoadOptionFile(1, u"ubuntu0", list)));
  OsBootInfo info = MeasureOsBoot(s);
  EXPECT_EQ(info.efi_status,
            InvalidArgumentError("Boot0001: device path node at offset 68 runs "
                                 "past the file path list (length 255 > 58)."));

  Bytes odd = Node(4, 4, Bytes{'\\', 0, 'E'});
  Append(odd, EndNode());
  s.File(Efivar("Boot0001"), ToString(LoadOptionFile(1, u"ubuntu0", odd)));
  info = MeasureOsBoot(s);
  EXPECT_EQ(info.efi_status,
            InvalidArgumentError("Boot0001: file path node at offset 26 has "
                                 "odd length 7."));
}

TEST(MeasureOsBootTest, GrubMissingAndCustomOptions) {
  FakeDeviceSource s = HealthyDevice("k");
  OsBootOptions options;
  options.grub_file = "grubx64.efi";
  OsBootInfo info = MeasureOsBoot(s, options);
  EXPECT_TRUE(info.artefacts[2].status.ok());
  EXPECT_EQ(info.artefacts[3].status,
            NotFoundError("grub not found (tried "
                          "/boot/efi/EFI/ubuntu/grubx64.efi)."));

  options = OsBootOptions{};
  options.esp_mount = "/efi/";
  s.File("/efi/EFI/ubuntu/shimaa64.efi", "other shim");
  info = MeasureOsBoot(s, options);
  ExpectMeasured(info.artefacts[2], "shim", "/efi/EFI/ubuntu/shimaa64.efi",
                 "efivar Boot0001", "other shim");
}

TEST(MeasureOsBootTest, TooLargeArtefact) {
  FakeDeviceSource s = HealthyDevice(std::string(100, 'k'));
  OsBootOptions options;
  options.max_artefact_bytes = 99;
  OsBootInfo info = MeasureOsBoot(s, options);
  EXPECT_EQ(info.artefacts[0].status,
            ResourceExhaustedError(std::string(kKernel) +
                                   " is larger than 99 bytes."));
  EXPECT_EQ(info.artefacts[0].path, kKernel);
  EXPECT_TRUE(info.artefacts[1].status.ok());  // 12 bytes
}

// ---- MeasureOsBoot through recorded device folders ----

void WriteFile(const std::string& path, const std::string& data) {
  std::filesystem::create_directories(
      std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << data;
  ASSERT_TRUE(out.good()) << path;
}

// The first field printed by `tool path` (sha256sum / sha384sum).
std::string DigestWithCoreutils(const std::string& tool,
                                const std::string& path) {
  const std::string cmd = tool + " '" + path + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[256] = {};
  std::string out;
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  ::pclose(p);
  return out.substr(0, out.find(' '));
}

bool HaveCoreutils() {
  return std::system("sha256sum /dev/null >/dev/null 2>&1") == 0 &&
         std::system("sha384sum /dev/null >/dev/null 2>&1") == 0;
}

void ExpectMatchesCoreutils(const OsArtefact& a, const std::string& fs_root) {
  ASSERT_TRUE(a.status.ok()) << a.role << ": " << a.status.ToString();
  const std::string file = fs_root + a.path;
  EXPECT_EQ(a.size, std::filesystem::file_size(file)) << a.role;
  EXPECT_EQ(a.sha256, DigestWithCoreutils("sha256sum", file)) << a.role;
  EXPECT_EQ(a.sha384, DigestWithCoreutils("sha384sum", file)) << a.role;
}

TEST(MeasureOsBootRecordedTest, TempRecordingMatchesCoreutils) {
  if (!HaveCoreutils()) GTEST_SKIP() << "sha256sum/sha384sum not installed";
  testing::TempDir dir("os-boot");
  const std::string fs = dir / "fs";
  std::string kernel(300000, '\0');
  for (size_t i = 0; i < kernel.size(); ++i) {
    kernel[i] = static_cast<char>(i * 7 + (i >> 9));
  }
  WriteFile(fs + "/proc/cmdline",
            "BOOT_IMAGE=/vmlinuz-5.15.0-1035-bluefield root=UUID=x ro "
            "console=hvc0\n");
  WriteFile(fs + "/boot/vmlinuz-5.15.0-1035-bluefield", kernel);
  WriteFile(fs + "/boot/initrd.img-5.15.0-1035-bluefield", "initramfs\n");
  WriteFile(fs + Efivar("BootCurrent"), ToString(BootCurrentFile(1)));
  WriteFile(fs + Efivar("Boot0001"),
            ToString(LoadOptionFile(1, u"ubuntu0", ShimList())));
  WriteFile(fs + kShim, std::string(4096, 's'));
  WriteFile(fs + kGrub, "");  // empty file: still measured
  StatusOr<std::unique_ptr<device::DeviceSource>> src =
      device::NewRecordedDeviceSource(dir.path());
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  OsBootInfo info = MeasureOsBoot(**src);
  EXPECT_TRUE(info.cmdline_status.ok()) << info.cmdline_status.ToString();
  EXPECT_TRUE(info.efi_status.ok()) << info.efi_status.ToString();
  ASSERT_EQ(info.artefacts.size(), 4u);
  EXPECT_EQ(info.artefacts[0].path, kKernel);
  EXPECT_EQ(info.artefacts[1].path, kInitrd);
  EXPECT_EQ(info.artefacts[2].path, kShim);
  EXPECT_EQ(info.artefacts[3].path, kGrub);
  for (const OsArtefact& a : info.artefacts) ExpectMatchesCoreutils(a, fs);
  EXPECT_EQ(info.artefacts[3].sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  // Remove the initrd and the Boot0001 entry: per-artefact errors only.
  std::filesystem::remove(fs + kInitrd);
  std::filesystem::remove(fs + Efivar("Boot0001"));
  info = MeasureOsBoot(**src);
  EXPECT_TRUE(info.artefacts[0].status.ok());
  EXPECT_EQ(info.artefacts[1].status.code(), StatusCode::kNotFound);
  EXPECT_EQ(info.efi_status.code(), StatusCode::kNotFound);
  EXPECT_THAT(info.efi_status.message(), HasSubstr("Boot0001: "));
  EXPECT_EQ(info.artefacts[2].status.code(), StatusCode::kNotFound);
}

TEST(MeasureOsBootRecordedTest, ProjectFixtureBf3ZeroTrust) {
  if (!HaveCoreutils()) GTEST_SKIP() << "sha256sum/sha384sum not installed";
  const std::string dir = testing::ProjectFixturePath("bf3-zero-trust");
  StatusOr<std::unique_ptr<device::DeviceSource>> src =
      device::NewRecordedDeviceSource(dir);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  OsBootInfo info = MeasureOsBoot(**src);
  EXPECT_EQ(info.cmdline.boot_image, "/vmlinuz-5.15.0-1035-bluefield");
  EXPECT_EQ(info.boot_current, 1);
  ASSERT_TRUE(info.boot_option.has_value()) << info.efi_status.ToString();
  EXPECT_EQ(info.boot_option->description, "ubuntu0");
  EXPECT_EQ(info.boot_option->file_path, "\\EFI\\ubuntu\\shimaa64.efi");
  ASSERT_EQ(info.artefacts.size(), 4u);
  for (const OsArtefact& a : info.artefacts) {
    ExpectMatchesCoreutils(a, dir + "/fs");
  }
  EXPECT_EQ(info.artefacts[0].size, 6000u);
  EXPECT_EQ(info.artefacts[3].path, kGrub);
}

// ---- JSON ----

void ExpectSameInfo(const OsBootInfo& a, const OsBootInfo& b) {
  EXPECT_EQ(a.cmdline_status, b.cmdline_status);
  EXPECT_EQ(a.cmdline.raw, b.cmdline.raw);
  EXPECT_EQ(a.cmdline.boot_image, b.cmdline.boot_image);
  EXPECT_EQ(a.cmdline.params, b.cmdline.params);
  EXPECT_EQ(a.cmdline_evidence_id, b.cmdline_evidence_id);
  EXPECT_EQ(a.efi_status, b.efi_status);
  EXPECT_EQ(a.boot_current, b.boot_current);
  ASSERT_EQ(a.boot_option.has_value(), b.boot_option.has_value());
  if (a.boot_option) {
    EXPECT_EQ(a.boot_option->description, b.boot_option->description);
    EXPECT_EQ(a.boot_option->file_path, b.boot_option->file_path);
  }
  ASSERT_EQ(a.artefacts.size(), b.artefacts.size());
  for (size_t i = 0; i < a.artefacts.size(); ++i) {
    const OsArtefact& x = a.artefacts[i];
    const OsArtefact& y = b.artefacts[i];
    EXPECT_EQ(x.role, y.role);
    EXPECT_EQ(x.path, y.path);
    EXPECT_EQ(x.named_by, y.named_by);
    EXPECT_EQ(x.status, y.status);
    EXPECT_EQ(x.size, y.size);
    EXPECT_EQ(x.sha256, y.sha256);
    EXPECT_EQ(x.sha384, y.sha384);
  }
}

TEST(OsBootJsonTest, HealthyShapeAndRoundTrip) {
  FakeDeviceSource s = HealthyDevice("k");
  OsBootInfo info = MeasureOsBoot(s);
  nlohmann::json j = OsBootJson(info);
  EXPECT_EQ(j["cmdline"],
            "BOOT_IMAGE=/vmlinuz-5.15.0-1035-bluefield root=UUID=x ro");
  EXPECT_FALSE(j.contains("cmdline_error"));
  EXPECT_EQ(j["boot_current"], "0001");
  EXPECT_EQ(j["boot_entry"],
            nlohmann::json({{"description", "ubuntu0"},
                            {"file_path", "\\EFI\\ubuntu\\shimaa64.efi"}}));
  EXPECT_FALSE(j.contains("efi_error"));
  ASSERT_EQ(j["artefacts"].size(), 4u);
  EXPECT_EQ(j["artefacts"][0],
            nlohmann::json({{"role", "kernel"},
                            {"path", kKernel},
                            {"named_by", "cmdline BOOT_IMAGE"},
                            {"size", 1},
                            {"sha256", OneShotHex(EVP_sha256(), "k")},
                            {"sha384", OneShotHex(EVP_sha384(), "k")}}));
  // Through text, as the verifier receives it.
  StatusOr<OsBootInfo> back = ParseOsBootJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameInfo(info, *back);
}

TEST(OsBootJsonTest, FailuresRoundTripWithTheirCodes) {
  FakeDeviceSource s;
  s.File(Efivar("BootCurrent"), ToString(BootCurrentFile(0x0B)));
  OsBootInfo info = MeasureOsBoot(s);
  nlohmann::json j = OsBootJson(info);
  EXPECT_TRUE(j["cmdline"].is_null());
  EXPECT_EQ(j["cmdline_error"], "NOT_FOUND: /proc/cmdline not found.");
  EXPECT_EQ(j["boot_current"], "000B");
  EXPECT_TRUE(j["boot_entry"].is_null());
  EXPECT_EQ(j["efi_error"],
            "NOT_FOUND: Boot000B: " + Efivar("Boot000B") + " not found.");
  EXPECT_EQ(j["artefacts"][0],
            nlohmann::json({{"role", "kernel"},
                            {"path", ""},
                            {"named_by", "cmdline BOOT_IMAGE"},
                            {"error",
                             "NOT_FOUND: no kernel command line: "
                             "/proc/cmdline not found."}}));
  StatusOr<OsBootInfo> back = ParseOsBootJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameInfo(info, *back);
}

TEST(OsBootJsonTest, StrictParsingNamesThePath) {
  FakeDeviceSource s = HealthyDevice("k");
  const nlohmann::json good = OsBootJson(MeasureOsBoot(s));
  ASSERT_TRUE(ParseOsBootJson(good).ok());
  using Edit = std::function<void(nlohmann::json&)>;
  const std::vector<std::pair<Edit, std::string>> cases = {
      {[](auto& j) { j = nlohmann::json::array(); }, "os must be an object."},
      {[](auto& j) { j["extra"] = 1; }, "os has unknown member \"extra\"."},
      {[](auto& j) { j.erase("artefacts"); }, "os.artefacts is missing."},
      {[](auto& j) { j["cmdline"] = 5; },
       "os.cmdline must be a string or null."},
      {[](auto& j) { j["cmdline_error"] = "NOT_FOUND: x"; },
       "os.cmdline_error must be absent when cmdline is set."},
      {[](auto& j) { j["cmdline"] = nullptr; },
       "os.cmdline_error is required when cmdline is null."},
      {[](auto& j) {
         j["cmdline"] = nullptr;
         j["cmdline_error"] = "it broke";
       },
       "os.cmdline_error must read \"<STATUS_CODE>: <message>\"."},
      {[](auto& j) {
         j["cmdline"] = nullptr;
         j["cmdline_error"] = "OK: fine";
       },
       "os.cmdline_error must read \"<STATUS_CODE>: <message>\"."},
      {[](auto& j) { j["cmdline"] = "a \"b"; },
       "os.cmdline: kernel command line has an unterminated quote in the "
       "parameter at offset 2."},
      {[](auto& j) { j["cmdline"] = "ro\n"; },
       "os.cmdline must not end with a newline."},
      {[](auto& j) { j["boot_current"] = "0x01"; },
       "os.boot_current must be 4 upper-case hex digits."},
      {[](auto& j) { j["boot_current"] = "000b"; },
       "os.boot_current must be 4 upper-case hex digits."},
      {[](auto& j) { j["boot_current"] = 1; },
       "os.boot_current must be a string or null."},
      {[](auto& j) { j["boot_current"] = nullptr; },
       "os.boot_current must be set when boot_entry is."},
      {[](auto& j) { j["boot_entry"]["attributes"] = 1; },
       "os.boot_entry has unknown member \"attributes\"."},
      {[](auto& j) { j["boot_entry"]["file_path"] = ""; },
       "os.boot_entry.file_path must not be empty."},
      {[](auto& j) { j["boot_entry"].erase("description"); },
       "os.boot_entry.description is missing."},
      {[](auto& j) { j["boot_entry"] = nullptr; },
       "os.efi_error is required when boot_entry is null."},
      {[](auto& j) { j["efi_error"] = "NOT_FOUND: x"; },
       "os.efi_error must be absent when boot_entry is set."},
      {[](auto& j) { j["artefacts"] = nlohmann::json::object(); },
       "os.artefacts must be an array."},
      {[](auto& j) {
         for (int i = 0; i < 5; ++i)
           j["artefacts"].push_back(j["artefacts"][0]);
       },
       "os.artefacts has more than 8 entries."},
      {[](auto& j) { j["artefacts"][1] = j["artefacts"][0]; },
       "os.artefacts[1].role repeats \"kernel\"."},
      {[](auto& j) { j["artefacts"][2]["role"] = "bootloader"; },
       "os.artefacts[2].role \"bootloader\" is not kernel, initrd, shim or "
       "grub."},
      {[](auto& j) { j["artefacts"][0]["sha256"] = std::string(64, 'A'); },
       "os.artefacts[0].sha256 must be 64 lower-case hex digits."},
      {[](auto& j) { j["artefacts"][0]["sha384"] = "00"; },
       "os.artefacts[0].sha384 must be 96 lower-case hex digits."},
      {[](auto& j) { j["artefacts"][0]["size"] = -1; },
       "os.artefacts[0].size must be a non-negative integer."},
      {[](auto& j) { j["artefacts"][0]["size"] = 1.5; },
       "os.artefacts[0].size must be a non-negative integer."},
      {[](auto& j) { j["artefacts"][0].erase("size"); },
       "os.artefacts[0].size is missing."},
      {[](auto& j) { j["artefacts"][0]["path"] = "boot/vmlinuz"; },
       "os.artefacts[0].path is not a valid path."},
      {[](auto& j) { j["artefacts"][0]["path"] = ""; },
       "os.artefacts[0].path must name the measured file."},
      {[](auto& j) { j["artefacts"][0]["named_by"] = nullptr; },
       "os.artefacts[0].named_by must be a string."},
      {[](auto& j) { j["artefacts"][0]["error"] = "NOT_FOUND: x"; },
       "os.artefacts[0].size must be absent when error is set."},
      {[](auto& j) { j["artefacts"][0]["why"] = "x"; },
       "os.artefacts[0] has unknown member \"why\"."},
  };
  for (const auto& [edit, message] : cases) {
    nlohmann::json j = good;
    edit(j);
    StatusOr<OsBootInfo> info = ParseOsBootJson(j);
    ASSERT_FALSE(info.ok()) << message;
    EXPECT_EQ(info.status().code(), StatusCode::kInvalidArgument) << message;
    EXPECT_EQ(info.status().message(), message);
  }
}

}  // namespace
}  // namespace dpuaudit::firmware
