// Small, careful file helpers.
//
// Guarantees: reads are bounded (RESOURCE_EXHAUSTED past the limit, with no
// allocation beyond it); WriteNewFile never follows or replaces an existing
// file (O_EXCL|O_NOFOLLOW); WriteFileAtomic writes a temp file, fsyncs it and
// renames it over the target, so readers see the old or the new bytes.
#ifndef DPUAUDIT_COMMON_FILES_H_
#define DPUAUDIT_COMMON_FILES_H_

#include <sys/types.h>

#include <string>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit {

StatusOr<Bytes> ReadFileLimited(const std::string& path, size_t max_bytes);
// A file that holds a secret (token, credentials): it must be a regular
// file that neither group nor others may read or write (mode & 077 == 0).
// `what` names it in messages: NOT_FOUND "<what> <path>: <strerror>.",
// INVALID_ARGUMENT "<what> <path> is not a regular file.",
// PERMISSION_DENIED "<what> <path> is readable or writable by group or
// others (mode 0644); chmod 600 it.". Never puts the content in a message.
StatusOr<Bytes> ReadPrivateFile(const std::string& path, size_t max_bytes,
                                const std::string& what);
Status WriteNewFile(const std::string& path, ByteView data, mode_t mode);
Status WriteFileAtomic(const std::string& path, ByteView data, mode_t mode);

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_FILES_H_
