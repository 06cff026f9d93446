// Comparable versions for minimum-version policy rules and upgrade edges.
//
// Schemes, by component:
//  - "nic-fw", "bsp", "dotted": decimal fields separated by '.':
//    "32.41.1000" -> [32, 41, 1000]; "4.9.1.13442" -> [4, 9, 1, 13442].
//  - "atf": the part after the first ':' of a bfver ATF string, then as
//    "uefi": "v2.2(release):4.9.1-21-gfc25b08d9" -> [4, 9, 1, 21].
//  - "uefi": dotted fields, optionally "-<commits>" and "-g<hash>":
//    "4.9.1-36-g0c3239837a" -> [4, 9, 1, 36]; "4.9.1" -> [4, 9, 1].
//    The forms are D, D-N, D-N-gH and D-gH, H being 4 to 40 lower-case hex
//    digits (git describe); the hash does not take part in the order.
// Guarantees: strict; every field is 1-9 decimal digits; anything else
// (empty, letters in a field, a missing ':' for atf, an unknown component)
// is INVALID_ARGUMENT quoting the text and naming the component.
// CompareVersions pads the shorter with zeros: [4,9,1] == [4,9,1,0].
// Does not: order OS release strings (allow-lists only).
#ifndef DPUAUDIT_BLUEFIELD_VERSION_H_
#define DPUAUDIT_BLUEFIELD_VERSION_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit::bluefield {

struct ComparableVersion {
  std::vector<uint64_t> parts;
  std::string text;  // as given
};

// Components with an ordering: "nic-fw", "bsp", "dotted", "atf", "uefi".
bool IsOrderedComponent(std::string_view component);
StatusOr<ComparableVersion> ParseComparableVersion(std::string_view component,
                                                   std::string_view text);
// <0, 0, >0.
int CompareVersions(const ComparableVersion& a, const ComparableVersion& b);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_VERSION_H_
