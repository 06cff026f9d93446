// `dpuaudit-verifier serve --config FILE` (issue 15 §5): the serve flags
// from a TOML file (docs/verifier-config.md), read with CLI11's own TOML
// reader (CLI::ConfigTOML).
//
// Guarantees: every key is the name of a long `serve` flag without its
// dashes ("listen", "nonce-ttl", "insecure-http"), at the top level, with
// one value; anything else (an unknown key, a [section], an array, an
// unreadable file) is INVALID_ARGUMENT naming the file and the key. The
// file's settings are placed before the command line's, and `serve` takes
// the last value of an option, so a flag given on the command line
// overrides the file; values are then checked by the flag's own validator
// like any other (a bad value is a usage error, exit 2).
// Does not: read any file but the one named; accept --config twice.
#ifndef DPUAUDIT_APPS_VERIFIER_SERVE_CONFIG_H_
#define DPUAUDIT_APPS_VERIFIER_SERVE_CONFIG_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace dpuaudit::apps {

// The command line with the settings of `serve --config FILE` inserted
// right after "serve" as "--key=value" arguments (unchanged when argv is
// not `serve ... --config FILE ...`).
StatusOr<std::vector<std::string>> ExpandServeConfig(const CLI::App& serve, int argc,
                                                     char** argv);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_SERVE_CONFIG_H_
