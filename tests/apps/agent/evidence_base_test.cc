// The agent's evidence base file (apps/agent/evidence_base.h).
#include "apps/agent/evidence_base.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "common/files.h"

namespace dpuaudit::apps {
namespace evidence_base_test {

class EvidenceBaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-evbase-XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = EvidenceBasePath(dir_ + "/agent.key");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, path_;
};

TEST_F(EvidenceBaseTest, RoundTripsAsAnOwnerOnlyFileOfDigests) {
  EXPECT_EQ(path_, dir_ + "/agent.key.evidence-base");
  EXPECT_FALSE(LoadEvidenceBase(path_).has_value());  // absent: full evidence
  report::ReportClaims c;
  c.node_id = "dpu";
  device::Evidence e;
  e.id = "bfver";
  e.argv = {"bfver"};
  e.raw = ToBytes("BlueField ATF version\n");
  e.sha256 = Sha256Hex(e.raw);
  c.evidence.push_back(e);
  EvidenceBase b = EvidenceBaseOf(c, "header.payload.sig", "https://v:8443");
  EXPECT_EQ(b.report_sha256, Sha256Hex(AsBytes("header.payload.sig")));
  ASSERT_EQ(b.item_digests.size(), 1u);
  EXPECT_EQ(*b.item_digests.begin(), report::EvidenceItemDigest(e));
  ASSERT_TRUE(SaveEvidenceBase(path_, b).ok());
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto back = LoadEvidenceBase(path_);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->verifier, "https://v:8443");
  EXPECT_EQ(back->node_id, "dpu");
  EXPECT_EQ(back->report_sha256, b.report_sha256);
  EXPECT_EQ(back->item_digests, b.item_digests);
  // No evidence bytes in it.
  auto text = ReadFileLimited(path_, 1 << 20);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(ToString(*text).find("BlueField"), std::string::npos);
}

TEST_F(EvidenceBaseTest, MalformedFilesMeanFullEvidence) {
  for (const std::string& body : std::vector<std::string>
       {"", "{", "[]", R"({"format":"other","items":[]})",
        R"({"format":"dpuaudit-agent-evidence-base/1","items":[],"report_sha256":"x"})",
        R"({"format":"dpuaudit-agent-evidence-base/1","items":[1],"report_sha256":")" +
            std::string(64, 'a') + "\"}",
        R"({"format":"dpuaudit-agent-evidence-base/1","items":[],"report_sha256":")" +
            std::string(64, 'a') + R"(","report_sha256":"b"})"}) {
    ASSERT_TRUE(WriteFileAtomic(path_, AsBytes(body), 0600).ok());
    EXPECT_FALSE(LoadEvidenceBase(path_).has_value()) << body;
  }
}

}  // namespace evidence_base_test
}  // namespace dpuaudit::apps
