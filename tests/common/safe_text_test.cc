#include "common/safe_text.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/finding.h"

namespace dpuaudit {
namespace {

using namespace std::string_literals;

constexpr char kFffd[] = "\xEF\xBF\xBD";

std::string Fffd(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += kFffd;
  return out;
}

TEST(SafeTextTest, WellFormedTextIsUnchanged) {
  for (const std::string& s :
       {""s, "4.9.1.13442"s, "v2.2(release):4.9.1-21-gfc25b08d9"s,
        "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x94\x92"s,
        "a \\x07 backslash stays"s, "\xEF\xBF\xBD"s, "\xF4\x8F\xBF\xBF"s}) {
    EXPECT_EQ(SafeText(s), s);
    EXPECT_TRUE(IsSafeText(s)) << s;
  }
}

struct Case {
  std::string name;
  std::string in;
  std::string want;
};

TEST(SafeTextTest, IllFormedUtf8BecomesOneReplacementPerMaximalSubpart) {
  const std::vector<Case> cases = {
      {"Latin-1 byte in a version", "4.9.1\xE9-21", "4.9.1"s + kFffd + "-21"},
      {"lone continuation bytes", "\x80\xBF", Fffd(2)},
      {"never a lead byte", "\xC0\xC1\xF5\xFF", Fffd(4)},
      {"overlong two-byte /", "\xC0\xAF", Fffd(2)},
      {"overlong three-byte", "\xE0\x80\xAF", Fffd(3)},
      {"UTF-16 surrogate", "\xED\xA0\x80", Fffd(3)},
      {"above U+10FFFF", "\xF4\x90\x80\x80", Fffd(4)},
      {"cut short at the end", "ok\xE2\x82", "ok"s + kFffd},
      {"cut short by ASCII", "\xF0\x9F\x94z", kFffd + "z"s},
      // Unicode 15.0 Table 3-8.
      {"Unicode table 3-8", "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64",
       "a"s + Fffd(3) + "b" + Fffd(1) + "c" + Fffd(2) + "d"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SafeText(c.in), c.want) << c.name;
    EXPECT_FALSE(IsSafeText(c.in)) << c.name;
  }
}

TEST(SafeTextTest, ControlAndFormattingCharactersAreEscaped) {
  const std::vector<Case> cases = {
      {"NUL", "a\0b"s, "a\\x00b"},
      {"terminal escape", "\x1B[31mred", "\\x1b[31mred"},
      {"newline, CR, tab", "l1\nl2\r\t", "l1\\x0al2\\x0d\\x09"},
      {"DEL", "x\x7F", "x\\x7f"},
      {"C1 NEL", "x\xC2\x85y", "x\\u0085y"},
      {"right-to-left override", "abc\xE2\x80\xAE" "def", "abc\\u202edef"},
      {"line separator", "\xE2\x80\xA8", "\\u2028"},
      {"first strong isolate", "\xE2\x81\xA8", "\\u2068"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SafeText(c.in), c.want) << c.name;
    EXPECT_FALSE(IsSafeText(c.in)) << c.name;
  }
}

TEST(SafeTextTest, LongTextIsCutAtACharacterBoundary) {
  std::string ascii(10000, 'a');
  std::string cut = SafeText(ascii);
  EXPECT_EQ(cut.size(), kMaxSafeTextBytes);
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
  EXPECT_FALSE(IsSafeText(ascii));
  EXPECT_TRUE(IsSafeText(cut));

  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\xC3\xA9";  // 200 bytes
  for (size_t max = kMinSafeTextBytes; max < 210; ++max) {
    std::string s = SafeText(accents, max);
    EXPECT_LE(s.size(), max);
    EXPECT_TRUE(IsSafeText(s, max)) << max;
    EXPECT_EQ(SafeText(s, max), s) << max;
    if (max >= accents.size()) {
      EXPECT_EQ(s, accents);
    } else {
      EXPECT_EQ(s.substr(s.size() - 3), "...") << max;
    }
  }
  // Escapes are never split either: 20 controls are 80 bytes escaped.
  std::string s = SafeText(std::string(20, '\x01'), 30);
  EXPECT_EQ(s, "\\x01\\x01\\x01\\x01\\x01\\x01...");
  // A bound below the minimum is raised to it.
  EXPECT_EQ(SafeText(ascii, 0).size(), kMinSafeTextBytes);
}

// Random bytes: the result is always safe, a fixed point, agrees with
// IsSafeText, and text repaired by nlohmann's error_handler_t::replace (a
// finding that crossed the report's JSON) gives the same safe text.
TEST(SafeTextTest, RandomBytesAgreeWithJsonReplace) {
  std::mt19937 rng(12);
  const std::string alphabet =
      "a.-\n\x01\x7F\x80\x8F\x9F\xA0\xBF\xC2\xC3\xDF\xE0\xE1\xE2\xED\xEF"
      "\xF0\xF1\xF4\xF5\xFF";
  for (int i = 0; i < 20000; ++i) {
    std::string in(rng() % 24, '\0');
    for (char& c : in) c = alphabet[rng() % alphabet.size()];
    const std::string safe = SafeText(in);
    ASSERT_TRUE(IsSafeText(safe)) << i;
    ASSERT_EQ(SafeText(safe), safe) << i;
    ASSERT_EQ(IsSafeText(in), safe == in) << i;
    std::string dumped = nlohmann::json(in).dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string repaired = nlohmann::json::parse(dumped).get<std::string>();
    ASSERT_EQ(SafeText(repaired), safe) << i;
  }
}

TEST(SafeTextTest, MakeSafeCoversEveryTextFieldOfAFinding) {
  Finding f{"fw.bsp_version\x01",  Verdict::kPass, "4.9.1\xE9",
            "\x1B[2J",             "bfver\xFF",     "why\n",
            "command:bfver\xC2"};
  EXPECT_FALSE(IsSafe(f));
  MakeSafe(f);
  EXPECT_TRUE(IsSafe(f));
  EXPECT_EQ(f.id, "fw.bsp_version\\x01");
  EXPECT_EQ(f.observed, "4.9.1"s + kFffd);
  EXPECT_EQ(f.expected, "\\x1b[2J");
  EXPECT_EQ(f.source, "bfver"s + kFffd);
  EXPECT_EQ(f.reason, "why\\x0a");
  EXPECT_EQ(f.evidence_id, "command:bfver"s + kFffd);
  EXPECT_EQ(f.verdict, Verdict::kPass);
  Finding again = f;
  MakeSafe(again);
  EXPECT_EQ(again, f);
}

}  // namespace
}  // namespace dpuaudit
