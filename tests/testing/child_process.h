// A child process for tests that run a real binary (a server, a simulator):
// fork + execv of an argv vector, stdout and stderr optionally captured in
// one file, a wait for the ready file the binary writes once it serves, and
// the process stopped when the object goes away.
//
// Guarantees:
//  - RAII: a child still running at destruction gets SIGTERM, then SIGKILL
//    if it has not exited within the grace period, and is always reaped;
//  - non-copyable, movable (the moved-from object owns no process);
//  - everything the child needs is built before fork(), and the child makes
//    only async-signal-safe calls before execv() (tests may run threads);
//  - the environment is inherited (setenv before Start() reaches the child);
//  - a failed wait names the binary, what happened (exit status, signal or
//    timeout) and ends with the tail of the captured output, if captured.
// Does not:
//  - search PATH (argv[0] is the path of the binary) or use a shell;
//  - remove the ready file before Start() (callers do, so a stale one from
//    an earlier run is not taken for readiness);
//  - kill the child when WaitForReadyFile() times out (Stop() or the
//    destructor does).
#ifndef DPUAUDIT_TESTS_TESTING_CHILD_PROCESS_H_
#define DPUAUDIT_TESTS_TESTING_CHILD_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dpuaudit::testing {

struct ChildProcessOptions {
  // The child's stdout and stderr both go to this file (created 0600,
  // truncated); empty: both are inherited from the test.
  std::string output_file;
  // Runs in the child after the redirect, just before execv. It must make
  // only async-signal-safe calls; returning false ends the child with
  // exit status 126.
  std::function<bool()> before_exec;
};

class ChildProcess {
 public:
  // How long Stop() waits after SIGTERM before SIGKILL.
  static constexpr std::chrono::milliseconds kDefaultGrace{20000};

  ChildProcess() = default;
  ~ChildProcess() { Stop(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept { *this = std::move(other); }
  ChildProcess& operator=(ChildProcess&& other) noexcept {
    if (this != &other) {
      Stop();
      pid_ = std::exchange(other.pid_, -1);
      status_ = std::exchange(other.status_, -1);
      name_ = std::move(other.name_);
      output_file_ = std::move(other.output_file_);
    }
    return *this;
  }

  // Forks and execs argv[0] with `argv`. A child this object still runs is
  // stopped first. False, with the reason in `error`, if argv is empty or
  // fork() fails; a binary that cannot be executed exits with status 127.
  bool Start(const std::vector<std::string>& argv,
             const ChildProcessOptions& options = {},
             std::string* error = nullptr) {
    Stop();
    status_ = -1;
    if (argv.empty()) {
      if (error) *error = "ChildProcess::Start: empty argv";
      return false;
    }
    name_ = argv[0].substr(argv[0].rfind('/') + 1);
    output_file_ = options.output_file;
    std::vector<std::string> owned = argv;
    std::vector<char*> args;
    for (std::string& a : owned) args.push_back(a.data());
    args.push_back(nullptr);
    const char* out = output_file_.empty() ? nullptr : output_file_.c_str();
    const std::function<bool()>* before =
        options.before_exec ? &options.before_exec : nullptr;
    pid_ = fork();
    if (pid_ == 0) {
      if (out != nullptr) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
          dup2(fd, 1);
          dup2(fd, 2);
        }
      }
      if (before != nullptr && !(*before)()) _exit(126);
      execv(args[0], args.data());
      _exit(127);
    }
    if (pid_ < 0) {
      pid_ = -1;
      if (error)
        *error = "fork failed for " + name_ + ": " + std::strerror(errno);
      return false;
    }
    return true;
  }

  // Polls `path` every `poll` until its contents satisfy `accept` (default:
  // not empty), then returns true with them in `contents`. False, with the
  // reason in `error`, if the child exits first (it is reaped) or `timeout`
  // passes.
  bool WaitForReadyFile(
      const std::string& path, std::chrono::milliseconds timeout,
      std::chrono::milliseconds poll, std::string* contents, std::string* error,
      const std::function<bool(const std::string&)>& accept = {}) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      std::string text = ReadFile(path);
      if (accept ? accept(text) : !text.empty()) {
        if (contents) *contents = std::move(text);
        return true;
      }
      if (pid_ <= 0) {
        if (error)
          *error =
              name_ + " is not running; it never wrote " + path + OutputTail();
        return false;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        status_ = status;
        if (error) {
          *error = name_ + " " + Describe(status) + " before writing " + path +
                   OutputTail();
        }
        return false;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        if (error) {
          *error = name_ + " did not write " + path + " within " +
                   std::to_string(timeout.count()) + " ms" + OutputTail();
        }
        return false;
      }
      std::this_thread::sleep_for(poll);
    }
  }

  // SIGTERM, then SIGKILL if still running after `grace`; reaps it. No-op
  // when not running.
  void Stop(std::chrono::milliseconds grace = kDefaultGrace) {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    int status = 0;
    for (;;) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    pid_ = -1;
    status_ = status;
  }

  // SIGKILL, then reap. No-op when not running.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    status_ = status;
  }

  // Started and not exited (an exited child is not reaped here).
  bool Alive() const {
    if (pid_ <= 0) return false;
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid_), &info,
               WEXITED | WNOHANG | WNOWAIT) != 0) {
      return false;
    }
    return info.si_pid == 0;
  }

  // Running; reaps the child, and forgets it, if it has exited.
  bool Reap() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == 0) return true;
    pid_ = -1;
    status_ = status;
    return false;
  }

  // The exit code of the last child reaped, if it exited; -1 if it was
  // killed by a signal, is still running or never started.
  int exit_code() const {
    return status_ >= 0 && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }
  pid_t pid() const { return pid_; }
  const std::string& output_file() const { return output_file_; }

  // The last `max_bytes` of the captured output; "" if not captured.
  std::string OutputTailText(size_t max_bytes = 64 * 1024) const {
    if (output_file_.empty()) return "";
    std::ifstream in(output_file_, std::ios::binary | std::ios::ate);
    if (!in) return "";
    const std::streamoff size = in.tellg();
    const std::streamoff from =
        size > static_cast<std::streamoff>(max_bytes)
            ? size - static_cast<std::streamoff>(max_bytes)
            : 0;
    in.seekg(from);
    std::ostringstream s;
    s << in.rdbuf();
    return (from > 0 ? "[...]" : "") + s.str();
  }

 private:
  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return "";
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

  static std::string Describe(int status) {
    if (WIFEXITED(status))
      return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
      return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "stopped (wait status " + std::to_string(status) + ")";
  }

  std::string OutputTail() const {
    if (output_file_.empty()) return "";
    return "; output (" + output_file_ + "):\n" + OutputTailText();
  }

  pid_t pid_ = -1;
  int status_ = -1;
  std::string name_;
  std::string output_file_;
};

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_TESTING_CHILD_PROCESS_H_
