#include "common/text_lines.h"

#include <gtest/gtest.h>

namespace dpuaudit::text {
namespace {

TEST(LineErrorTest, OneForm) {
  Status s = LineError("mst status output", 3, "expected 'TYPE', got 'x'.");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "mst status output line 3: expected 'TYPE', got 'x'.");
}

TEST(SplitLinesTest, NulIsALineError) {
  auto lines = SplitLines(std::string_view("a\nb\0c\n", 6), "flint output");
  ASSERT_FALSE(lines.ok());
  EXPECT_EQ(lines.status().message(), "flint output line 2: contains a NUL byte.");
}

TEST(SplitLinesTest, NumbersAndCrLf) {
  auto lines = SplitLines("a\r\n\nb", "x");
  ASSERT_TRUE(lines.ok());
  ASSERT_EQ(lines->size(), 3u);
  EXPECT_EQ((*lines)[0].text, "a");
  EXPECT_EQ((*lines)[1].text, "");
  EXPECT_EQ((*lines)[2].number, 3);
}

}  // namespace
}  // namespace dpuaudit::text
