// Table-driven tests of the boot-tool parsers (bluefield/boot_tools.h) over synthetic
// inputs built in code, one comment per field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bluefield/boot_tools.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::HasSubstr;

TEST(ParseLifecycleStateTest, AcceptsEveryDriverString) {
  for (std::string_view s : kLifecycleStates) {
    StatusOr<std::string> v = ParseLifecycleState(std::string(s) + "\n");
    ASSERT_TRUE(v.ok()) << s << ": " << v.status().ToString();
    EXPECT_EQ(*v, s);
  }
}

TEST(ParseLifecycleStateTest, RejectsOthers) {
  struct Case {
    std::string in;
    std::string message;
  } cases[] = {
      {"", "unrecognised lifecycle state ''"},
      {"ga secured\n", "unrecognised lifecycle state 'ga secured'"},
      {"GA  Secured", "unrecognised lifecycle state 'GA  Secured'"},
      {"Secured(development)", "unrecognised lifecycle state"},
      {"GA Secured (test)", "unrecognised lifecycle state"},
      {std::string("GA Secured\0", 11), "NUL byte at offset 10"},
  };
  for (const Case& c : cases) {
    StatusOr<std::string> v = ParseLifecycleState(c.in);
    ASSERT_FALSE(v.ok()) << c.in;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(v.status().message(), HasSubstr(c.message));
  }
}

TEST(ParseSecureBootFuseStateTest, AcceptsDriverFormat) {
  // Keys 3..0 as "%d:%s ", then "\n" (docs/bluefield.md#lifecycle).
  StatusOr<SecureBootFuseState> s =
      ParseSecureBootFuseState("3:Free 2:Wasted 1:Skipped 0:Used \n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->slots.size(), 4u);
  EXPECT_EQ(s->slots[0].key, 3);
  EXPECT_EQ(s->slots[0].status, FuseStatus::kFree);
  EXPECT_EQ(s->slots[1].status, FuseStatus::kWasted);
  EXPECT_EQ(s->slots[2].status, FuseStatus::kSkipped);
  EXPECT_EQ(s->slots[3].key, 0);
  EXPECT_EQ(s->slots[3].status, FuseStatus::kUsed);
  EXPECT_EQ(DescribeFuseState(*s),
            "key slots in use: 0; free: 3; ATTENTION: slot 2 Wasted");
}

TEST(ParseSecureBootFuseStateTest, DescribesEachStatus) {
  struct Case {
    std::string in;
    std::string description;
  } cases[] = {
      {"3:Free 2:Free 1:Free 0:Used \n", "key slots in use: 0; free: 3,2,1"},
      {"3:Free 2:Free 1:Free 0:Free \n", "key slots in use: none; free: "
                                         "3,2,1,0"},
      {"3:InUse 2:Used 1:Invalid 0:Incomplete",
       "key slots in use: 3,2; free: none; ATTENTION: slot 1 Invalid, slot 0 "
       "Incomplete"},
  };
  for (const Case& c : cases) {
    StatusOr<SecureBootFuseState> s = ParseSecureBootFuseState(c.in);
    ASSERT_TRUE(s.ok()) << c.in << ": " << s.status().ToString();
    EXPECT_EQ(DescribeFuseState(*s), c.description);
  }
}

TEST(ParseSecureBootFuseStateTest, Rejects) {
  struct Case {
    std::string in;
    std::string message;
  } cases[] = {
      {"", "has 0 key slots, expected 4"},
      {"3:Free 2:Free 1:Free", "has 3 key slots, expected 4"},
      {"3:Free 2:Free 1:Free 0:Used 4:Free", "has 5 key slots"},
      {"0:Used 1:Free 2:Free 3:Free", "token 1 '0:Used' is not '3:<status>'"},
      {"3:Free 2:Free 1:Free 0:Burnt", "key 0: unknown status 'Burnt'"},
      {"3:free 2:Free 1:Free 0:Used", "key 3: unknown status 'free'"},
      {"3: 2:Free 1:Free 0:Used", "token 1 '3:' is not '3:<status>'"},
      {"3=Free 2:Free 1:Free 0:Used", "token 1 '3=Free'"},
  };
  for (const Case& c : cases) {
    StatusOr<SecureBootFuseState> s = ParseSecureBootFuseState(c.in);
    ASSERT_FALSE(s.ok()) << c.in;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr(c.message)) << c.in;
  }
}

TEST(ParseMokutilSbStateTest, AcceptsAndRejects) {
  struct Case {
    std::string in;
    bool ok;
    bool secure_boot;
    bool setup_mode;
    bool shim_off;
    std::string message;
  } cases[] = {
      {"SecureBoot enabled\n", true, true, false, false, ""},
      {"SecureBoot disabled\n", true, false, false, false, ""},
      {"SecureBoot disabled\nPlatform is in Setup Mode\n", true, false, true,
       false, ""},
      {"SecureBoot enabled\nSecureBoot validation is disabled in shim\n", true,
       true, false, true, ""},
      {"", false, false, false, false, "printed no SecureBoot line"},
      {"This system doesn't support Secure Boot\n", false, false, false, false,
       "line 1: expected 'SecureBoot enabled|disabled'"},
      {"SecureBoot enabled\nSecureBoot enabled\n", false, false, false, false,
       "line 2: unexpected line 'SecureBoot enabled'"},
      {"SecureBoot disabled\nPlatform is in Setup Mode\n"
       "Platform is in Setup Mode\n",
       false, false, false, false, "line 3: 'Platform is in Setup Mode' "
                                   "repeated"},
  };
  for (const Case& c : cases) {
    StatusOr<MokutilSbState> s = ParseMokutilSbState(c.in);
    ASSERT_EQ(s.ok(), c.ok) << c.in << s.status().ToString();
    if (c.ok) {
      EXPECT_EQ(s->secure_boot, c.secure_boot) << c.in;
      EXPECT_EQ(s->setup_mode, c.setup_mode) << c.in;
      EXPECT_EQ(s->shim_validation_disabled, c.shim_off) << c.in;
    } else {
      EXPECT_THAT(s.status().message(), HasSubstr(c.message)) << c.in;
    }
  }
}

// The bfsbdump layout (docs/bluefield.md#bfsbdump; BlueField-3, production
// keys).
constexpr char kBfsbdumpBf3[] =
    "\n"
    " BlueField3\n"
    "----------------------\n"
    "NV Production        : 1\n"
    "Arm Life Cycle       : Secure\n"
    "Secure Boot          : Enabled\n"
    "Secure Boot Key      : Production\n"
    "Secure Boot Key Valid: 1\n"
    "Secure Boot Key Count: 1\n"
    "Crypto               : Enabled\n"
    "Trusted FW counter   : 2\n"
    "Untrusted FW counter : 3\n"
    "REVMC                : 0\n"
    "DOTMC                : 0\n"
    "DOT FSBL Version     : 4.9.0.0\n"
    "DOT ID               : 0x1234abcd\n"
    "----------------------\n";

TEST(ParseBfsbdumpTest, ParsesEveryField) {
  StatusOr<Bfsbdump> b = ParseBfsbdump(kBfsbdumpBf3);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->platform, "BlueField3");
  EXPECT_EQ(b->nv_production, "1");
  EXPECT_EQ(b->arm_life_cycle, "Secure");
  EXPECT_EQ(b->secure_boot, "Enabled");
  EXPECT_EQ(b->secure_boot_key, "Production");
  EXPECT_EQ(b->secure_boot_key_valid, "1");
  EXPECT_EQ(b->secure_boot_key_count, "1");
  EXPECT_EQ(b->crypto, "Enabled");
  EXPECT_EQ(b->trusted_fw_counter, "2");
  EXPECT_EQ(b->untrusted_fw_counter, "3");
  EXPECT_FALSE(b->cerberus_counter.has_value());  // BF2 only
  EXPECT_EQ(b->revmc, "0");
  EXPECT_EQ(b->dotmc, "0");
  EXPECT_EQ(b->dot_fsbl_version, "4.9.0.0");
  EXPECT_EQ(b->dot_id, "0x1234abcd");
  EXPECT_FALSE(b->ecid.has_value());
  EXPECT_TRUE(b->other.empty());
}

TEST(ParseBfsbdumpTest, ToleratesSpacingAndUnknownKeys) {
  StatusOr<Bfsbdump> b = ParseBfsbdump(
      "BlueField2\r\n"
      "Secure   Boot :Enabled\r\n"     // odd inner and outer spacing
      "Secure Boot Key:Development\n"  // no alignment at all
      "Cerberus counter : 5\n"
      "New Field : x:y\n");  // unknown key; value keeps its ':'
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->platform, "BlueField2");
  EXPECT_EQ(b->secure_boot, "Enabled");
  EXPECT_EQ(b->secure_boot_key, "Development");
  EXPECT_EQ(b->cerberus_counter, "5");
  ASSERT_EQ(b->other.size(), 1u);
  EXPECT_EQ(b->other[0].first, "New Field");
  EXPECT_EQ(b->other[0].second, "x:y");
}

TEST(ParseBfsbdumpTest, Rejects) {
  struct Case {
    std::string in;
    std::string message;
  } cases[] = {
      {"", "printed no 'Secure Boot' line"},
      {"BlueField3\n---\nArm Life Cycle : Secure\n",
       "printed no 'Secure Boot' line"},
      {"Secure Boot : Maybe\n", "'Secure Boot' is 'Maybe', expected "
                                "Enabled|Disabled"},
      {"Secure Boot : Enabled\nSecure Boot Key : Test\n",
       "'Secure Boot Key' is 'Test'"},
      {"Secure Boot : Enabled\n", "no 'Secure Boot Key' although Secure Boot "
                                  "is Enabled"},
      {"Secure Boot : Disabled\nSecure Boot Key : Production\n",
       "'Secure Boot Key' although Secure Boot is Disabled"},
      {"Secure Boot : Disabled\nSecure Boot : Enabled\n",
       "line 2: 'Secure Boot' given twice"},
      {"Secure Boot : Disabled\nArm Life Cycle : GA\n",
       "'Arm Life Cycle' is 'GA'"},
      {"Secure Boot : Disabled\nCrypto : on\n", "'Crypto' is 'on'"},
      {"BlueField3\n----\ngarbage\nSecure Boot : Disabled\n",
       "line 3: no ':' in 'garbage'"},
      {"A\nB\nSecure Boot : Disabled\n", "line 2: no ':' in 'B'"},
      {std::string("Secure Boot : Disabled\n\0", 24), "NUL byte"},
  };
  for (const Case& c : cases) {
    StatusOr<Bfsbdump> b = ParseBfsbdump(c.in);
    ASSERT_FALSE(b.ok()) << c.in;
    EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(b.status().message(), HasSubstr(c.message)) << c.in;
  }
}

TEST(ParseKernelLockdownTest, AcceptsAndRejects) {
  struct Case {
    std::string in;
    bool ok;
    LockdownMode mode;
    std::string message;
  } cases[] = {
      {"[none] integrity confidentiality\n", true, LockdownMode::kNone, ""},
      {"none [integrity] confidentiality\n", true, LockdownMode::kIntegrity,
       ""},
      {"none integrity [confidentiality]\n", true,
       LockdownMode::kConfidentiality, ""},
      {"", false, LockdownMode::kNone, "lockdown file is empty"},
      {"none integrity confidentiality\n", false, LockdownMode::kNone,
       "brackets no mode"},
      {"[none] [integrity] confidentiality", false, LockdownMode::kNone,
       "brackets more than one mode"},
      {"[none] paranoid", false, LockdownMode::kNone,
       "token 2 'paranoid' is not a lockdown mode"},
      {"[none] none", false, LockdownMode::kNone, "'none' listed twice"},
      {"[ none ] integrity", false, LockdownMode::kNone,
       "token 1 '[' is not a lockdown mode"},
  };
  for (const Case& c : cases) {
    StatusOr<LockdownMode> m = ParseKernelLockdown(c.in);
    ASSERT_EQ(m.ok(), c.ok) << c.in << m.status().ToString();
    if (c.ok) {
      EXPECT_EQ(*m, c.mode) << c.in;
    } else {
      EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
      EXPECT_THAT(m.status().message(), HasSubstr(c.message)) << c.in;
    }
  }
}

}  // namespace
}  // namespace dpuaudit::bluefield
