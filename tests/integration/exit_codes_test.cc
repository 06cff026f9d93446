// The exit codes every binary documents in --help and keeps to on usage
// errors (0 success/admit, 1 deny or verification failure, 2 usage or
// runtime error), against the real binaries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "integration/harness.h"

namespace dpuaudit::itest {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string>& Binaries() {
  static const std::vector<std::string> kBinaries = {"dpuaudit-agent", "dpuaudit-verifier",
                                                     "dpuaudit"};
  return kBinaries;
}

TEST(ExitCodesTest, EveryBinaryDocumentsItsExitCodesInHelp) {
  for (const std::string& b : Binaries()) {
    Proc p = Exec({kBin + "/" + b, "--help"});
    EXPECT_EQ(p.exit_code, 0) << b << p.err;
    EXPECT_THAT(p.out, HasSubstr("Exit codes: 0 success (admit), 1 deny or verification "
                                 "failure, 2 usage or runtime error."))
        << b;
  }
}

TEST(ExitCodesTest, UsageErrorsExitTwoInEveryBinary) {
  const std::vector<std::vector<std::string>> cases = {
      {"dpuaudit-agent", "--no-such-flag"},
      {"dpuaudit-agent", "attest"},                        // required options missing
      {"dpuaudit-agent", "attest", "--verifier"},          // an option without its value
      {"dpuaudit-verifier", "--no-such-flag"},
      {"dpuaudit-verifier", "approve"},                    // the node id missing
      {"dpuaudit-verifier", "serve", "--nonce-ttl", "x"},  // not a number
      {"dpuaudit", "--no-such-flag"},
      {"dpuaudit", "bmc", "approve", "--node", "n"},       // --by, --reason, ... missing
      {"dpuaudit", "no-such-command"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = c;
    argv[0] = kBin + "/" + argv[0];
    Proc p = Exec(argv);
    std::string line;
    for (const auto& a : c) line += a + " ";
    EXPECT_EQ(p.exit_code, 2) << line << "\n" << p.out << p.err;
    EXPECT_FALSE(p.err.empty() && p.out.empty()) << line << ": no message";
  }
}

}  // namespace
}  // namespace dpuaudit::itest
