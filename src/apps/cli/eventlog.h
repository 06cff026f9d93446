// The CLI's `dpuaudit eventlog FILE [--json]`: a TCG event log as text or
// JSON (attest/eventlog.h), with the PCR values its replay gives.
//
// The log is untrusted and shown as such: nothing here verifies it against
// a quote (that is attest/replay.h).
#ifndef DPUAUDIT_APPS_CLI_EVENTLOG_H_
#define DPUAUDIT_APPS_CLI_EVENTLOG_H_

#include <string>

namespace dpuaudit::apps {

// Text: the format, one line per event (index, offset, PCR, type, sha256
// digest prefix or else the sha1 one, short description), then the replayed
// PCRs per bank. --json: attest::EventLogJson. Exit 0, or 2 when the file
// cannot be read or parsed (the precise error on stderr).
int EventlogCommand(const std::string& file, bool json);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_EVENTLOG_H_
