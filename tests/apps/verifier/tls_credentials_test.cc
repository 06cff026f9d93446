// TlsCredentials::FromPem: only a parsing chain with its own key is accepted.
#include "apps/verifier/tls_credentials.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>

#include "apps/test_cert_dirs.h"
#include "common/files.h"

namespace dpuaudit::apps {
namespace {

using ::testing::HasSubstr;

class TlsCredentialsTest : public WithTestCertDirs<TlsCredentialsTest> {};

TEST_F(TlsCredentialsTest, AcceptsAChainWithItsKey) {
  auto c = TlsCredentials::FromPem(Read("a/server.pem"), Read("a/server.key"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->chain_length(), 1u);
  EXPECT_EQ((*c)->leaf_sha256().size(), 64u);
  // The chain with its CA appended (leaf first) is accepted too.
  auto chain = TlsCredentials::FromPem(Read("a/server.pem") + Read("a/ca.pem"),
                                       Read("a/server.key"));
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ((*chain)->chain_length(), 2u);
}

TEST_F(TlsCredentialsTest, RefusesAnotherCertificatesKey) {
  auto c = TlsCredentials::FromPem(Read("a/server.pem"), Read("b/server.key"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("does not match the certificate"));
}

TEST_F(TlsCredentialsTest, RefusesGarbageAndEmptyFiles) {
  const std::string cert = Read("a/server.pem"), key = Read("a/server.key");
  for (const auto& [c, k, what] :
       {std::tuple<std::string, std::string, std::string>{"", key, "certificate"},
        {cert, "", "key"},
        {"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", key,
         "certificate"},
        {cert.substr(0, cert.size() / 2), key, "certificate"},
        {cert, "not a key", "key"},
        {key, key, "certificate"}}) {
    auto r = TlsCredentials::FromPem(c, k);
    ASSERT_FALSE(r.ok()) << what;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr(what));
    // The key is never quoted back.
    EXPECT_THAT(r.status().message(), ::testing::Not(HasSubstr("PRIVATE KEY")));
  }
}

}  // namespace
}  // namespace dpuaudit::apps
