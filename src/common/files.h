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
Status WriteNewFile(const std::string& path, ByteView data, mode_t mode);
Status WriteFileAtomic(const std::string& path, ByteView data, mode_t mode);

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_FILES_H_
