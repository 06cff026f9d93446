// Fuzz target: dpuaudit::uefi::ParseBootCurrent and dpuaudit::uefi::ParseEfiLoadOption
// (UEFI 2.x §3.1.3; efivarfs files with their 4 attribute bytes).
// Invariants: BootCurrent is accepted iff the input is 6 bytes; an accepted
// load option has a non-empty file path, and description and path are
// valid UTF-8 without NUL (they go into JSON); errors are INVALID_ARGUMENT
// with a message naming an offset or a size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "uefi/load_option.h"

namespace {

bool JsonSafe(const std::string& s) {
  if (s.find('\0') != std::string::npos) return false;
  try {
    (void)nlohmann::json(s).dump();  // throws on invalid UTF-8
  } catch (const nlohmann::json::exception&) {
    return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dpuaudit::ByteView bytes(data, data == nullptr ? 0 : size);
  auto bc = dpuaudit::uefi::ParseBootCurrent(bytes);
  if (bc.ok() != (bytes.size() == 6)) std::abort();
  if (!bc.ok() && bc.status().message().empty()) std::abort();

  auto lo = dpuaudit::uefi::ParseEfiLoadOption(bytes);
  if (!lo.ok()) {
    if (lo.status().code() != dpuaudit::StatusCode::kInvalidArgument ||
        lo.status().message().empty()) {
      std::abort();
    }
    return 0;
  }
  if (bytes.size() < 10 + 2 + 4) std::abort();  // header, NUL, end node
  if (lo->file_path.empty() || !JsonSafe(lo->file_path) ||
      !JsonSafe(lo->description)) {
    std::abort();
  }
  return 0;
}
