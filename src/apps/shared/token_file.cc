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
  DPA_ASSIGN_OR_RETURN(Bytes b, ReadPrivateFile(path, 4096, what + " token file"));
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
