// SIGINT and SIGTERM as a request to stop a loop: the one set-up the agent's
// `run` and the load generator share.
//
// Guarantees: `handler` is installed for SIGINT and SIGTERM with an empty
// mask and SA_RESTART, so a signal during an attempt does not cut its I/O
// (a blocked read or write resumes); the loop checks its flag and stops
// after the attempt in flight.
// Does not: install anything for other signals, or restore the previous
// handlers.
#ifndef DPUAUDIT_APPS_SHARED_STOP_SIGNALS_H_
#define DPUAUDIT_APPS_SHARED_STOP_SIGNALS_H_

namespace dpuaudit::apps {

// `handler` must be async-signal-safe (set a std::atomic<bool> or a
// volatile sig_atomic_t, nothing else).
void InstallStopSignals(void (*handler)(int));

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_STOP_SIGNALS_H_
