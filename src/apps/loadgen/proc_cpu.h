// CPU time and resident memory of processes on this host, from procfs: the verifier's (by pid,
// or found by the TCP port it listens on) and the load generator's own.
//
// Guarantees: the parsers are pure and never throw; ParseProcStatCpuTicks
// reads utime + stime (fields 14 and 15 of proc(5)) after the LAST ')' so a
// command name holding spaces or parentheses cannot shift the fields;
// ParseListeningInodes returns the socket inodes of the lines in LISTEN
// state (st 0A) on `port`, from /proc/net/tcp or /proc/net/tcp6 text.
// FindListeningPid answers only for processes this user may inspect
// (/proc/PID/fd); NOT_FOUND when none holds the socket.
// Does not: follow a process across pid reuse.
#ifndef DPUAUDIT_APPS_LOADGEN_PROC_CPU_H_
#define DPUAUDIT_APPS_LOADGEN_PROC_CPU_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit::apps::loadgen {

// utime + stime, clock ticks, from the text of /proc/PID/stat.
StatusOr<uint64_t> ParseProcStatCpuTicks(std::string_view stat);
// Socket inodes listening on `port` in the text of /proc/net/tcp{,6}.
std::vector<uint64_t> ParseListeningInodes(std::string_view net_tcp, int port);

// A "<Field>:   <n> kB" line of /proc/PID/status (VmRSS, VmHWM), in KiB;
// NOT_FOUND when the field is absent, INVALID_ARGUMENT when malformed.
StatusOr<uint64_t> ParseProcStatusKib(std::string_view status, std::string_view field);

// Resident memory of a process now, and its peak (VmHWM) since it started.
struct ProcessMemory {
  uint64_t rss_bytes = 0;
  uint64_t peak_rss_bytes = 0;
};
StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid);

// User + system CPU seconds of process `pid` so far.
StatusOr<double> ProcessCpuSeconds(pid_t pid);
// The process holding a socket that listens on TCP `port` (IPv4 or IPv6).
StatusOr<pid_t> FindListeningPid(int port);
// User + system CPU seconds of this process so far (getrusage).
double SelfCpuSeconds();
// CPUs this process may run on (sched_getaffinity; at least 1).
int UsableCpus();

}  // namespace dpuaudit::apps::loadgen

#endif  // DPUAUDIT_APPS_LOADGEN_PROC_CPU_H_
