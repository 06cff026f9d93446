#include "bluefield/mlxprivhost.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "isolation/shared_fixtures.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::HasSubstr;

// `"%-30s: %s"` row as printed by mstprivhost.py printConfOut (§1.4).
std::string Row(const std::string& name, const std::string& value) {
  std::string padded = name;
  padded.resize(30, ' ');
  return padded + ": " + value + "\n";
}

std::string Render(const std::string& title, const std::string& level,
                   const std::string& rshim, const std::string& tracer,
                   const std::string& port_owner, const std::string& counter_rd,
                   const std::string& host_index = "") {
  std::string out = title + "\n" + std::string(title.size(), '-') + "\n";
  if (!host_index.empty()) out += Row("host index", host_index);
  out += Row("level", level) + "\n";
  out += "Port functions status:\n-----------------------\n";
  out += Row("disable_rshim", rshim) + Row("disable_tracer", tracer) +
         Row("disable_port_owner", port_owner) +
         Row("disable_counter_rd", counter_rd) + "\n";
  return out;
}

bool FromJson(const nlohmann::json& j, const char* key) {
  return j[key].get<std::string>() == "TRUE";
}

TEST(MlxprivhostTest, SharedRestrictedFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "bmm-mlxprivhost-query-restricted.txt");
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->title, MlxprivhostTitle::kHostConfigurations);
  EXPECT_FALSE(q->full);
  ASSERT_EQ(q->hosts.size(), 1u);
  const HostPrivilege& h = q->hosts[0];
  EXPECT_EQ(PrivilegeLevelName(h.level),
            text_expected["level"].get<std::string>());
  EXPECT_EQ(h.disable_rshim, FromJson(text_expected, "disable_rshim"));
  EXPECT_EQ(h.disable_tracer, FromJson(text_expected, "disable_tracer"));
  EXPECT_EQ(h.disable_port_owner,
            FromJson(text_expected, "disable_port_owner"));
  EXPECT_EQ(h.disable_counter_rd,
            FromJson(text_expected, "disable_counter_rd"));
  EXPECT_EQ(h.level, PrivilegeLevel::kRestricted);
  EXPECT_EQ(h.disable_rshim, true);
}

TEST(MlxprivhostTest, SharedPrivilegedOldTitleFixture) {
  SHARED_FIXTURE_OR_SKIP(text, "dpuops-mlxprivhost-query-privileged.txt");
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->title, MlxprivhostTitle::kCurrentDeviceConfigurations);
  ASSERT_EQ(q->hosts.size(), 1u);
  const HostPrivilege& h = q->hosts[0];
  EXPECT_EQ(PrivilegeLevelName(h.level),
            text_expected["level"].get<std::string>());
  EXPECT_EQ(h.level, PrivilegeLevel::kPrivileged);
  EXPECT_EQ(h.disable_rshim, FromJson(text_expected, "disable_rshim"));
  EXPECT_EQ(h.disable_tracer, FromJson(text_expected, "disable_tracer"));
  EXPECT_EQ(h.disable_port_owner,
            FromJson(text_expected, "disable_port_owner"));
  EXPECT_EQ(h.disable_counter_rd,
            FromJson(text_expected, "disable_counter_rd"));
  EXPECT_EQ(h.disable_rshim, false);
}

TEST(MlxprivhostTest, ProjectFixturesParse) {
  for (const char* node : {"bf3-zero-trust", "bf3-privileged-host"}) {
    auto text = testing::ReadTextFile(testing::ProjectFixturePath(
        std::string(node) + "/out/mlxprivhost-q.txt"));
    ASSERT_TRUE(text.has_value()) << node;
    StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(*text);
    ASSERT_TRUE(q.ok()) << node << ": " << q.status().ToString();
    bool zt = std::string(node) == "bf3-zero-trust";
    EXPECT_EQ(q->hosts[0].level,
              zt ? PrivilegeLevel::kRestricted : PrivilegeLevel::kPrivileged);
    EXPECT_EQ(q->hosts[0].disable_counter_rd, zt);
  }
}

// The privileged render of §1.4, byte for byte from its Python repr.
TEST(MlxprivhostTest, PrivilegedRenderByteExact) {
  const std::string text =
      "Host configurations\n-------------------\nlevel                    "
      "     : PRIVILEGED\n\nPort functions status:\n-----------------------\n"
      "disable_rshim                 : FALSE\ndisable_tracer                : "
      "FALSE\ndisable_port_owner            : FALSE\ndisable_counter_rd     "
      "       : FALSE\n\n";
  EXPECT_EQ(text, Render("Host configurations", "PRIVILEGED", "FALSE", "FALSE",
                         "FALSE", "FALSE"));
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->hosts[0].level, PrivilegeLevel::kPrivileged);
  EXPECT_EQ(q->hosts[0].disable_port_owner, false);
}

// `mlxprivhost r` with no flags: RESTRICTED but nothing disabled. Each
// field must come from its own line, never from `level`.
TEST(MlxprivhostTest, PartialRestrictionIsNotInferredFromLevel) {
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(Render(
      "Host configurations", "RESTRICTED", "FALSE", "FALSE", "FALSE", "FALSE"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const HostPrivilege& h = q->hosts[0];
  EXPECT_EQ(h.level, PrivilegeLevel::kRestricted);
  EXPECT_EQ(h.disable_rshim, false);
  EXPECT_EQ(h.disable_tracer, false);
  EXPECT_EQ(h.disable_port_owner, false);
  EXPECT_EQ(h.disable_counter_rd, false);
}

TEST(MlxprivhostTest, MixedFlagsKeyedOnName) {
  // Rows reordered, each with a different value.
  std::string text =
      "Host configurations\n-------------------\n" +
      Row("level", "RESTRICTED") + "\n" + Row("disable_counter_rd", "TRUE") +
      Row("disable_rshim", "FALSE") + Row("disable_port_owner", "TRUE") +
      Row("disable_tracer", "FALSE");
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->hosts[0].disable_counter_rd, true);
  EXPECT_EQ(q->hosts[0].disable_rshim, false);
  EXPECT_EQ(q->hosts[0].disable_port_owner, true);
  EXPECT_EQ(q->hosts[0].disable_tracer, false);
}

TEST(MlxprivhostTest, FullFormWithHostIndex) {
  StatusOr<MlxprivhostQuery> q =
      ParseMlxprivhostQuery(Render("Host configurations", "RESTRICTED", "TRUE",
                                   "TRUE", "TRUE", "TRUE", "0"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_TRUE(q->full);
  ASSERT_EQ(q->hosts.size(), 1u);
  EXPECT_EQ(q->hosts[0].host_index, 0);
  EXPECT_EQ(q->hosts[0].level, PrivilegeLevel::kRestricted);
}

TEST(MlxprivhostTest, FullFormSeveralHosts) {
  // `%-13s%-13s` per host (§1.4).
  std::string text = "Host configurations\n-------------------\n" +
                     Row("host index", "0            1            ") +
                     Row("level", "RESTRICTED   PRIVILEGED   ") + "\n" +
                     Row("disable_rshim", "TRUE         FALSE        ");
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_EQ(q->hosts.size(), 2u);
  EXPECT_EQ(q->hosts[1].host_index, 1);
  EXPECT_EQ(q->hosts[1].level, PrivilegeLevel::kPrivileged);
  EXPECT_EQ(q->hosts[1].disable_rshim, false);
  EXPECT_FALSE(q->hosts[1].disable_tracer.has_value());
}

TEST(MlxprivhostTest, OldTitleRestricted) {
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(
      Render("Current device configurations:", "RESTRICTED", "TRUE", "TRUE",
             "TRUE", "TRUE"));
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->title, MlxprivhostTitle::kCurrentDeviceConfigurations);
  EXPECT_EQ(q->hosts[0].level, PrivilegeLevel::kRestricted);
}

TEST(MlxprivhostTest, AbsentFlagLineStaysEmpty) {
  std::string text =
      "Host configurations\n-------------------\n" + Row("level", "RESTRICTED");
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_FALSE(q->hosts[0].disable_rshim.has_value());
}

TEST(MlxprivhostTest, CrlfAndUnknownRowsTolerated) {
  std::string text = "Host configurations\r\n-------------------\r\n" +
                     Row("level", "RESTRICTED") + Row("disable_future", "TRUE");
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(text);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  ASSERT_EQ(q->other_rows.size(), 1u);
  EXPECT_EQ(q->other_rows[0].first, "disable_future");
}

struct ErrorCase {
  const char* name;
  std::string text;
  const char* message;
};

class MlxprivhostErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(MlxprivhostErrorTest, Rejects) {
  StatusOr<MlxprivhostQuery> q = ParseMlxprivhostQuery(GetParam().text);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(q.status().message(), HasSubstr(GetParam().message));
}

const std::string kTitle = "Host configurations\n-------------------\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, MlxprivhostErrorTest,
    ::testing::Values(
        ErrorCase{"Empty", "", "no 'Host configurations' title"},
        ErrorCase{"MissingLevel", kTitle + "\n" + Row("disable_rshim", "TRUE"),
                  "no 'level' line"},
        ErrorCase{"UnknownLevel", kTitle + Row("level", "LIMITED"),
                  "line 3: level value 'LIMITED' is neither RESTRICTED"},
        ErrorCase{
            "UnknownFlag",
            kTitle + Row("level", "RESTRICTED") + Row("disable_tracer", "yes"),
            "line 4: disable_tracer value 'yes' is neither TRUE"},
        ErrorCase{
            "RepeatedLevel",
            kTitle + Row("level", "RESTRICTED") + Row("level", "PRIVILEGED"),
            "line 4: 'level' repeated (first on line 3)"},
        ErrorCase{"ToolError",
                  "-E- Operation is not permitted (refer to the DPU user "
                  "manual)\n",
                  "line 1: expected 'name : value'"},
        ErrorCase{"NoTitle", Row("level", "RESTRICTED"),
                  "line 1: row before the 'Host configurations' title"},
        ErrorCase{"CountMismatch",
                  kTitle + Row("level", "RESTRICTED PRIVILEGED") +
                      Row("disable_rshim", "TRUE"),
                  "line 4: 'disable_rshim' has 1 values but 'level' has 2"},
        ErrorCase{"NulByte", kTitle + std::string("level : RESTR\0ICTED\n", 21),
                  "line 3: contains a NUL byte"},
        ErrorCase{"EmptyValue", kTitle + "level :\n",
                  "line 3: expected 'name : value'"}),
    [](const ::testing::TestParamInfo<ErrorCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::bluefield
