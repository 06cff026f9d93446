#include "apps/loadgen/proc_cpu.h"

#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <memory>
#include <set>

#include "common/files.h"

namespace dpuaudit::apps::loadgen {
namespace {

// The whitespace-separated fields of `s`.
std::vector<std::string_view> Fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\n') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool ParseUnsigned(std::string_view s, uint64_t* v, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v, base);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string ReadSmall(const std::string& path) {
  auto b = ReadFileLimited(path, 64 << 20);
  return b.ok() ? ToString(*b) : std::string();
}

struct DirCloser {
  void operator()(DIR* d) const { closedir(d); }
};

}  // namespace

StatusOr<uint64_t> ParseProcStatCpuTicks(std::string_view stat) {
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos) {
    return InvalidArgumentError("/proc stat line has no ')' after the command name.");
  }
  // After "pid (comm)": field 3 (state) is the first; utime is field 14.
  std::vector<std::string_view> f = Fields(stat.substr(close + 1));
  if (f.size() < 13) return InvalidArgumentError("/proc stat line has too few fields.");
  uint64_t utime = 0, stime = 0;
  if (!ParseUnsigned(f[11], &utime) || !ParseUnsigned(f[12], &stime)) {
    return InvalidArgumentError("/proc stat utime/stime are not numbers.");
  }
  return utime + stime;
}

std::vector<uint64_t> ParseListeningInodes(std::string_view net_tcp, int port) {
  std::vector<uint64_t> out;
  size_t start = 0;
  bool header = true;
  while (start < net_tcp.size()) {
    size_t end = net_tcp.find('\n', start);
    if (end == std::string_view::npos) end = net_tcp.size();
    std::string_view line = net_tcp.substr(start, end - start);
    start = end + 1;
    if (header) {  // "  sl  local_address rem_address   st ..."
      header = false;
      continue;
    }
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
    std::vector<std::string_view> f = Fields(line);
    if (f.size() < 10) continue;
    const size_t colon = f[1].rfind(':');
    if (colon == std::string_view::npos) continue;
    uint64_t p = 0, inode = 0;
    if (!ParseUnsigned(f[1].substr(colon + 1), &p, 16)) continue;
    if (f[3] != "0A") continue;  // TCP_LISTEN
    if (static_cast<int>(p) != port) continue;
    if (!ParseUnsigned(f[9], &inode) || inode == 0) continue;
    out.push_back(inode);
  }
  return out;
}

StatusOr<uint64_t> ParseProcStatusKib(std::string_view status, std::string_view field) {
  size_t start = 0;
  while (start < status.size()) {
    size_t end = status.find('\n', start);
    if (end == std::string_view::npos) end = status.size();
    std::string_view line = status.substr(start, end - start);
    start = end + 1;
    if (line.size() <= field.size() || line.substr(0, field.size()) != field ||
        line[field.size()] != ':') {
      continue;
    }
    // "VmRSS:\t   46512 kB"
    std::vector<std::string_view> f = Fields(line.substr(field.size() + 1));
    uint64_t kib = 0;
    if (f.size() != 2 || f[1] != "kB" || !ParseUnsigned(f[0], &kib)) {
      return InvalidArgumentError("/proc status " + std::string(field) +
                                  " is not \"<number> kB\".");
    }
    return kib;
  }
  return NotFoundError("/proc status has no " + std::string(field) + " line.");
}

StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  auto b = ReadFileLimited(path, 64 << 10);
  if (!b.ok()) return b.status().WithPrefix(path);
  const std::string text = ToString(*b);
  ProcessMemory m;
  DPA_ASSIGN_OR_RETURN(uint64_t rss, ParseProcStatusKib(text, "VmRSS"));
  DPA_ASSIGN_OR_RETURN(uint64_t hwm, ParseProcStatusKib(text, "VmHWM"));
  m.rss_bytes = rss * 1024;
  m.peak_rss_bytes = hwm * 1024;
  return m;
}

StatusOr<double> ProcessCpuSeconds(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  auto b = ReadFileLimited(path, 4096);
  if (!b.ok()) return b.status().WithPrefix(path);
  DPA_ASSIGN_OR_RETURN(uint64_t ticks, ParseProcStatCpuTicks(ToString(*b)));
  const long hz = sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks) / static_cast<double>(hz > 0 ? hz : 100);
}

StatusOr<pid_t> FindListeningPid(int port) {
  std::set<std::string> wanted;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    for (uint64_t inode : ParseListeningInodes(ReadSmall(table), port)) {
      wanted.insert("socket:[" + std::to_string(inode) + "]");
    }
  }
  if (wanted.empty()) {
    return NotFoundError("no socket listens on TCP port " + std::to_string(port) + ".");
  }
  std::unique_ptr<DIR, DirCloser> proc(opendir("/proc"));
  if (!proc) return NotFoundError("cannot list /proc.");
  while (dirent* e = readdir(proc.get())) {
    uint64_t pid = 0;
    if (!ParseUnsigned(e->d_name, &pid)) continue;
    const std::string fd_dir = "/proc/" + std::string(e->d_name) + "/fd";
    std::unique_ptr<DIR, DirCloser> fds(opendir(fd_dir.c_str()));
    if (!fds) continue;  // another user's process
    while (dirent* fd = readdir(fds.get())) {
      if (fd->d_name[0] == '.') continue;
      char target[64];
      const std::string link = fd_dir + "/" + fd->d_name;
      ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
      if (n <= 0) continue;
      if (wanted.count(std::string(target, static_cast<size_t>(n)))) {
        return static_cast<pid_t>(pid);
      }
    }
  }
  return NotFoundError("no process of this user holds the socket listening on TCP port " +
                       std::to_string(port) + ".");
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

}  // namespace dpuaudit::apps::loadgen
