// The live DeviceSource: the real filesystem and real processes.
//
// Process model (see device_source.h): fork + execve of a pre-resolved
// executable, never a shell. Everything the child needs (argv, envp, the
// executable path) is built before fork, so the child only makes
// async-signal-safe calls. An exec failure is reported to the parent through
// a close-on-exec pipe. Output beyond the limit is drained and discarded.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "common/byte_stream.h"
#include "common/files.h"
#include "device/device_source.h"
#include "device/posix_util.h"

namespace dpuaudit::device {
namespace {

using internal::ErrnoStatus;
using internal::UniqueFd;
using Clock = std::chrono::steady_clock;

constexpr int kExitCannotExecute = 126;

// Moves fd above the standard descriptors (so the child's dup2 onto 0-2
// never collides with it), keeping close-on-exec.
Status LiftAboveStdio(UniqueFd& fd) {
  if (fd.get() > 2) return OkStatus();
  int lifted = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (lifted < 0) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC)", errno);
  fd.Reset(lifted);
  return OkStatus();
}

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

StatusOr<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  DPA_RETURN_IF_ERROR(LiftAboveStdio(p.read));
  DPA_RETURN_IF_ERROR(LiftAboveStdio(p.write));
  return p;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// Resolves argv[0] like execvp(3) would, but on kLiveCommandPath. Returns ""
// if nothing by that name exists (the caller then reports 127).
std::string ResolveExecutable(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string first_existing;
  std::string_view dirs = kLiveCommandPath;
  while (!dirs.empty()) {
    size_t colon = dirs.find(':');
    std::string candidate = std::string(dirs.substr(0, colon)) + "/" + name;
    if (IsExecutableFile(candidate)) return candidate;
    if (first_existing.empty() && ::access(candidate.c_str(), F_OK) == 0) {
      first_existing = candidate;  // exists but not executable: 126 later
    }
    dirs = colon == std::string_view::npos ? std::string_view()
                                           : dirs.substr(colon + 1);
  }
  return first_existing;
}

// Runs in the forked child: only async-signal-safe calls from here on.
[[noreturn]] void ExecChild(const char* exe, char* const* argv,
                            char* const* envp, int dev_null, int out_fd,
                            int err_fd, int report_fd) {
  ::setpgid(0, 0);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(dev_null, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
      ::dup2(err_fd, STDERR_FILENO) < 0) {
    int e = errno;
    (void)!::write(report_fd, &e, sizeof e);
    ::_exit(kExitCannotExecute);
  }
  // Descriptors some other library opened without O_CLOEXEC must not leak.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  ::execve(exe, argv, envp);
  int e = errno;
  (void)!::write(report_fd, &e, sizeof e);
  ::_exit(kExitNotInstalled);
}

int WaitStatusToExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Blocking waitpid that retries on EINTR.
Status Reap(pid_t pid, int* status) {
  while (::waitpid(pid, status, 0) < 0) {
    if (errno != EINTR) return ErrnoStatus("waitpid", errno);
  }
  return OkStatus();
}

int PollTimeoutMs(Clock::time_point deadline) {
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT_MAX));
}

class LiveDeviceSource final : public DeviceSource {
 public:
  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
    return ReadFileLimited(path, max_bytes);
  }

  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
    return internal::ListDirectory(path);
  }

  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override;

  std::string Describe() const override { return "live"; }

  // Streams from disk (bounded memory), whatever the file's size.
  StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const override {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
    return OpenFileByteStream(path);
  }
};

StatusOr<CommandResult> LiveDeviceSource::Run(
    const std::vector<std::string>& argv, const CommandOptions& options) const {
  if (argv.empty()) return InvalidArgumentError("argv must not be empty.");
  if (argv[0].empty())
    return InvalidArgumentError("argv[0] must not be empty.");
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].find('\0') != std::string::npos) {
      return InvalidArgumentError("argv[" + std::to_string(i) +
                                  "] contains a NUL byte.");
    }
  }
  CommandResult result;
  const std::string exe = ResolveExecutable(argv[0]);
  if (exe.empty()) return result;  // not installed: 127

  // Everything the child touches is prepared before fork.
  std::vector<char*> c_argv;
  for (const std::string& a : argv)
    c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  std::string env_path = std::string("PATH=") + kLiveCommandPath;
  std::string env_lc = "LC_ALL=C";
  char* c_envp[] = {env_path.data(), env_lc.data(), nullptr};

  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!dev_null.valid()) return ErrnoStatus("opening /dev/null", errno);
  DPA_RETURN_IF_ERROR(LiftAboveStdio(dev_null));
  DPA_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  DPA_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  DPA_ASSIGN_OR_RETURN(Pipe report, MakePipe());

  pid_t pid = ::fork();
  if (pid < 0) return ErrnoStatus("fork", errno);
  if (pid == 0) {
    ExecChild(exe.c_str(), c_argv.data(), c_envp, dev_null.get(),
              out.write.get(), err.write.get(), report.write.get());
  }
  // Both sides set the group, so kill(-pid) works whichever runs first
  // (EACCES here means the child already exec'd, having set it itself).
  ::setpgid(pid, pid);
  dev_null.Reset();
  out.write.Reset();
  err.write.Reset();
  report.write.Reset();

  // Exec outcome: EOF means execve succeeded (the pipe was close-on-exec).
  int exec_errno = 0;
  size_t got = 0;
  while (got < sizeof exec_errno) {
    ssize_t n =
        ::read(report.read.get(), reinterpret_cast<char*>(&exec_errno) + got,
               sizeof exec_errno - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == sizeof exec_errno) {
    int status = 0;
    DPA_RETURN_IF_ERROR(Reap(pid, &status));
    result.exit_code = (exec_errno == ENOENT || exec_errno == ENOTDIR)
                           ? kExitNotInstalled
                           : kExitCannotExecute;
    return result;
  }

  const Clock::time_point deadline = Clock::now() + options.timeout;
  const size_t limit = options.max_output_bytes;
  UniqueFd* streams[2] = {&out.read, &err.read};
  Bytes* sinks[2] = {&result.stdout_bytes, &result.stderr_bytes};
  bool timed_out = false;
  uint8_t buf[65536];
  while (!timed_out && (streams[0]->valid() || streams[1]->valid())) {
    pollfd fds[2];
    int which[2];
    nfds_t n = 0;
    for (int s = 0; s < 2; ++s) {
      if (!streams[s]->valid()) continue;
      fds[n] = pollfd{streams[s]->get(), POLLIN, 0};
      which[n++] = s;
    }
    int timeout_ms = PollTimeoutMs(deadline);
    if (timeout_ms == 0) {
      timed_out = true;
      break;
    }
    int ready = ::poll(fds, n, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      Status s = ErrnoStatus("poll", errno);
      ::kill(-pid, SIGKILL);
      int status = 0;
      (void)Reap(pid, &status);
      return s;
    }
    for (nfds_t k = 0; k < n; ++k) {
      if (fds[k].revents == 0) continue;
      int s = which[k];
      ssize_t r = ::read(streams[s]->get(), buf, sizeof buf);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {  // EOF, or an error we treat as the end of the stream
        streams[s]->Reset();
        continue;
      }
      size_t len = static_cast<size_t>(r);
      size_t room = limit - std::min(limit, sinks[s]->size());
      if (len > room) result.truncated = true;  // drained and discarded
      sinks[s]->insert(sinks[s]->end(), buf, buf + std::min(len, room));
    }
  }

  // Both streams closed: wait for the exit, still bounded by the deadline.
  int status = 0;
  while (!timed_out) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      result.exit_code = WaitStatusToExitCode(status);
      return result;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("waitpid (is SIGCHLD ignored?)", errno);
    }
    int timeout_ms = PollTimeoutMs(deadline);
    if (timeout_ms == 0) {
      timed_out = true;
      break;
    }
    ::poll(nullptr, 0, std::min(timeout_ms, 5));
  }
  // Timed out. The child is not reaped yet, so its process group id cannot
  // have been reused.
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  DPA_RETURN_IF_ERROR(Reap(pid, &status));
  result.timed_out = true;
  result.exit_code = -1;
  return result;
}

}  // namespace

std::unique_ptr<DeviceSource> NewLiveDeviceSource() {
  return std::make_unique<LiveDeviceSource>();
}

}  // namespace dpuaudit::device
