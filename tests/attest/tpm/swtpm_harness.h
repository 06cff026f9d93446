// A private software TPM for a test: scripts/swtpm.sh (the one recipe the
// demo uses too) in a fresh mkdtemp directory, stopped and removed when the
// SwtpmInstance is destroyed. Header-only; needs the DPUAUDIT_SOURCE_DIR
// compile definition (tests/CMakeLists.txt sets it) and links dpuaudit_device
// (the script runs through the live DeviceSource: fixed argv, no shell).
//
//   TEST(Foo, Bar) {
//     DPUAUDIT_SKIP_WITHOUT_SWTPM();
//     auto tpm = dpuaudit::testing::SwtpmInstance::Start();
//     ASSERT_TRUE(tpm.ok()) << tpm.status().ToString();
//     ... Tpm::Open((*tpm)->tcti()) ...
//   }
//
// What an instance offers (see scripts/swtpm.sh): TPM 2.0 with sha1 and
// sha256 PCR banks, TPM2_Startup done, EK certificate(s) in NV signed by a
// CA of its own (root and issuer PEM in ek_ca_dir()), RSA 2048 by default
// (NV 0x01c00002; swtpm_setup 0.7.1 also adds an ECC P-384 one at
// 0x01c00016), or ECC P-256 only (NV 0x01c0000a) with SwtpmOptions::ecc.
// Manufacturing takes 1.5-4 s (RSA key generation): share one instance
// per test suite where the tests allow it, or start from a shared template
// (SwtpmOptions::shared_identity) where the TPM's identity does not matter.
// swtpm serves one client connection at a time: close a Tpm before a
// tpm2_* tool (or a second Tpm) talks to the same instance.
// Does not: pick the TCTI port itself (the script does, with retries), or
// survive a crash of the test process (the daemon then keeps running until
// killed; its state dir name starts with "dpuaudit-swtpm-").
#ifndef DPUAUDIT_TESTS_TPM_SWTPM_HARNESS_H_
#define DPUAUDIT_TESTS_TPM_SWTPM_HARNESS_H_

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/files.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::testing {

inline std::string SwtpmScript() {
  return std::string(DPUAUDIT_SOURCE_DIR) + "/scripts/swtpm.sh";
}

// "" when every program `scripts/swtpm.sh start` needs is installed
// (looked up on the PATH the live DeviceSource uses); otherwise which are
// missing and the Debian packages that provide them. `ecc` adds the
// tpm2-tools that --ecc needs.
inline std::string SwtpmMissingTools(bool ecc = false) {
  std::vector<std::string> tools = {
      "swtpm", "swtpm_setup", "swtpm_localca", "swtpm_ioctl", "bash", "od"};
  if (ecc) {
    tools.insert(tools.end(),
                 {"tpm2_createek", "tpm2_print", "tpm2_flushcontext",
                  "tpm2_nvdefine", "tpm2_nvwrite", "tpm2_nvundefine"});
  }
  std::string missing;
  for (const std::string& tool : tools) {
    bool found = false;
    std::stringstream path(device::kLiveCommandPath);
    std::string dir;
    while (std::getline(path, dir, ':')) {
      if (::access((dir + "/" + tool).c_str(), X_OK) == 0) {
        found = true;
        break;
      }
    }
    if (!found) missing += (missing.empty() ? "" : ", ") + tool;
  }
  if (missing.empty()) return "";
  return "swtpm test skipped: not installed: " + missing +
         " (Debian packages: swtpm swtpm-tools" + (ecc ? " tpm2-tools" : "") +
         ").";
}

struct SwtpmOptions {
  // EK ECC P-256 (certificate at NV 0x01c0000a, none at 0x01c00002)
  // instead of RSA 2048.
  bool ecc = false;
  // Start from a copy of a TPM state manufactured once per build tree,
  // script version and swtpm installation (in DPUAUDIT_BIN_DIR/../
  // swtpm-templates), instead of manufacturing a new one (1.5-4 s, mostly
  // RSA key generation). Every such instance has the SAME EK, EK
  // certificate, CA and AK: use it where the TPM's identity does not
  // matter, never where two instances stand for two machines. PCRs, NV
  // changes and the running swtpm are still the instance's own.
  bool shared_identity = false;
};

class SwtpmInstance {
 public:
  static StatusOr<std::unique_ptr<SwtpmInstance>> Start(
      const SwtpmOptions& options = {}) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/dpuaudit-swtpm-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return InternalError("mkdtemp failed for " + tmpl + ".");
    }
    std::unique_ptr<SwtpmInstance> inst(new SwtpmInstance(tmpl));
#ifdef DPUAUDIT_BIN_DIR
    if (options.shared_identity) {
      DPA_RETURN_IF_ERROR(CopyTemplate(options.ecc, tmpl));
    }
#endif
    DPA_ASSIGN_OR_RETURN(inst->tcti_, StartIn(tmpl, options.ecc));
    return inst;
  }

  ~SwtpmInstance() {
    // Also after a failed start: the script may have left a daemon.
    (void)Run({"bash", SwtpmScript(), "stop", dir_});
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  SwtpmInstance(const SwtpmInstance&) = delete;
  SwtpmInstance& operator=(const SwtpmInstance&) = delete;

  // "swtpm:host=127.0.0.1,port=P", for Tpm::Open and TPM2TOOLS_TCTI.
  std::string tcti() const { return tcti_; }
  // Root and issuer CA certificates (PEM) of the EK certificates.
  std::string ek_ca_dir() const { return dir_ + "/ek-ca"; }
  std::string state_dir() const { return dir_; }

 private:
  explicit SwtpmInstance(std::string dir) : dir_(std::move(dir)) {}

  static StatusOr<device::CommandResult> Run(
      const std::vector<std::string>& argv) {
    auto live = device::NewLiveDeviceSource();
    device::CommandOptions o;
    o.timeout = std::chrono::milliseconds(120000);
    return live->Run(argv, o);
  }

  // `swtpm.sh start [--ecc] dir`; returns the TCTI string.
  static StatusOr<std::string> StartIn(const std::string& dir, bool ecc) {
    std::vector<std::string> argv = {"bash", SwtpmScript(), "start"};
    if (ecc) argv.push_back("--ecc");
    argv.push_back(dir);
    auto r = Run(argv);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) {
      return UnavailableError("scripts/swtpm.sh start failed (exit " +
                              std::to_string(r->exit_code) +
                              "): " + ToString(r->stderr_bytes));
    }
    auto tcti = ReadFileLimited(dir + "/tcti", 4096);
    if (!tcti.ok()) return tcti.status();
    return ToString(*tcti);
  }

#ifdef DPUAUDIT_BIN_DIR
  // FNV-1a 64 of what the template depends on: the script, the EK type and
  // the installed swtpm / swtpm_setup binaries (size and mtime).
  static std::string TemplateName(bool ecc) {
    std::string key = ecc ? "ecc" : "rsa";
    auto script = ReadFileLimited(SwtpmScript(), 1 << 20);
    if (script.ok()) key += ToString(*script);
    for (const char* tool : {"swtpm", "swtpm_setup", "swtpm_localca"}) {
      std::stringstream path(device::kLiveCommandPath);
      std::string dir;
      while (std::getline(path, dir, ':')) {
        struct stat st;
        if (::stat((dir + "/" + tool).c_str(), &st) == 0) {
          key += std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
          break;
        }
      }
    }
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s-%016llx", ecc ? "ecc" : "rsa",
                  static_cast<unsigned long long>(h));
    return buf;
  }

  // Makes the template once (under an flock, so parallel test processes
  // wait for the first), then copies it into `dir`.
  static Status CopyTemplate(bool ecc, const std::string& dir) {
    const std::string root =
        std::string(DPUAUDIT_BIN_DIR) + "/../swtpm-templates";
    if (::mkdir(root.c_str(), 0700) != 0 && errno != EEXIST) {
      return InternalError("cannot create " + root + ".");
    }
    const std::string name = TemplateName(ecc);
    const std::string final_dir = root + "/" + name;
    {
      int fd =
          ::open((root + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0) return InternalError("cannot open " + root + "/.lock.");
      ::flock(fd, LOCK_EX);
      Status made = OkStatus();
      std::error_code ec;
      if (!std::filesystem::exists(final_dir + "/tpm/tpm2-00.permall", ec)) {
        const std::string tmp = root + "/" + name + ".tmp";
        std::filesystem::remove_all(tmp, ec);
        auto started = StartIn(tmp, ecc);
        (void)Run({"bash", SwtpmScript(), "stop", tmp});
        if (started.ok()) {
          std::filesystem::remove_all(final_dir, ec);  // a partial one
          std::filesystem::rename(tmp, final_dir, ec);
          if (ec)
            made = InternalError("cannot rename " + tmp + ": " + ec.message());
        } else {
          made = started.status();
          std::filesystem::remove_all(tmp, ec);
        }
      }
      ::close(fd);  // releases the lock
      DPA_RETURN_IF_ERROR(made);
    }
    std::error_code ec;
    std::filesystem::copy(final_dir, dir,
                          std::filesystem::copy_options::recursive, ec);
    if (ec)
      return InternalError("cannot copy " + final_dir + ": " + ec.message());
    return OkStatus();
  }
#endif

  std::string dir_;
  std::string tcti_;
};

}  // namespace dpuaudit::testing

// Skips the current test (or, in SetUpTestSuite, the suite) with the reason
// printed when swtpm is not installed.
#define DPUAUDIT_SKIP_WITHOUT_SWTPM()                                          \
  do {                                                                         \
    std::string dpa_swtpm_missing_ = ::dpuaudit::testing::SwtpmMissingTools(); \
    if (!dpa_swtpm_missing_.empty()) GTEST_SKIP() << dpa_swtpm_missing_;       \
  } while (false)

#endif  // DPUAUDIT_TESTS_TPM_SWTPM_HARNESS_H_
