#include "apps/shared/token_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/bytes.h"
#include "common/files.h"

namespace dpuaudit::apps {

StatusOr<std::string> ReadTokenFile(const std::string& path,
                                    const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return NotFoundError(what + " token file " + path + ": " +
                         std::strerror(errno) + ".");
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(what + " token file " + path +
                                " is not a regular file.");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return PermissionDeniedError(what + " token file " + path +
                                 " is readable or writable by group or others (mode " +
                                 mode + "); chmod 600 it.");
  }
  DPA_ASSIGN_OR_RETURN(Bytes b, ReadFileLimited(path, 4096));
  std::string t = ToString(b);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ' ||
                        t.back() == '\t')) {
    t.pop_back();
  }
  if (t.size() < kMinTokenChars) {
    return InvalidArgumentError(what + " token in " + path + " is shorter than " +
                                std::to_string(kMinTokenChars) + " characters.");
  }
  return t;
}

}  // namespace dpuaudit::apps
