// HttpServer (libmicrohttpd) on 127.0.0.1:<any port>, driven by raw sockets
// so that malformed, oversized, slow and idle clients can be played exactly.
#include "apps/verifier/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/verifier/http_errors.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class Socket {
 public:
  // Connects to 127.0.0.1:port from `source` (another loopback address
  // counts as another client for the per-IP limit).
  Socket(uint16_t port, const char* source = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, source, &src.sin_addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof src);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return connected_; }
  bool Send(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until the peer closes, `until` appears, or `ms` pass.
  std::string Read(int ms, const std::string& until = "") {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (poll(&p, 1, std::max(left, 1)) <= 0) break;
      char buf[4096];
      ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
      if (!until.empty() && out.find(until) != std::string::npos) break;
    }
    return out;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

std::string Get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

class HttpServerTest : public ::testing::Test {
 protected:
  void Start(HttpLimits limits) {
    server_ = std::make_unique<HttpServer>(limits, [](const std::string& c, const std::string& m) {
      return ErrorBody(c, m);
    });
    server_->Route("GET", "/healthz", [](const ServerRequest&, ServerResponse& res) {
      res.body = R"({"status":"ok"})";
    });
    server_->Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128}))",
                   [](const ServerRequest& req, ServerResponse& res) {
                     res.body = "node=" + req.matches.at(1);
                   });
    server_->Route("POST", "/echo", [this](const ServerRequest& req, ServerResponse& res) {
      ++posts_;
      res.body = "got " + std::to_string(req.body.size()) + " " +
                 req.Header("content-type");
    });
    // Handlers that throw: what a strict JSON dump of a non-UTF-8 byte
    // does, any std::exception, and something that is not one.
    server_->Route("GET", "/throw/json", [](const ServerRequest&, ServerResponse& res) {
      res.body = nlohmann::json(std::string("bfver \xE9")).dump();
    });
    server_->Route("GET", "/throw/std", [](const ServerRequest&, ServerResponse& res) {
      res.body = "half";
      throw std::runtime_error("boom \x1b[2J");
    });
    server_->Route("GET", "/throw/int", [](const ServerRequest&, ServerResponse&) { throw 42; });
    auto port = server_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    port_ = *port;
  }
  std::string Roundtrip(const std::string& request, int ms = 3000) {
    Socket s(port_);
    EXPECT_TRUE(s.connected());
    s.Send(request);
    return s.Read(ms, "\r\n\r\n");
  }
  bool Healthy() {
    Socket s(port_);
    if (!s.connected() || !s.Send(Get("/healthz", "Connection: close\r\n"))) return false;
    std::string r = s.Read(3000);
    return r.rfind("HTTP/1.1 200", 0) == 0 && r.find(R"({"status":"ok"})") != std::string::npos;
  }

  std::unique_ptr<HttpServer> server_;
  uint16_t port_ = 0;
  std::atomic<int> posts_{0};
};

TEST_F(HttpServerTest, RoutesOnTheRawPath) {
  Start({});
  EXPECT_TRUE(Healthy());
  Socket s(port_);
  s.Send(Get("/v1/nodes/dpu-7", "Connection: close\r\n"));
  EXPECT_THAT(s.Read(3000), HasSubstr("node=dpu-7"));
  // Percent-encoded bytes are never decoded into a route parameter.
  for (const std::string& path : std::vector<std::string>{"/v1/nodes/%2e%2e%2fetc", "/v1/nodes/abc%00def", "/v1/nodes/a/b",
                           "/v1/nodes/" + std::string(129, 'a'), "/healthz/../v1/nodes/x"}) {
    std::string r = Roundtrip(Get(path, "Connection: close\r\n"));
    EXPECT_THAT(r, StartsWith("HTTP/1.1 404")) << path;
  }
  std::string r = Roundtrip(Get("/nope", "Connection: close\r\n"));
  EXPECT_THAT(r, StartsWith("HTTP/1.1 404"));
  Socket body(port_);
  body.Send(Get("/nope", "Connection: close\r\n"));
  EXPECT_THAT(body.Read(3000), HasSubstr(R"({"error":{"code":"not_found")"));
}

TEST_F(HttpServerTest, ThrowingHandlerIsAnswered503NotA500) {
  Start({});
  for (const char* path : {"/throw/json", "/throw/std", "/throw/int"}) {
    Socket s(port_);
    s.Send(Get(path, "Connection: close\r\n"));
    std::string r = s.Read(3000);
    EXPECT_THAT(r, StartsWith("HTTP/1.1 503")) << path << ": " << r;
    EXPECT_THAT(r, HasSubstr(R"({"error":{"code":"internal")")) << path;
    EXPECT_THAT(r, HasSubstr("not an error in the request")) << path;
    EXPECT_THAT(r, Not(HasSubstr("half"))) << path;  // the partial answer is dropped
    EXPECT_TRUE(Healthy()) << path;
  }
}

TEST_F(HttpServerTest, WrongMethodIs405) {
  Start({});
  Socket s(port_);
  s.Send("POST /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  std::string r = s.Read(3000);
  EXPECT_THAT(r, StartsWith("HTTP/1.1 405"));
  EXPECT_THAT(r, HasSubstr("method_not_allowed"));
}

TEST_F(HttpServerTest, BodyOverTheLimitIs413BeforeItIsRead) {
  HttpLimits l;
  l.max_body_bytes = 1024;
  Start(l);
  Socket s(port_);
  // Claims 100 MB and sends only the head: the answer must not wait for it.
  s.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
         "Content-Length: 104857600\r\n\r\n");
  std::string r = s.Read(3000, "}}");
  EXPECT_THAT(r, StartsWith("HTTP/1.1 413"));
  EXPECT_THAT(r, HasSubstr("payload_too_large"));
  EXPECT_THAT(r, HasSubstr("104857600 bytes exceeds the limit of 1024 bytes"));
  EXPECT_EQ(posts_.load(), 0);
  // At the limit is fine.
  Socket ok(port_);
  ok.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Type: x/y\r\nContent-Length: 1024\r\n"
          "Connection: close\r\n\r\n" + std::string(1024, 'b'));
  EXPECT_THAT(ok.Read(3000), HasSubstr("got 1024 x/y"));
  EXPECT_TRUE(Healthy());
}

TEST_F(HttpServerTest, ChunkedBodyIs411) {
  Start({});
  Socket s(port_);
  s.Send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
  std::string r = s.Read(3000, "}}");
  EXPECT_THAT(r, StartsWith("HTTP/1.1 411"));
  EXPECT_THAT(r, HasSubstr("length_required"));
  EXPECT_EQ(posts_.load(), 0);
}

TEST_F(HttpServerTest, HeadersOverTheLimitAreRefusedWith4xx) {
  HttpLimits l;
  l.max_header_bytes = 4096;
  Start(l);
  std::string big;
  for (int i = 0; i < 64; ++i) big += "X-Pad-" + std::to_string(i) + ": " + std::string(400, 'p') + "\r\n";
  std::string r = Roundtrip(Get("/healthz", big), 3000);
  ASSERT_GE(r.size(), 12u) << r;
  EXPECT_TRUE(r.rfind("HTTP/1.1 431", 0) == 0 || r.rfind("HTTP/1.1 413", 0) == 0 ||
              r.rfind("HTTP/1.1 414", 0) == 0)
      << r.substr(0, 80);
  // Below the limit is served.
  std::string small = "X-Pad: " + std::string(1000, 'p') + "\r\nConnection: close\r\n";
  EXPECT_THAT(Roundtrip(Get("/healthz", small)), StartsWith("HTTP/1.1 200"));
  EXPECT_TRUE(Healthy());
}

TEST_F(HttpServerTest, IdleConnectionIsClosedAfterTheTimeout) {
  HttpLimits l;
  l.request_timeout_seconds = 1;
  Start(l);
  Socket idle(port_);
  idle.Send("GET /hea");  // half a request line, then nothing
  std::string r = idle.Read(5000);
  EXPECT_TRUE(idle.closed()) << "server kept an idle connection open for 5 s";
  EXPECT_TRUE(Healthy());
}

TEST_F(HttpServerTest, PerIpAndTotalConnectionLimits) {
  HttpLimits l;
  l.max_connections_per_ip = 4;
  l.max_connections = 12;
  l.request_timeout_seconds = 30;
  Start(l);
  // 4 idle connections from 127.0.0.2 fill its quota; a 5th is closed at once.
  // Each held connection is served once (keep-alive) so the server has
  // surely accepted it, however loaded the machine: no sleep to guess at.
  std::vector<std::unique_ptr<Socket>> held;
  auto hold = [&](const char* src) {
    held.push_back(std::make_unique<Socket>(port_, src));
    ASSERT_TRUE(held.back()->connected());
    ASSERT_TRUE(held.back()->Send(Get("/healthz")));
    EXPECT_EQ(held.back()->Read(5000, R"({"status":"ok"})").rfind("HTTP/1.1 200", 0), 0u);
  };
  for (int i = 0; i < 4; ++i) hold("127.0.0.2");
  Socket fifth(port_, "127.0.0.2");
  fifth.Send(Get("/healthz"));
  std::string r = fifth.Read(3000);
  EXPECT_TRUE(fifth.closed());
  EXPECT_EQ(r, "");
  // Another address is still served.
  EXPECT_TRUE(Healthy());
  // Fill the total: 4 per address from 127.0.0.3 and .4 -> 12 in all.
  for (const char* src : {"127.0.0.3", "127.0.0.4"}) {
    for (int i = 0; i < 4; ++i) hold(src);
  }
  EXPECT_FALSE(Healthy());
  held.clear();
  bool back = false;
  for (int i = 0; i < 50 && !back; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    back = Healthy();
  }
  EXPECT_TRUE(back);
}

TEST_F(HttpServerTest, ManyHalfOpenConnectionsDoNotStallOthers) {
  HttpLimits l;
  l.max_connections_per_ip = 64;
  l.max_connections = 512;
  l.threads = 2;
  Start(l);
  std::vector<std::unique_ptr<Socket>> attack;
  for (int i = 0; i < 1000; ++i) {
    attack.push_back(std::make_unique<Socket>(port_, "127.0.0.2"));
    if (i % 3 == 0) attack.back()->Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Le");
  }
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Healthy()) << i;
  attack.clear();
  EXPECT_TRUE(Healthy());
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Start({});
  Socket s(port_);
  for (int i = 0; i < 3; ++i) {
    s.Send(Get("/healthz"));
    EXPECT_THAT(s.Read(3000, R"("ok"})"), StartsWith("HTTP/1.1 200")) << i;
  }
}

TEST_F(HttpServerTest, StartRefusesBadLimitsAndBusyPorts) {
  HttpServer bad({.max_header_bytes = 10}, [](const std::string&, const std::string&) {
    return std::string();
  });
  EXPECT_EQ(bad.Start("127.0.0.1", 0).status().code(), StatusCode::kInvalidArgument);
  Start({});
  HttpServer second({}, [](const std::string&, const std::string&) { return std::string(); });
  EXPECT_EQ(second.Start("127.0.0.1", port_).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace dpuaudit::apps
