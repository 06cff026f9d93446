#ifndef DPUAUDIT_APPS_SHARED_VERSION_H_
#define DPUAUDIT_APPS_SHARED_VERSION_H_

#include <string_view>

namespace dpuaudit::apps {

// The product version printed by every binary and put in EAR verifier ids.
std::string_view Version();

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_VERSION_H_
