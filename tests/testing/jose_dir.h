// Finding or installing npm's jose for the independent JOSE checks
// (tests/report/interop_test.cc, tests/integration/bundle_test.cc): the
// folder holding node_modules/jose, installed into the build tree under a
// lock (ctest runs test cases in parallel), a failed install remembered for
// 10 minutes. Header-only; tests only.
#ifndef DPUAUDIT_TESTS_TESTING_JOSE_DIR_H_
#define DPUAUDIT_TESTS_TESTING_JOSE_DIR_H_

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace dpuaudit::testing::jose {

namespace fs = std::filesystem;

inline std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteAll(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary);
  out << s;
}

inline int RunShell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}
// Finds or installs jose; returns the folder holding interop.mjs and
// node_modules/jose, or the reason it cannot.
inline std::optional<fs::path> JoseDir(std::string* why) {
  if (RunShell("command -v node >/dev/null 2>&1") != 0) {
    *why = "node is not installed";
    return std::nullopt;
  }
  fs::path src = fs::path(DPUAUDIT_SOURCE_DIR) / "tests/report/interop";
  if (fs::exists(src / "node_modules/jose/package.json")) return src;
  // Install into the build tree (never into the source tree from a test).
  // ctest runs every test case as its own process, in parallel: the copy and
  // the npm install happen under an exclusive lock so that only one process
  // installs and the others wait for a complete node_modules.
  fs::path dir = fs::path(DPUAUDIT_BIN_DIR).parent_path() / "report_interop";
  std::error_code ec;
  fs::create_directories(dir, ec);
  int lock_fd = ::open((dir / ".install.lock").c_str(),
                       O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0 || ::flock(lock_fd, LOCK_EX) != 0) {
    *why = "cannot lock " + (dir / ".install.lock").string();
    if (lock_fd >= 0) ::close(lock_fd);
    return std::nullopt;
  }
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }  // closing releases the flock
  } unlock{lock_fd};
  for (const char* f : {"package.json", ".npmrc", "interop.mjs"}) {
    if (fs::exists(dir / f) && ReadAll(dir / f) == ReadAll(src / f)) continue;
    fs::path tmp = dir / (std::string(f) + ".tmp");
    fs::copy_file(src / f, tmp, fs::copy_options::overwrite_existing, ec);
    if (!ec) fs::rename(tmp, dir / f, ec);  // atomic: readers never see half
    if (ec) {
      *why = "cannot copy " + std::string(f) + ": " + ec.message();
      return std::nullopt;
    }
  }
  // The stamp is written only after a complete install, so an interrupted
  // install is redone rather than half-used.
  const fs::path stamp = dir / ".jose-installed";
  if (fs::exists(stamp) && ReadAll(stamp) == ReadAll(dir / "package.json"))
    return dir;
  if (RunShell("command -v npm >/dev/null 2>&1") != 0) {
    *why = "npm is not installed";
    return std::nullopt;
  }
  // A failed install (no registry, say) is remembered for 10 minutes, so
  // the other test processes of this run skip at once with its reason
  // instead of each waiting for npm to give up again.
  const fs::path failed = dir / ".jose-install-failed";
  if (fs::exists(failed, ec)) {
    auto age = fs::file_time_type::clock::now() - fs::last_write_time(failed, ec);
    if (!ec && age < std::chrono::minutes(10)) {
      *why = ReadAll(failed);
      return std::nullopt;
    }
  }
  std::string log = (dir / "npm-install.log").string();
  int rc = RunShell("cd " + ShellQuote(dir.string()) +
                    " && timeout 240 npm install --no-audit --no-fund >" +
                    ShellQuote(log) + " 2>&1");
  if (rc != 0 || !fs::exists(dir / "node_modules/jose/package.json")) {
    *why = "npm could not install jose (exit " + std::to_string(rc) +
           "): " + ReadAll(log).substr(0, 400);
    WriteAll(failed, *why);
    return std::nullopt;
  }
  WriteAll(stamp, ReadAll(dir / "package.json"));
  fs::remove(failed, ec);
  return dir;
}

}  // namespace dpuaudit::testing::jose

#endif  // DPUAUDIT_TESTS_TESTING_JOSE_DIR_H_
