// The exit codes every dpuaudit binary uses, and CLI11 parsing that keeps
// to them.
//
// Guarantees: ParseCommandLine returns nullopt when the command line
// parsed (the caller dispatches), 0 after --help / --version, and
// kUsageExit for any usage error (unknown option, missing or malformed
// value, missing subcommand) after CLI11 printed its message: never
// CLI11's own codes (105-109). kExitCodesFooter is the `--help` footer of
// every binary and each of its subcommands (the codes and the rule for
// refusals: apps/shared/exit_code.h).
// Does not: decide what 1 means for a command (each documents it).
#ifndef DPUAUDIT_APPS_SHARED_CLI_EXIT_H_
#define DPUAUDIT_APPS_SHARED_CLI_EXIT_H_

#include <optional>

#include <CLI/CLI.hpp>

#include "apps/shared/exit_code.h"

namespace dpuaudit::apps {

inline constexpr const char* kExitCodesFooter =
    "Exit codes: 0 success (admit), 1 deny or verification failure, 2 usage or runtime error.";

// The footer on `app` and every subcommand below it.
inline void SetExitCodesFooter(CLI::App& app) {
  app.footer(kExitCodesFooter);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    SetExitCodesFooter(*sub);
  }
}

inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  SetExitCodesFooter(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help, version or the usage error
    return rc == 0 ? 0 : kUsageExit;
  }
  return std::nullopt;
}

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_CLI_EXIT_H_
