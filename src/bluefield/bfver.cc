#include "bluefield/bfver.h"

#include <string>
#include <vector>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

constexpr std::string_view kWhat = "bfver output";

// `text` is also ParseBfver's parameter: these name the helpers directly.
using text::Excerpt;
using text::LineError;
using text::Trim;

// Sets *field once; a second value is an error.
Status SetOnce(int line, std::string_view key, std::string_view value,
               std::string* field) {
  if (!field->empty()) {
    return LineError(kWhat, line, "'" + std::string(key) + "' repeated.");
  }
  if (value.empty()) {
    return LineError(kWhat, line, "'" + std::string(key) + "' has an empty value.");
  }
  *field = std::string(value);
  return OkStatus();
}

}  // namespace

std::string_view AtfBuildName(AtfBuild build) {
  switch (build) {
    case AtfBuild::kRelease:
      return "release";
    case AtfBuild::kDebug:
      return "debug";
    case AtfBuild::kUnknown:
      return "unknown";
  }
  return "unknown";
}

StatusOr<BfverInfo> ParseBfver(std::string_view text) {
  BfverInfo info;
  bool have_partition = false;
  bool have_os = false;
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (raw.find('\0') != std::string_view::npos) {
      return LineError(kWhat, number, "contains a NUL byte.");
    }
    std::string_view line = Trim(raw);
    if (line.empty()) continue;
    if (line.substr(0, 2) == "--") {
      if (have_partition) {
        return LineError(kWhat, number,
                         "a second boot partition section; only "
                         "plain `bfver` output is supported.");
      }
      have_partition = true;
      info.boot_device = std::string(Trim(line.substr(2)));
      continue;
    }
    if (line == "No distribution version file present") {
      if (have_os) return LineError(kWhat, number, "OS release repeated.");
      have_os = true;
      continue;
    }
    size_t colon = line.find(": ");
    if (colon == std::string_view::npos && !line.empty() &&
        line.back() == ':') {
      colon = line.size() - 1;
    }
    if (colon == std::string_view::npos || colon == 0) {
      return LineError(kWhat, number,
                       "expected 'Key: value', got '" + Excerpt(line) + "'.");
    }
    std::string_view key = Trim(line.substr(0, colon));
    std::string_view value = Trim(line.substr(colon + 1));
    if (key == "BlueField ATF version") {
      DPA_RETURN_IF_ERROR(SetOnce(number, key, value, &info.atf_version));
      // bfscripts: ATF = first string matching (release|debug).
      if (value.find("(debug)") != std::string_view::npos) {
        info.atf_build = AtfBuild::kDebug;
      } else if (value.find("(release)") != std::string_view::npos) {
        info.atf_build = AtfBuild::kRelease;
      }
    } else if (key == "BlueField UEFI version") {
      DPA_RETURN_IF_ERROR(SetOnce(number, key, value, &info.uefi_version));
    } else if (key == "BlueField BSP version") {
      DPA_RETURN_IF_ERROR(SetOnce(number, key, value, &info.bsp_version));
    } else if (key == "OS Release Version" || key == "Yocto Release Version") {
      if (have_os) return LineError(kWhat, number, "OS release repeated.");
      have_os = true;
      info.os_release_label = std::string(key);
      DPA_RETURN_IF_ERROR(SetOnce(number, key, value, &info.os_release));
    } else {
      info.other.emplace_back(std::string(key), std::string(value));
    }
  }
  if (info.atf_version.empty()) {
    return InvalidArgumentError(std::string(kWhat) +
                                ": no 'BlueField ATF version' line.");
  }
  return info;
}

}  // namespace dpuaudit::bluefield
