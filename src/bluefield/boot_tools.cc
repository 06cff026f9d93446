#include "bluefield/boot_tools.h"

#include <cstdio>
#include <string>

#include "common/text_lines.h"

namespace dpuaudit::bluefield {
namespace {

using text::Excerpt;
using text::Trim;

Status RejectNul(std::string_view text, std::string_view what) {
  size_t nul = text.find('\0');
  if (nul == std::string_view::npos) return OkStatus();
  return InvalidArgumentError(std::string(what) + ": NUL byte at offset " +
                              std::to_string(nul) + ".");
}

struct FuseName {
  std::string_view name;
  FuseStatus status;
};
constexpr FuseName kFuseNames[] = {
    {"InUse", FuseStatus::kInUse},     {"Used", FuseStatus::kUsed},
    {"Free", FuseStatus::kFree},       {"Skipped", FuseStatus::kSkipped},
    {"Wasted", FuseStatus::kWasted},   {"Invalid", FuseStatus::kInvalid},
    {"Incomplete", FuseStatus::kIncomplete},
};

// Trims and collapses inner runs of blanks to one space.
std::string NormaliseKey(std::string_view key) {
  std::string out;
  for (std::string_view w : text::SplitWhitespace(key)) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

bool OneOf(std::string_view v, std::initializer_list<std::string_view> set) {
  for (std::string_view s : set) {
    if (v == s) return true;
  }
  return false;
}

}  // namespace

StatusOr<std::string> ParseLifecycleState(std::string_view text) {
  DPA_RETURN_IF_ERROR(RejectNul(text, "lifecycle_state"));
  std::string_view t = Trim(text);
  for (std::string_view s : kLifecycleStates) {
    if (t == s) return std::string(s);
  }
  return InvalidArgumentError("unrecognised lifecycle state '" + Excerpt(t) +
                              "'.");
}

std::string_view FuseStatusName(FuseStatus s) {
  for (const FuseName& n : kFuseNames) {
    if (n.status == s) return n.name;
  }
  return "?";
}

StatusOr<SecureBootFuseState> ParseSecureBootFuseState(std::string_view text) {
  DPA_RETURN_IF_ERROR(RejectNul(text, "secure_boot_fuse_state"));
  std::vector<std::string_view> tokens = text::SplitWhitespace(text);
  if (tokens.size() != kSecureBootKeySlots) {
    return InvalidArgumentError(
        "secure_boot_fuse_state has " + std::to_string(tokens.size()) +
        " key slots, expected " + std::to_string(kSecureBootKeySlots) + ".");
  }
  SecureBootFuseState state;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int want_key = kSecureBootKeySlots - 1 - static_cast<int>(i);
    std::string_view tok = tokens[i];
    if (tok.size() < 3 || tok[1] != ':' ||
        tok[0] != static_cast<char>('0' + want_key)) {
      return InvalidArgumentError("secure_boot_fuse_state token " +
                                  std::to_string(i + 1) + " '" +
                                  Excerpt(tok) + "' is not '" +
                                  std::to_string(want_key) + ":<status>'.");
    }
    std::string_view name = tok.substr(2);
    const FuseName* found = nullptr;
    for (const FuseName& n : kFuseNames) {
      if (n.name == name) found = &n;
    }
    if (found == nullptr) {
      return InvalidArgumentError("secure_boot_fuse_state key " +
                                  std::to_string(want_key) +
                                  ": unknown status '" + Excerpt(name) + "'.");
    }
    state.slots.push_back(FuseSlot{want_key, found->status});
  }
  return state;
}

std::string DescribeFuseState(const SecureBootFuseState& state) {
  std::string in_use;
  std::string free;
  std::string attention;
  auto append = [](std::string* list, const std::string& item) {
    if (!list->empty()) *list += ",";
    *list += item;
  };
  for (const FuseSlot& s : state.slots) {
    const std::string key = std::to_string(s.key);
    switch (s.status) {
      case FuseStatus::kInUse:
      case FuseStatus::kUsed:
        append(&in_use, key);
        break;
      case FuseStatus::kFree:
        append(&free, key);
        break;
      case FuseStatus::kSkipped:
        break;
      case FuseStatus::kWasted:
      case FuseStatus::kInvalid:
      case FuseStatus::kIncomplete:
        if (!attention.empty()) attention += ", ";
        attention += "slot " + key + " " + std::string(FuseStatusName(s.status));
        break;
    }
  }
  std::string out = "key slots in use: " + (in_use.empty() ? "none" : in_use) +
                    "; free: " + (free.empty() ? "none" : free);
  if (!attention.empty()) out += "; ATTENTION: " + attention;
  return out;
}

StatusOr<MokutilSbState> ParseMokutilSbState(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<text::Line> lines,
                       text::SplitLines(text, "mokutil --sb-state"));
  MokutilSbState st;
  bool have_state = false;
  for (const text::Line& l : lines) {
    std::string_view t = Trim(l.text);
    if (t.empty()) continue;
    const std::string where =
        "mokutil --sb-state line " + std::to_string(l.number);
    if (!have_state) {
      if (t == "SecureBoot enabled") {
        st.secure_boot = true;
      } else if (t != "SecureBoot disabled") {
        return InvalidArgumentError(where + ": expected 'SecureBoot "
                                            "enabled|disabled', got '" +
                                    Excerpt(t) + "'.");
      }
      have_state = true;
      continue;
    }
    bool* note = nullptr;
    if (t == "Platform is in Setup Mode") {
      note = &st.setup_mode;
    } else if (t == "SecureBoot validation is disabled in shim") {
      note = &st.shim_validation_disabled;
    } else {
      return InvalidArgumentError(where + ": unexpected line '" + Excerpt(t) +
                                  "'.");
    }
    if (*note) {
      return InvalidArgumentError(where + ": '" + std::string(t) +
                                  "' repeated.");
    }
    *note = true;
  }
  if (!have_state) {
    return InvalidArgumentError("mokutil --sb-state printed no SecureBoot "
                                "line.");
  }
  return st;
}

StatusOr<Bfsbdump> ParseBfsbdump(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<text::Line> lines,
                       text::SplitLines(text, "bfsbdump"));
  Bfsbdump b;
  bool seen_rule = false;
  bool seen_title = false;
  std::optional<std::string> Bfsbdump::*const kFields[] = {
      &Bfsbdump::nv_production,       &Bfsbdump::arm_life_cycle,
      &Bfsbdump::secure_boot,         &Bfsbdump::secure_boot_key,
      &Bfsbdump::secure_boot_key_valid, &Bfsbdump::secure_boot_key_count,
      &Bfsbdump::crypto,              &Bfsbdump::trusted_fw_counter,
      &Bfsbdump::untrusted_fw_counter, &Bfsbdump::cerberus_counter,
      &Bfsbdump::revmc,               &Bfsbdump::dotmc,
      &Bfsbdump::dot_fsbl_version,    &Bfsbdump::dot_id,
      &Bfsbdump::ecid,
  };
  constexpr std::string_view kKeys[] = {
      "NV Production",         "Arm Life Cycle",
      "Secure Boot",           "Secure Boot Key",
      "Secure Boot Key Valid", "Secure Boot Key Count",
      "Crypto",                "Trusted FW counter",
      "Untrusted FW counter",  "Cerberus counter",
      "REVMC",                 "DOTMC",
      "DOT FSBL Version",      "DOT ID",
      "ECID",
  };
  static_assert(std::size(kKeys) == std::size(kFields));
  for (const text::Line& l : lines) {
    if (text::IsBlank(l.text)) continue;
    if (text::IsDashRule(l.text)) {
      seen_rule = true;
      continue;
    }
    const std::string where = "bfsbdump line " + std::to_string(l.number);
    size_t colon = l.text.find(':');
    if (colon == std::string_view::npos) {
      if (!seen_rule && !seen_title) {
        b.platform = std::string(Trim(l.text));
        seen_title = true;
        continue;
      }
      return InvalidArgumentError(where + ": no ':' in '" +
                                  Excerpt(Trim(l.text)) + "'.");
    }
    std::string key = NormaliseKey(l.text.substr(0, colon));
    std::string value(Trim(l.text.substr(colon + 1)));
    bool known = false;
    for (size_t i = 0; i < std::size(kKeys); ++i) {
      if (key != kKeys[i]) continue;
      known = true;
      std::optional<std::string>& field = b.*kFields[i];
      if (field) {
        return InvalidArgumentError(where + ": '" + key + "' given twice.");
      }
      field = value;
    }
    if (!known) {
      for (const auto& [k, v] : b.other) {
        if (k == key) {
          return InvalidArgumentError(where + ": '" + Excerpt(key) +
                                      "' given twice.");
        }
      }
      b.other.emplace_back(key, value);
    }
  }
  auto check = [](const std::optional<std::string>& v, std::string_view name,
                  std::initializer_list<std::string_view> allowed,
                  std::string_view spelled) -> Status {
    if (v && !OneOf(*v, allowed)) {
      return InvalidArgumentError("bfsbdump '" + std::string(name) +
                                  "' is '" + Excerpt(*v) + "', expected " +
                                  std::string(spelled) + ".");
    }
    return OkStatus();
  };
  if (!b.secure_boot) {
    return InvalidArgumentError("bfsbdump printed no 'Secure Boot' line.");
  }
  DPA_RETURN_IF_ERROR(check(b.secure_boot, "Secure Boot",
                            {"Enabled", "Disabled"}, "Enabled|Disabled"));
  DPA_RETURN_IF_ERROR(check(b.secure_boot_key, "Secure Boot Key",
                            {"Development", "Production"},
                            "Development|Production"));
  DPA_RETURN_IF_ERROR(
      check(b.arm_life_cycle, "Arm Life Cycle",
            {"Production", "Secure", "Non-Secure", "RMA"},
            "Production|Secure|Non-Secure|RMA"));
  DPA_RETURN_IF_ERROR(
      check(b.crypto, "Crypto", {"Enabled", "Disabled"}, "Enabled|Disabled"));
  if (*b.secure_boot == "Disabled" && b.secure_boot_key) {
    return InvalidArgumentError(
        "bfsbdump prints 'Secure Boot Key' although Secure Boot is "
        "Disabled.");
  }
  if (*b.secure_boot == "Enabled" && !b.secure_boot_key) {
    return InvalidArgumentError(
        "bfsbdump prints no 'Secure Boot Key' although Secure Boot is "
        "Enabled.");
  }
  return b;
}

std::string_view LockdownModeName(LockdownMode m) {
  switch (m) {
    case LockdownMode::kNone:
      return "none";
    case LockdownMode::kIntegrity:
      return "integrity";
    case LockdownMode::kConfidentiality:
      return "confidentiality";
  }
  return "?";
}

StatusOr<LockdownMode> ParseKernelLockdown(std::string_view text) {
  DPA_RETURN_IF_ERROR(RejectNul(text, "lockdown"));
  constexpr LockdownMode kModes[] = {LockdownMode::kNone,
                                     LockdownMode::kIntegrity,
                                     LockdownMode::kConfidentiality};
  bool seen[3] = {false, false, false};
  std::optional<LockdownMode> selected;
  std::vector<std::string_view> tokens = text::SplitWhitespace(text);
  if (tokens.empty()) return InvalidArgumentError("lockdown file is empty.");
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string_view tok = tokens[i];
    const bool bracketed =
        tok.size() >= 2 && tok.front() == '[' && tok.back() == ']';
    std::string_view name = bracketed ? tok.substr(1, tok.size() - 2) : tok;
    size_t m = 0;
    while (m < 3 && LockdownModeName(kModes[m]) != name) ++m;
    if (m == 3) {
      return InvalidArgumentError("lockdown token " + std::to_string(i + 1) +
                                  " '" + Excerpt(tok) +
                                  "' is not a lockdown mode.");
    }
    if (seen[m]) {
      return InvalidArgumentError("lockdown mode '" + std::string(name) +
                                  "' listed twice.");
    }
    seen[m] = true;
    if (bracketed) {
      if (selected) {
        return InvalidArgumentError("lockdown file brackets more than one "
                                    "mode.");
      }
      selected = kModes[m];
    }
  }
  if (!selected) {
    return InvalidArgumentError("lockdown file brackets no mode.");
  }
  return *selected;
}

}  // namespace dpuaudit::bluefield
