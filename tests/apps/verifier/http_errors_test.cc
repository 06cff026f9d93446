#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apps/shared/http_client.h"
#include "apps/verifier/http_errors.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;

TEST(HttpErrorsTest, MapsEveryStatusCodeToAPrecise4xxOr5xx) {
  EXPECT_EQ(HttpStatusFor(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFor(StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusFor(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(StatusCode::kFailedPrecondition), 409);
  EXPECT_EQ(HttpStatusFor(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusFor(StatusCode::kDeadlineExceeded), 410);
  EXPECT_EQ(HttpStatusFor(StatusCode::kResourceExhausted), 413);
  EXPECT_EQ(HttpStatusFor(StatusCode::kInternal), 500);
  auto body = nlohmann::json::parse(ErrorBody(NotFoundError("unknown nonce.")));
  EXPECT_EQ(body["error"]["code"], "not_found");
  EXPECT_EQ(body["error"]["message"], "unknown nonce.");
  EXPECT_EQ(HttpStatusFor(StatusCode::kRateLimited), 429);
  EXPECT_EQ(HttpStatusFor(StatusCode::kUnavailable), 503);
  EXPECT_EQ(ErrorCodeFor(StatusCode::kRateLimited), "rate_limited");
  // A message quoting bytes that are not UTF-8 still gives valid JSON.
  auto bad = nlohmann::json::parse(ErrorBody(InvalidArgumentError("node \xff\xfe")));
  EXPECT_EQ(bad["error"]["message"], "node \xEF\xBF\xBD\xEF\xBF\xBD");
}


// The client side reads the server's error bodies back.
TEST(HttpErrorsTest, ClientTurnsErrorBodiesBackIntoStatuses) {
  HttpResponse r{409, "application/json", ErrorBody(FailedPreconditionError("nonce already used."))};
  Status s = StatusFromHttpError(r);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "HTTP 409 failed_precondition: nonce already used.");
  HttpResponse plain{502, "text/html", "<html>bad gateway</html>"};
  EXPECT_EQ(StatusFromHttpError(plain).code(), StatusCode::kUnavailable);
  EXPECT_THAT(StatusFromHttpError(plain).message(), HasSubstr("HTTP 502 <html>"));
}

}  // namespace
}  // namespace dpuaudit::apps
