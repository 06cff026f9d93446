#include "report/node_id.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace dpuaudit::report {
namespace {

using ::testing::HasSubstr;

TEST(NodeIdTest, AcceptsIdsOfTheAllowedCharacters) {
  EXPECT_TRUE(ValidateNodeId("dpu-01").ok());
  EXPECT_TRUE(ValidateNodeId("rack7.slot_3").ok());
  EXPECT_TRUE(ValidateNodeId("...").ok());  // not a dot-segment
  EXPECT_TRUE(ValidateNodeId(".hidden").ok());
  EXPECT_TRUE(ValidateNodeId(std::string(128, 'a')).ok());
}

TEST(NodeIdTest, RefusesDotSegments) {
  for (const char* id : {".", ".."}) {
    Status s = ValidateNodeId(id);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << id;
    EXPECT_EQ(s.message(), "node_id \"" + std::string(id) +
                               "\" is a URL dot-segment; use another id.");
  }
  // The agent names its flag.
  EXPECT_EQ(ValidateNodeId("..", "--node-id").message(),
            "--node-id \"..\" is a URL dot-segment; use another id.");
}

TEST(NodeIdTest, RefusesEmptyLongAndOtherCharacters) {
  EXPECT_EQ(ValidateNodeId("").message(), "node_id must be 1-128 characters.");
  EXPECT_EQ(ValidateNodeId(std::string(129, 'a'), "--node-id").message(),
            "--node-id must be 1-128 characters.");
  for (const char* id : {"a b", "../etc", "a/b", "n\xc3\xa9", "a\nb"}) {
    Status s = ValidateNodeId(id);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << id;
    EXPECT_THAT(s.message(), HasSubstr("may only use [A-Za-z0-9._-].")) << id;
  }
  EXPECT_EQ(ValidateNodeId("a b").message(), "node_id \"a b\" may only use [A-Za-z0-9._-].");
}

}  // namespace
}  // namespace dpuaudit::report
