// The BMC client's checks that need no server: credentials files and
// endpoints refused before any connection. (Against a real HTTPS server:
// tests/integration/bmc_test.cc.)
#include "bmc/redfish_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "testing/status_matchers.h"

namespace dpuaudit::bmc {
namespace {

using ::dpuaudit::testing::StatusHas;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dpuaudit-creds-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& text, mode_t mode) {
    const std::string p = dir_ + "/c.json";
    fs::remove(p);
    std::ofstream(p) << text;
    chmod(p.c_str(), mode);
    return p;
  }
  std::string dir_;
};

TEST_F(CredentialsTest, APrivateFileWithExactlyUserAndPasswordIsRead) {
  auto c = LoadCredentialsFile(Write(R"({"username": "root", "password": "pw-123"})", 0600));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->username, "root");
  EXPECT_EQ(c->password, "pw-123");
}

TEST_F(CredentialsTest, OpenModesMissingFilesAndBadShapesAreRefusedWithoutTheSecret) {
  EXPECT_THAT(LoadCredentialsFile(Write(R"({"username": "root", "password": "s3cr3t"})", 0640))
                  .status(),
              StatusHas(StatusCode::kPermissionDenied, "(mode 0640); chmod 600 it."));
  EXPECT_THAT(LoadCredentialsFile(dir_ + "/absent.json").status(),
              StatusHas(StatusCode::kNotFound, "BMC credentials file"));
  for (const char* bad : {R"({"username": "root"})", R"({"username": "", "password": "s3cr3t"})",
                          R"({"username": "root", "password": "s3cr3t", "extra": 1})",
                          "root:s3cr3t", R"({"username": "root", "password": 7})"}) {
    auto c = LoadCredentialsFile(Write(bad, 0600));
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(c.status().message(), Not(HasSubstr("s3cr3t"))) << bad;
  }
}

TEST(RedfishClientTest, EndpointsAreCheckedBeforeAnyConnection) {
  BmcCredentials creds{"root", "pw"};
  auto endpoint = [](std::string url, std::string ca, std::string pin) {
    BmcEndpoint e;
    e.base_url = std::move(url);
    e.ca_file = std::move(ca);
    e.pinned_key_sha256 = std::move(pin);
    return e;
  };
  const std::string pin(64, 'a');
  EXPECT_THAT(RedfishClient::Connect(endpoint("http://192.0.2.1", "", pin), creds).status(),
              StatusHas(StatusCode::kInvalidArgument, "must be https://host[:port]"));
  EXPECT_THAT(RedfishClient::Connect(endpoint("https://u:p@192.0.2.1", "", pin), creds).status(),
              StatusHas(StatusCode::kInvalidArgument, "no path or user"));
  EXPECT_THAT(RedfishClient::Connect(endpoint("https://192.0.2.1/redfish", "", pin), creds)
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "no path or user"));
  EXPECT_THAT(RedfishClient::Connect(endpoint("https://192.0.2.1", "", ""), creds).status(),
              StatusHas(StatusCode::kInvalidArgument, "exactly one of a CA file or a pinned key"));
  EXPECT_THAT(RedfishClient::Connect(endpoint("https://192.0.2.1", "/ca.pem", pin), creds)
                  .status(),
              StatusHas(StatusCode::kInvalidArgument, "exactly one of a CA file or a pinned key"));
  EXPECT_THAT(RedfishClient::Connect(endpoint("https://192.0.2.1", "", "ABC"), creds).status(),
              StatusHas(StatusCode::kInvalidArgument, "64 lower-case hex digits"));
}

}  // namespace
}  // namespace dpuaudit::bmc
