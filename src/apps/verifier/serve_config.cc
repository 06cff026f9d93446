#include "apps/verifier/serve_config.h"

#include <filesystem>
#include <fstream>

namespace dpuaudit::apps {

StatusOr<std::vector<std::string>> ExpandServeConfig(const CLI::App& serve, int argc,
                                                     char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.size() < 2 || args[1] != "serve") return args;
  std::string path;
  int found = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "--config" && i + 1 < args.size()) {
      path = args[i + 1];
      ++found;
    } else if (args[i].rfind("--config=", 0) == 0) {
      path = args[i].substr(9);
      ++found;
    }
  }
  if (found == 0) return args;
  if (found > 1) return InvalidArgumentError("--config may be given once.");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return InvalidArgumentError("--config " + path + ": no such file.");
  }
  std::ifstream in(path);
  if (!in.good()) return InvalidArgumentError("--config " + path + ": cannot be read.");
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const std::exception& e) {
    return InvalidArgumentError("--config " + path + ": " + e.what());
  }
  std::vector<std::string> settings;
  for (const CLI::ConfigItem& item : items) {
    if (!item.parents.empty()) {
      return InvalidArgumentError("--config " + path + ": sections are not allowed ([" +
                                  item.parents.front() +
                                  "]); every key is a serve flag at the top level.");
    }
    const std::string where = "--config " + path + ": key \"" + item.name + "\"";
    const CLI::Option* opt = serve.get_option_no_throw("--" + item.name);
    if (item.name == "config" || item.name == "help" || opt == nullptr ||
        item.name.find('=') != std::string::npos) {
      return InvalidArgumentError(where +
                                  " is not a serve flag (dpuaudit-verifier serve --help "
                                  "lists them, without their leading dashes).");
    }
    if (item.inputs.size() != 1) return InvalidArgumentError(where + " must have one value.");
    settings.push_back("--" + item.name + "=" + item.inputs.front());
  }
  args.insert(args.begin() + 2, settings.begin(), settings.end());
  return args;
}

}  // namespace dpuaudit::apps
