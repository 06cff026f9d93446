#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "isolation/probes.h"

namespace dpuaudit::isolation {
namespace {

TEST(CatalogueTest, EveryPassingValueIsAnObservableValue) {
  for (const ProbeInfo& p : ProbeCatalogue()) {
    // Version-valued probes (any readable version passes; the policy
    // judges) list neither; every other probe lists both.
    bool version_valued = p.values.empty();
    EXPECT_EQ(p.expected.empty(), version_valued) << p.id;
    if (version_valued) {
      EXPECT_TRUE(!VersionComponent(p.id).empty() || p.id == "fw.os_release") << p.id;
    }
    std::set<std::string_view> values(p.values.begin(), p.values.end());
    EXPECT_EQ(values.size(), p.values.size()) << p.id << " lists a value twice";
    for (auto e : p.expected) EXPECT_TRUE(values.count(e)) << p.id << ": " << e;
    EXPECT_NE(p.function, nullptr) << p.id;
    EXPECT_FALSE(p.description.empty()) << p.id;
  }
}

}  // namespace
}  // namespace dpuaudit::isolation
