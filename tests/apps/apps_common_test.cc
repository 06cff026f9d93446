#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apps/common/agent_collect.h"
#include "apps/common/http_client.h"
#include "apps/common/http_errors.h"
#include "apps/common/table.h"
#include "device/device_source.h"
#include "report/claims.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;

TEST(TableTest, AlignsColumnsAndClipsLongCells) {
  Table t({"NODE", "DECISION"}, 8);
  t.AddRow({"a", "admit"});
  t.AddRow({"long-node-name", "deny"});
  EXPECT_EQ(t.Render(),
            "NODE      DECISION\n"
            "a         admit\n"
            "long-no…  deny\n");
}

TEST(TableTest, FlattensNewlinesInCells) {
  Table t({"A"});
  t.AddRow({"x\ny"});
  EXPECT_EQ(t.Render(), "A\nx y\n");
}

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

TEST(HttpErrorsTest, ClientJsonStrNeverThrows) {
  EXPECT_EQ(JsonStr(nlohmann::json::parse(R"({"a":"x"})"), "a"), "x");
  EXPECT_EQ(JsonStr(nlohmann::json::parse(R"({"a":502})"), "a", "?"), "?");
  EXPECT_EQ(JsonStr(nlohmann::json::parse(R"([1,2])"), "a", "?"), "?");
  EXPECT_EQ(JsonStr(nlohmann::json(), "a"), "");
  // A proxy's error shape (code is a number) is read without throwing.
  HttpResponse r{502, "application/json", R"({"error":{"code":502,"message":"Bad Gateway"}})"};
  Status s = StatusFromHttpError(r);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "HTTP 502 error: Bad Gateway");
}

TEST(HttpErrorsTest, ClientTurnsErrorBodiesBackIntoStatuses) {
  HttpResponse r{409, "application/json", ErrorBody(FailedPreconditionError("nonce already used."))};
  Status s = StatusFromHttpError(r);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "HTTP 409 failed_precondition: nonce already used.");
  HttpResponse plain{502, "text/html", "<html>bad gateway</html>"};
  EXPECT_EQ(StatusFromHttpError(plain).code(), StatusCode::kUnavailable);
  EXPECT_THAT(StatusFromHttpError(plain).message(), HasSubstr("HTTP 502 <html>"));
}

TEST(HttpClientTest, RejectsNonHttpUrlsAndReportsConnectionFailures) {
  auto bad = HttpClient::New("file:///etc/passwd", {});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  // Port 1 on loopback: nothing listens there.
  HttpClientOptions o;
  o.timeout = std::chrono::milliseconds(2000);
  auto c = HttpClient::New("http://127.0.0.1:1", o);
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Get("/healthz");
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("GET http://127.0.0.1:1/healthz"));
}

TEST(HttpClientTest, PlainHttpOnlyToLoopbackUnlessOptedIn) {
  for (const char* host : {"127.0.0.1", "127.255.0.9", "localhost", "LocalHost", "::1",
                           "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"10.255.255.1", "0.0.0.0", "128.0.0.1", "::", "::ffff:10.0.0.1",
                           "localhost.example.com", "127.0.0.1.nip.io", "127.1", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
  EXPECT_EQ(UrlHost("http://[::1]:8080/x"), "::1");
  EXPECT_EQ(UrlHost("https://user@verifier:8443"), "verifier");
  EXPECT_EQ(UrlHost("http://10.0.0.1"), "10.0.0.1");
  auto refused = HttpClient::New("http://10.255.255.1:8080", {});
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "refusing plain http:// to 10.255.255.1, which is not a loopback address: bearer "
            "tokens and decisions would cross the network unprotected; use https:// (with "
            "--cacert), or --insecure-http to accept the risk.");
  EXPECT_EQ(HttpClient::New("http://[::ffff:10.0.0.1]:80", {}).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_TRUE(HttpClient::New("https://10.255.255.1:8443", {}).ok());
  EXPECT_TRUE(HttpClient::New("http://[::1]:8080", {}).ok());
  HttpClientOptions insecure;
  insecure.insecure_http = true;
  EXPECT_TRUE(HttpClient::New("http://10.255.255.1:8080", insecure).ok());
  EXPECT_EQ(HttpClient::New("http://:8080", {}).status().code(), StatusCode::kInvalidArgument);
}

TEST(AgentCollectTest, CapturesEvidenceForEveryFindingOfARecordedDevice) {
  auto src = device::NewRecordedDeviceSource(std::string(DPUAUDIT_SOURCE_DIR) +
                                             "/tests/fixtures/devices/bf3-zero-trust");
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  Collection c = CollectFromDevice(**src);
  EXPECT_EQ(c.device.model, "BlueField-3");
  EXPECT_EQ(c.device.serial, "MT2334X00001");
  ASSERT_FALSE(c.findings.empty());
  for (const auto& f : c.findings) {
    EXPECT_EQ(f.verdict, Verdict::kPass) << f.id << ": " << f.reason;
    bool found = false;
    for (const auto& e : c.evidence) found = found || e.id == f.evidence_id;
    EXPECT_TRUE(found) << f.id << " names evidence " << f.evidence_id;
  }
  EXPECT_EQ(c.firmware["arm"]["atf_build"], "release");
  // The claims built from it are valid as signed reports require.
  auto claims = BuildClaims(c, "n", Base64UrlEncode(Bytes(32, 1)), 1);
  EXPECT_TRUE(report::ParseClaims(AsBytes(report::SerializeClaims(claims))).ok());
}

TEST(AgentCollectTest, AnEmptyDeviceGivesUnknownFindingsNotPasses) {
  char tmpl[] = "/tmp/dpuaudit-empty-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  auto src = device::NewRecordedDeviceSource(dir);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  Collection c = CollectFromDevice(**src);
  ASSERT_FALSE(c.findings.empty());
  for (const auto& f : c.findings) {
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << f.id;
    EXPECT_FALSE(f.reason.empty()) << f.id;
  }
  EXPECT_TRUE(c.device.serial.empty());
  EXPECT_TRUE(c.firmware["arm"].contains("error"));
}

}  // namespace
}  // namespace dpuaudit::apps
