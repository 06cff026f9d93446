// HttpServer's TLS session resumption (session tickets, issue 17): a real
// OpenSSL client (libssl) against a real HttpServer on loopback, over
// TLS 1.3 and TLS 1.2. Nothing here is timed: every assertion is about
// what was negotiated (SSL_session_reused, the served certificate) and what
// the server counted.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "apps/verifier/http_errors.h"
#include "apps/verifier/http_server.h"
#include "apps/verifier/tls_credentials.h"
#include "common/bytes.h"
#include "apps/test_cert_dirs.h"
#include "common/files.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;

struct SslCtxDeleter {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslDeleter {
  void operator()(SSL* s) const { SSL_free(s); }
};
struct SessionDeleter {
  void operator()(SSL_SESSION* s) const { SSL_SESSION_free(s); }
};
using Session = std::unique_ptr<SSL_SESSION, SessionDeleter>;

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// What one TLS connection and one GET /hello on it gave.
struct Exchange {
  std::string error;  // empty: handshake and response completed
  bool reused = false;
  int version = 0;
  std::string leaf_sha256;  // of the certificate the server sent, hex
  std::string response;
  Session session;  // after the response: carries the ticket
};

std::string OpenSslErrors() {
  std::string out;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += std::string(buf) + "; ";
  }
  return out;
}

// A client that trusts only `ca_files` and checks the IP 127.0.0.1.
class TlsClient {
 public:
  TlsClient(int version, const std::vector<std::string>& ca_files) : version_(version) {
    ctx_.reset(SSL_CTX_new(TLS_client_method()));
    SSL_CTX_set_min_proto_version(ctx_.get(), version);
    SSL_CTX_set_max_proto_version(ctx_.get(), version);
    SSL_CTX_set_verify(ctx_.get(), SSL_VERIFY_PEER, nullptr);
    for (const auto& f : ca_files) {
      EXPECT_EQ(SSL_CTX_load_verify_locations(ctx_.get(), f.c_str(), nullptr), 1) << f;
    }
    X509_VERIFY_PARAM_set1_ip_asc(SSL_CTX_get0_param(ctx_.get()), "127.0.0.1");
  }

  // Connects, offering `resume` when not null, and GETs /hello.
  Exchange Get(uint16_t port, SSL_SESSION* resume = nullptr) {
    Exchange x;
    Fd sock;
    sock.fd = socket(AF_INET, SOCK_STREAM, 0);
    // A bound on a stuck server, not a measurement.
    timeval tv{10, 0};
    setsockopt(sock.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(sock.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(sock.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      x.error = "connect failed";
      return x;
    }
    std::unique_ptr<SSL, SslDeleter> ssl(SSL_new(ctx_.get()));
    SSL_set_fd(ssl.get(), sock.fd);
    if (resume != nullptr) SSL_set_session(ssl.get(), resume);
    if (SSL_connect(ssl.get()) != 1) {
      x.error = "handshake failed: " + OpenSslErrors();
      return x;
    }
    x.version = SSL_version(ssl.get());
    if (X509* peer = SSL_get0_peer_certificate(ssl.get()); peer != nullptr) {
      unsigned char md[EVP_MAX_MD_SIZE];
      unsigned int n = 0;
      X509_digest(peer, EVP_sha256(), md, &n);
      x.leaf_sha256 = HexEncode(ByteView(md, n));
    }
    const std::string req = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    if (SSL_write(ssl.get(), req.data(), static_cast<int>(req.size())) <= 0) {
      x.error = "write failed: " + OpenSslErrors();
      return x;
    }
    // Until the whole body ("hello-end") is in: the TLS 1.3 ticket, sent
    // after the handshake, has been read by then.
    while (x.response.find("hello-end") == std::string::npos) {
      char buf[4096];
      int n = SSL_read(ssl.get(), buf, sizeof buf);
      if (n <= 0) {
        x.error = "read failed before the response was complete: " + OpenSslErrors();
        return x;
      }
      x.response.append(buf, static_cast<size_t>(n));
    }
    x.reused = SSL_session_reused(ssl.get()) == 1;
    x.session.reset(SSL_get1_session(ssl.get()));
    SSL_shutdown(ssl.get());  // close_notify: the session stays resumable
    return x;
  }

  int version() const { return version_; }

 private:
  int version_;
  std::unique_ptr<SSL_CTX, SslCtxDeleter> ctx_;
};

class TlsResumptionTest
    : public WithTestCertDirs<TlsResumptionTest, ::testing::TestWithParam<int>> {
 protected:

  // A TLS server with the "a" certificate.
  static std::unique_ptr<HttpServer> NewServer(HttpLimits limits, uint16_t* port) {
    auto server = std::make_unique<HttpServer>(
        limits, [](const std::string& c, const std::string& m) { return ErrorBody(c, m); });
    server->Route("GET", "/hello", [](const ServerRequest&, ServerResponse& res) {
      res.content_type = "text/plain";
      res.body = "hello-end";
    });
    auto p = server->Start("127.0.0.1", 0, Read("a/server.pem"), Read("a/server.key"));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    *port = p.ok() ? *p : 0;
    return server;
  }

  TlsClient Client() { return TlsClient(GetParam(), {Path("a/ca.pem"), Path("b/ca.pem")}); }

};

TEST_P(TlsResumptionTest, ResumesWithTheTicketOfTheSameServer) {
  uint16_t port = 0;
  auto server = NewServer(HttpLimits{}, &port);
  ASSERT_NE(port, 0);
  TlsClient client = Client();
  Exchange first = client.Get(port);
  ASSERT_EQ(first.error, "");
  EXPECT_EQ(first.version, GetParam());
  EXPECT_FALSE(first.reused);
  EXPECT_THAT(first.response, HasSubstr("200 OK"));
  ASSERT_NE(first.session, nullptr);
  ASSERT_EQ(SSL_SESSION_is_resumable(first.session.get()), 1);
  EXPECT_EQ(SSL_SESSION_has_ticket(first.session.get()), 1);
  // The ticket allows no early data (0-RTT is never enabled).
  EXPECT_EQ(SSL_SESSION_get_max_early_data(first.session.get()), 0u);
  // The lifetime hint is the configured lifetime.
  EXPECT_EQ(SSL_SESSION_get_ticket_lifetime_hint(first.session.get()),
            HttpLimits{}.tls_ticket_lifetime_seconds);

  Exchange second = client.Get(port, first.session.get());
  ASSERT_EQ(second.error, "");
  EXPECT_TRUE(second.reused);
  EXPECT_THAT(second.response, HasSubstr("hello-end"));
  // A ticket from the resumed session resumes too.
  ASSERT_NE(second.session, nullptr);
  Exchange third = client.Get(port, second.session.get());
  ASSERT_EQ(third.error, "");
  EXPECT_TRUE(third.reused);

  const HttpConnectionStats st = server->ConnectionStats();
  EXPECT_EQ(st.connections, 3u);
  EXPECT_EQ(st.tls_full_handshakes, 1u);
  EXPECT_EQ(st.tls_resumed_handshakes, 2u);
}

TEST_P(TlsResumptionTest, TicketOfAnotherServerInstanceIsAFullHandshake) {
  uint16_t port_a = 0, port_b = 0;
  auto a = NewServer(HttpLimits{}, &port_a);
  auto b = NewServer(HttpLimits{}, &port_b);  // same certificate, its own ticket key
  ASSERT_NE(port_a, 0);
  ASSERT_NE(port_b, 0);
  TlsClient client = Client();
  Exchange from_a = client.Get(port_a);
  ASSERT_EQ(from_a.error, "");
  ASSERT_NE(from_a.session, nullptr);
  ASSERT_EQ(SSL_SESSION_is_resumable(from_a.session.get()), 1);

  Exchange at_b = client.Get(port_b, from_a.session.get());
  ASSERT_EQ(at_b.error, "");  // falls back to a full handshake, still served
  EXPECT_FALSE(at_b.reused);
  EXPECT_THAT(at_b.response, HasSubstr("hello-end"));
  EXPECT_EQ(b->ConnectionStats().tls_full_handshakes, 1u);
  EXPECT_EQ(b->ConnectionStats().tls_resumed_handshakes, 0u);
  // The same ticket still resumes where it was issued.
  Exchange at_a = client.Get(port_a, from_a.session.get());
  ASSERT_EQ(at_a.error, "");
  EXPECT_TRUE(at_a.reused);
}

TEST_P(TlsResumptionTest, NewConnectionsGetTheNewCertificate) {
  uint16_t port = 0;
  auto server = NewServer(HttpLimits{}, &port);
  ASSERT_NE(port, 0);
  TlsClient client = Client();
  Exchange before = client.Get(port);
  ASSERT_EQ(before.error, "");
  const std::string leaf_a = server->TlsLeafSha256();
  EXPECT_EQ(before.leaf_sha256, leaf_a);
  ASSERT_NE(before.session, nullptr);

  ASSERT_TRUE(server->SetTlsCredentials(Read("b/server.pem"), Read("b/server.key")).ok());
  const std::string leaf_b = server->TlsLeafSha256();
  ASSERT_NE(leaf_a, leaf_b);
  Exchange after = client.Get(port);
  ASSERT_EQ(after.error, "");
  EXPECT_FALSE(after.reused);
  EXPECT_EQ(after.leaf_sha256, leaf_b);
  // A ticket issued before the change still resumes (the session was
  // authenticated by the certificate of its full handshake; the ticket key
  // did not change), and a new full handshake gets the new certificate.
  Exchange resumed = client.Get(port, before.session.get());
  ASSERT_EQ(resumed.error, "");
  EXPECT_TRUE(resumed.reused);
  Exchange fresh = client.Get(port);
  ASSERT_EQ(fresh.error, "");
  EXPECT_EQ(fresh.leaf_sha256, leaf_b);
}

TEST_P(TlsResumptionTest, LifetimeZeroTurnsTicketsOff) {
  HttpLimits limits;
  limits.tls_ticket_lifetime_seconds = 0;
  uint16_t port = 0;
  auto server = NewServer(limits, &port);
  ASSERT_NE(port, 0);
  TlsClient client = Client();
  Exchange first = client.Get(port);
  ASSERT_EQ(first.error, "");
  ASSERT_NE(first.session, nullptr);
  EXPECT_EQ(SSL_SESSION_has_ticket(first.session.get()), 0);
  Exchange second = client.Get(port, first.session.get());
  ASSERT_EQ(second.error, "");
  EXPECT_FALSE(second.reused);
  EXPECT_EQ(server->ConnectionStats().tls_full_handshakes, 2u);
  EXPECT_EQ(server->ConnectionStats().tls_resumed_handshakes, 0u);
}

INSTANTIATE_TEST_SUITE_P(Versions, TlsResumptionTest,
                         ::testing::Values(TLS1_3_VERSION, TLS1_2_VERSION),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == TLS1_3_VERSION ? std::string("Tls13")
                                                               : std::string("Tls12");
                         });

TEST(TlsTicketLifetimeTest, StartRefusesALifetimeBeyondTheLimit) {
  HttpLimits limits;
  limits.tls_ticket_lifetime_seconds = kMaxTlsTicketLifetimeSeconds + 1;
  HttpServer server(limits, [](const std::string& c, const std::string& m) {
    return ErrorBody(c, m);
  });
  auto port = server.Start("127.0.0.1", 0);
  ASSERT_FALSE(port.ok());
  EXPECT_EQ(port.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(port.status().message(), HasSubstr("TLS session ticket lifetime of 86401 s"));
}

TEST(TlsTicketKeyTest, GeneratesDistinctKeysOfGnutlsSize) {
  auto a = TlsTicketKey::Generate();
  auto b = TlsTicketKey::Generate();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ((*a)->datum()->size, 64u);
  ASSERT_EQ((*b)->datum()->size, 64u);
  EXPECT_NE(std::string(reinterpret_cast<const char*>((*a)->datum()->data), 64),
            std::string(reinterpret_cast<const char*>((*b)->datum()->data), 64));
}

}  // namespace
}  // namespace dpuaudit::apps
