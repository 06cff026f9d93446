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

// The SAX builder (issue 17) keeps the callback parser's rules: the first
// duplicate in document order, at any depth, including the empty key; the
// depth limit counts open containers (the top level is 0); a syntax error
// anywhere wins over a duplicate or a too-deep part before it.
TEST(ParseStrictJsonTest, DuplicateDepthAndSyntaxErrorPrecedence) {
  EXPECT_EQ(ParseStrictJson(AsBytes(R"({"x":{"b":1,"c":{"b":2},"b":3},"a":1,"a":2})"), "doc")
                .status()
                .message(),
            "doc has duplicate key \"b\".");
  EXPECT_EQ(ParseStrictJson(AsBytes(R"({"":1,"":2})"), "doc").status().message(),
            "doc has duplicate key \"\".");
  EXPECT_EQ(ParseStrictJson(AsBytes(R"([{"k":1},{"k":2}])"), "doc").status().code(),
            StatusCode::kOk);
  EXPECT_TRUE(ParseStrictJson(AsBytes("[[[1]]]"), "doc", 2).ok());
  EXPECT_EQ(ParseStrictJson(AsBytes("[[[[1]]]]"), "doc", 2).status().message(),
            "doc nests deeper than 2 levels.");
  EXPECT_EQ(ParseStrictJson(AsBytes(R"({"d":[[[[{"a":1,"a":2}]]]],"a":1,"a":2})"), "doc", 2)
                .status()
                .message(),
            "doc nests deeper than 2 levels.");
  EXPECT_EQ(ParseStrictJson(AsBytes(R"({"a":1,"a":2,"b":})"), "doc").status().message(),
            "doc is not valid JSON (error at byte 18).");
  EXPECT_EQ(ParseStrictJson(AsBytes("[[[[1]]]] x"), "doc", 2).status().message(),
            "doc is not valid JSON (error at byte 11).");
  EXPECT_EQ(ParseStrictJson(AsBytes("\"\xff\""), "doc").status().message(),
            "doc is not valid JSON (error at byte 2): a string is not valid UTF-8.");
  EXPECT_EQ(ParseStrictJson(AsBytes("\"\\ud800\""), "doc").status().message(),
            "doc is not valid JSON (error at byte 8): a \\u escape is an unpaired UTF-16 "
            "surrogate (not UTF-8).");
}

TEST(ParseStrictJsonTest, BuildsTheSameTreeAsNlohmann) {
  const std::string doc =
      R"({"s":"t\u00e9xt","n":-12,"u":18446744073709551615,"f":1.5e3,"b":[true,false,null],)"
      R"("o":{"z":{},"y":[],"x":[{"w":"v"}]},"e":""})";
  auto parsed = ParseStrictJson(AsBytes(doc), "doc");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, nlohmann::json::parse(doc));
  EXPECT_TRUE((*parsed)["u"].is_number_unsigned());
  EXPECT_TRUE((*parsed)["n"].is_number_integer());
  EXPECT_TRUE((*parsed)["f"].is_number_float());
  auto scalar = ParseStrictJson(AsBytes("42"), "doc");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(*scalar, nlohmann::json(42));
}

}  // namespace
}  // namespace dpuaudit::strict_json
