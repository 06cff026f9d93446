// HttpClient's one reused connection (issue 17): consecutive calls share a
// keep-alive HTTPS connection to a real HttpServer on loopback; when the
// server closes it, the next call reconnects by itself and resumes the TLS
// session; the security options hold on every call of the reused handle.
// Nothing is timed: the server closes the connection on request
// ("Connection: close" in its response), and the assertions are counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "apps/shared/http_client.h"
#include "apps/verifier/http_errors.h"
#include "apps/verifier/http_server.h"
#include "common/bytes.h"
#include "apps/test_cert_dirs.h"
#include "common/files.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;

class HttpClientConnectionTest
    : public WithTestCertDirs<HttpClientConnectionTest> {
 protected:

  void SetUp() override {
    server_ = std::make_unique<HttpServer>(
        HttpLimits{}, [](const std::string& c, const std::string& m) { return ErrorBody(c, m); });
    server_->Route("POST", "/v1/challenges", [](const ServerRequest& req, ServerResponse& res) {
      res.body = R"({"got":)" + std::to_string(req.body.size()) + "}";
    });
    // The server closes the connection after this response.
    server_->Route("GET", "/close", [](const ServerRequest&, ServerResponse& res) {
      res.body = R"({"closing":true})";
      res.headers.emplace_back("Connection", "close");
    });
    server_->Route("GET", "/redirect", [](const ServerRequest&, ServerResponse& res) {
      res.status = 302;
      res.headers.emplace_back("Location", "/close");
    });
    server_->Route("GET", "/big", [](const ServerRequest&, ServerResponse& res) {
      res.body = std::string(64 << 10, 'x');
    });
    auto port = server_->Start("127.0.0.1", 0, Read("a/server.pem"), Read("a/server.key"));
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    url_ = "https://127.0.0.1:" + std::to_string(*port);
  }

  std::unique_ptr<HttpClient> NewClient(const std::string& ca, size_t max_body = 4 << 20) {
    HttpClientOptions o;
    o.ca_file = dir_ + "/" + ca;
    o.max_response_bytes = max_body;
    auto c = HttpClient::New(url_, o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  std::unique_ptr<HttpServer> server_;
  std::string url_;
};

TEST_F(HttpClientConnectionTest, CallsShareOneConnection) {
  auto client = NewClient("a/ca.pem");
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 4; ++i) {
    auto r = client->Post("/v1/challenges", "application/json", "{}");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, R"({"got":2})");
  }
  EXPECT_EQ(client->connects(), 1);
  const HttpConnectionStats st = server_->ConnectionStats();
  EXPECT_EQ(st.connections, 1u);
  EXPECT_EQ(st.tls_full_handshakes, 1u);
  EXPECT_EQ(st.tls_resumed_handshakes, 0u);
}

TEST_F(HttpClientConnectionTest, ReconnectsAfterTheServerClosedAndResumes) {
  auto client = NewClient("a/ca.pem");
  ASSERT_NE(client, nullptr);
  auto closing = client->Get("/close");
  ASSERT_TRUE(closing.ok()) << closing.status().ToString();
  EXPECT_EQ(closing->status, 200);
  // The server has closed that connection: the next call opens another
  // one by itself, resuming the TLS session from the first one's ticket.
  auto again = client->Post("/v1/challenges", "application/json", "{\"a\":1}");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->body, R"({"got":7})");
  auto third = client->Get("/close");
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  auto fourth = client->Post("/v1/challenges", "application/json", "{}");
  ASSERT_TRUE(fourth.ok()) << fourth.status().ToString();
  EXPECT_EQ(client->connects(), 3);
  const HttpConnectionStats st = server_->ConnectionStats();
  EXPECT_EQ(st.connections, 3u);
  EXPECT_EQ(st.tls_full_handshakes, 1u);
  EXPECT_EQ(st.tls_resumed_handshakes, 2u);
}

TEST_F(HttpClientConnectionTest, ReusedHandleKeepsEveryCheck) {
  auto client = NewClient("a/ca.pem", 16 << 10);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Post("/v1/challenges", "application/json", "{}").ok());
  // No redirect is followed on the reused handle: the 302 is the answer.
  auto redirect = client->Get("/redirect");
  ASSERT_TRUE(redirect.ok()) << redirect.status().ToString();
  EXPECT_EQ(redirect->status, 302);
  // The body limit holds on the reused handle ...
  auto big = client->Get("/big");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("response larger than 16384 bytes"));
  // ... and the handle still works afterwards (on a new connection).
  auto after = client->Post("/v1/challenges", "application/json", "{}");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->status, 200);
}

TEST_F(HttpClientConnectionTest, EveryCallOfTheReusedHandleVerifiesThePeer) {
  // A client that trusts another CA is refused on its first call and on
  // every later one: a failed handshake leaves nothing to reuse.
  auto wrong = NewClient("b/ca.pem");
  ASSERT_NE(wrong, nullptr);
  for (int i = 0; i < 2; ++i) {
    auto r = wrong->Post("/v1/challenges", "application/json", "{}");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  }
  EXPECT_EQ(server_->ConnectionStats().tls_full_handshakes, 0u);
  auto right = NewClient("a/ca.pem");
  ASSERT_NE(right, nullptr);
  EXPECT_TRUE(right->Post("/v1/challenges", "application/json", "{}").ok());
}

}  // namespace
}  // namespace dpuaudit::apps
