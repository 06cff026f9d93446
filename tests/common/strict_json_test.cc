#include "common/strict_json.h"

#include <gtest/gtest.h>

namespace dpuaudit::strict_json {
namespace {

using nlohmann::json;

TEST(RequireOnlyMembersTest, ExactlyTheseMembers) {
  const json j = {{"a", 1}, {"b", 2}};
  EXPECT_TRUE(RequireOnlyMembers(j, "x", {"a", "b", "c"}).ok());
  Status s = RequireOnlyMembers(j, "x.y", {"a"});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "x.y has unknown member \"b\".");
  EXPECT_EQ(RequireOnlyMembers(json::array(), "x", {"a"}).message(),
            "x must be an object.");
  EXPECT_TRUE(RequireOnlyMembers(json::object(), "x", {}).ok());
  // An untrusted key is quoted JSON-escaped and cut, never raw.
  const json odd = {{std::string("k\"\n") + std::string(100, 'z'), 1}};
  const std::string m = RequireOnlyMembers(odd, "x", {"a"}).message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("k\\\"\\n"), std::string::npos) << m;
  EXPECT_NE(m.find("...\"."), std::string::npos) << m;
}

TEST(RequireMembersTest, FirstMissingInOrder) {
  const json j = {{"a", 1}};
  EXPECT_TRUE(RequireMembers(j, "x", {"a"}).ok());
  EXPECT_EQ(RequireMembers(j, "x", {"a", "c", "b"}).message(),
            "x.c is required.");
}

TEST(ParseStrictJsonTest, RejectsDuplicatesAndDepth) {
  auto dup = ParseStrictJson(AsBytes(R"({"a":1,"a":2})"), "doc");
  EXPECT_EQ(dup.status().message(), "doc has duplicate key \"a\".");
  auto deep = ParseStrictJson(AsBytes("[[[[[[1]]]]]]"), "doc", 2);
  EXPECT_EQ(deep.status().message(), "doc nests deeper than 2 levels.");
  auto ok = ParseStrictJson(AsBytes("[1]"), "doc", 2);
  EXPECT_TRUE(ok.ok());
}

}  // namespace
}  // namespace dpuaudit::strict_json
