#include "apps/shared/version.h"

namespace dpuaudit::apps {

std::string_view Version() { return "0.1.0"; }

}  // namespace dpuaudit::apps
