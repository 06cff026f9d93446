#include "common/status.h"

#include <gtest/gtest.h>

#include "common/finding.h"

namespace dpuaudit {
namespace {

StatusOr<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgumentError("value " + std::to_string(v) + " is odd.");
  return v / 2;
}

StatusOr<int> Quarter(int v) {
  DPA_ASSIGN_OR_RETURN(int h, Half(v));
  DPA_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, OkAndErrorsFormat) {
  EXPECT_TRUE(OkStatus().ok());
  EXPECT_EQ(OkStatus().ToString(), "OK");
  Status s = NotFoundError("node n1 is not enrolled.");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.ToString(), "NOT_FOUND: node n1 is not enrolled.");
  EXPECT_EQ(s.WithPrefix("GET /v1/nodes/n1").message(),
            "GET /v1/nodes/n1: node n1 is not enrolled.");
}

TEST(StatusOrTest, PropagatesFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "value 3 is odd.");
}

TEST(StatusOrTest, OkStatusIsNotAValue) {
  StatusOr<int> r(OkStatus());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
}

TEST(VerdictTest, NamesRoundTrip) {
  for (Verdict v : {Verdict::kPass, Verdict::kFail, Verdict::kUnknown}) {
    EXPECT_EQ(ParseVerdict(VerdictName(v)), v);
  }
  EXPECT_FALSE(ParseVerdict("PASS").has_value());
}

}  // namespace
}  // namespace dpuaudit
