#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "apps/shared/http_client.h"
#include "apps/shared/table.h"

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

}  // namespace
}  // namespace dpuaudit::apps
