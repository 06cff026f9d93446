// The exit codes every binary documents in --help and keeps to on usage
// errors (0 success/admit, 1 deny or verification failure, 2 usage or
// runtime error), against the real binaries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
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

// The subcommands `--help` lists ("Subcommands:" up to a blank line, one
// "  NAME  description" each).
std::vector<std::string> Subcommands(const std::string& help) {
  std::vector<std::string> out;
  std::istringstream in(help);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "Subcommands:") {
      inside = true;
    } else if (inside && line.empty()) {
      inside = false;
    } else if (inside && line.size() > 2 && line.compare(0, 2, "  ") == 0 && line[2] != ' ') {
      out.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return out;
}

// Every command of the three binaries, found by walking their --help: each
// documents its exit codes and refuses an unknown option with a usage
// error (exit 2, CLI11's message on stderr, nothing on stdout, nothing run).
TEST(ExitCodesTest, EverySubcommandRefusesAnUnknownOptionWithTwo) {
  size_t commands = 0;
  for (const std::string& b : Binaries()) {
    std::vector<std::vector<std::string>> to_visit = {{}};
    while (!to_visit.empty()) {
      std::vector<std::string> path = to_visit.back();
      to_visit.pop_back();
      std::vector<std::string> argv = {kBin + "/" + b};
      argv.insert(argv.end(), path.begin(), path.end());
      std::string line = b;
      for (const auto& a : path) line += " " + a;
      std::vector<std::string> help = argv;
      help.push_back("--help");
      Proc h = Exec(help);
      ASSERT_EQ(h.exit_code, 0) << line << " --help\n" << h.err;
      EXPECT_THAT(h.out, HasSubstr("Exit codes: 0 success (admit)")) << line;
      for (const std::string& sub : Subcommands(h.out)) {
        std::vector<std::string> next = path;
        next.push_back(sub);
        to_visit.push_back(next);
      }
      if (path.empty()) continue;  // the binary itself: UsageErrorsExitTwoInEveryBinary
      ++commands;
      argv.push_back("--no-such-option-j2");
      Proc p = Exec(argv);
      EXPECT_EQ(p.exit_code, 2) << line << " --no-such-option-j2\n" << p.out << p.err;
      EXPECT_THAT(p.err, HasSubstr("Run with --help for more information.")) << line;
      EXPECT_TRUE(p.out.empty()) << line << ": " << p.out;
    }
  }
  // Not vacuous: the walk found the commands (dpuaudit alone has over 40).
  EXPECT_GT(commands, 60u);
}

}  // namespace
}  // namespace dpuaudit::itest
