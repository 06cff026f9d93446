// verifier/webhooks.h: the webhook configuration's strict parse, the
// signature (HMAC-SHA256 over "<timestamp>.<body>", RFC 4231 vectors for
// the MAC itself) and the retry schedule. Delivery to a real receiver is
// tests/integration/webhooks_test.cc.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/files.h"
#include "testing/temp_dir.h"
#include "verifier/webhooks.h"

namespace dpuaudit::verifier {
namespace {

TEST(WebhookConfigTest, HmacSha256MatchesRfc4231) {
  auto mac = HmacSha256(AsBytes("Jefe"), AsBytes("what do ya want for nothing?"));
  ASSERT_TRUE(mac.ok());
  EXPECT_EQ(HexEncode(ByteView(mac->data(), mac->size())),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  Bytes key(20, 0x0b);
  auto mac1 = HmacSha256(key, AsBytes("Hi There"));
  EXPECT_EQ(HexEncode(ByteView(mac1->data(), mac1->size())),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(WebhookConfigTest, SignatureIsOverTimestampDotBody) {
  auto sig = WebhookSignature("Jefe", 1700000000, "{}");
  ASSERT_TRUE(sig.ok());
  auto mac = HmacSha256(AsBytes("Jefe"), AsBytes("1700000000.{}"));
  EXPECT_EQ(*sig, "t=1700000000,v1=" + HexEncode(ByteView(mac->data(), mac->size())));
}

constexpr const char* kGood = R"({"schema": "dpuaudit-webhooks/1",
  "retry": {"initial_seconds": 2, "max_seconds": 60},
  "endpoints": [{"name": "netctl", "url": "https://n.example/h", "secret_file": "/s",
                 "events": ["node.denied", "node.stale"]},
                {"name": "siem", "url": "https://s.example/h", "secret_file": "/t",
                 "timeout_ms": 1000, "ca_file": "/ca.pem"}]})";

TEST(WebhookConfigTest, ParsesAndFiltersByEventType) {
  auto c = ParseWebhookConfig(kGood);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->endpoints.size(), 2u);
  EXPECT_EQ(c->endpoints[1].timeout_ms, 1000);
  EXPECT_EQ(c->endpoints[0].timeout_ms, 5000);
  EXPECT_EQ(EndpointsFor(*c, "node.denied"), (std::vector<std::string>{"netctl", "siem"}));
  EXPECT_EQ(EndpointsFor(*c, "node.admitted"), (std::vector<std::string>{"siem"}));
  EXPECT_EQ(WebhookBackoffSeconds(*c, 1), 2);
  EXPECT_EQ(WebhookBackoffSeconds(*c, 2), 4);
  EXPECT_EQ(WebhookBackoffSeconds(*c, 5), 32);
  EXPECT_EQ(WebhookBackoffSeconds(*c, 6), 60);
  EXPECT_EQ(WebhookBackoffSeconds(*c, 1000), 60);
}

TEST(WebhookConfigTest, RefusalsNameTheField) {
  struct Case {
    std::string json, needle;
  };
  const std::vector<Case> cases = {
      {R"({"schema": "x", "endpoints": []})", "schema"},
      {R"({"schema": "dpuaudit-webhooks/1", "endpoints": []})", "endpoints"},
      {R"({"schema": "dpuaudit-webhooks/1", "endpoints": [{"name": "a", "url": "http://x/",
          "secret_file": "/s"}]})", "plain http"},
      {R"({"schema": "dpuaudit-webhooks/1", "endpoints": [{"name": "A!", "url": "https://x/",
          "secret_file": "/s"}]})", "endpoints[0].name"},
      {R"({"schema": "dpuaudit-webhooks/1", "endpoints": [{"name": "a", "url": "https://x/",
          "secret_file": "/s", "colour": 1}]})", "colour"},
      {R"({"schema": "dpuaudit-webhooks/1", "endpoints": [{"name": "a", "url": "https://x/",
          "secret_file": "/s"}, {"name": "a", "url": "https://y/", "secret_file": "/s"}]})",
       "used twice"},
      {R"({"schema": "dpuaudit-webhooks/1", "endpoints": [{"name": "a", "url": "https://x/",
          "secret_file": "/s", "timeout_ms": 5}]})", "timeout_ms"},
      {R"({"schema": "dpuaudit-webhooks/1", "retry": {"initial_seconds": 10, "max_seconds": 5},
          "endpoints": [{"name": "a", "url": "https://x/", "secret_file": "/s"}]})", "max_seconds"},
      {R"({"schema": "dpuaudit-webhooks/1", "schema": "dpuaudit-webhooks/1", "endpoints": []})",
       "duplicate"},
  };
  for (const Case& c : cases) {
    auto r = ParseWebhookConfig(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().message();
  }
}

TEST(WebhookConfigTest, SecretFileMustBePrivateAndLongEnough) {
  ::dpuaudit::testing::TempDir dir;
  const std::string secret = dir.File("s.secret");
  const std::string config = dir.File("webhooks.json");
  ASSERT_TRUE(WriteFileAtomic(config,
                              AsBytes(R"({"schema": "dpuaudit-webhooks/1", "endpoints": [
      {"name": "a", "url": "https://x/", "secret_file": ")" + secret + R"("}]})"),
                              0644)
                  .ok());
  ASSERT_TRUE(WriteFileAtomic(secret, AsBytes(std::string(40, 'k') + "\n"), 0644).ok());
  auto loose = LoadWebhookConfigFile(config);
  EXPECT_EQ(loose.status().code(), StatusCode::kPermissionDenied) << loose.status().ToString();
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  auto ok = LoadWebhookConfigFile(config);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->endpoints[0].secret, std::string(40, 'k'));
  ASSERT_TRUE(WriteFileAtomic(secret, AsBytes("short\n"), 0600).ok());
  auto short_secret = LoadWebhookConfigFile(config);
  ASSERT_FALSE(short_secret.ok());
  EXPECT_EQ(short_secret.status().message().find("short"), std::string::npos)
      << "the secret must never appear in a message";
}

}  // namespace
}  // namespace dpuaudit::verifier
