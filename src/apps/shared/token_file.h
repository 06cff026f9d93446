// Bearer tokens from files (bootstrap, admin, reader), read the same way by
// the verifier, the agent and the CLI.
//
// Guarantees: the file must be a regular file that neither group nor others
// may read or write (mode & 077 == 0, like key files): PERMISSION_DENIED
// "<what> token file <path> is readable or writable by group or others
// (mode 0644); chmod 600 it." otherwise; at most 4096 bytes; trailing
// whitespace dropped; at least 16 characters left (INVALID_ARGUMENT). The
// token itself never appears in a message.
#ifndef DPUAUDIT_APPS_SHARED_TOKEN_FILE_H_
#define DPUAUDIT_APPS_SHARED_TOKEN_FILE_H_

#include <string>

#include "common/status.h"

namespace dpuaudit::apps {

inline constexpr size_t kMinTokenChars = 16;

// `what` names the token in messages: "bootstrap", "admin", "reader".
StatusOr<std::string> ReadTokenFile(const std::string& path,
                                    const std::string& what);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_TOKEN_FILE_H_
