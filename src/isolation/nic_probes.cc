// nic.fw_security: NIC firmware security state from `flint -d <mst> q full`
// (docs/bluefield.md#flint, field semantics from mstflint
// flint/subcommands.cpp).
//
// Observed values, in precedence order (the first that applies wins, so a
// device with several problems reports the one an attacker can use most):
//   "debug"        Security Attributes has a `debug` item;
//   "development"  Security Attributes has a `dev` item;
//   "not_secured"  Security Attributes is `N/A`, or Life cycle is
//                  GA NON SECURED, PRE PRODUCTION or RMA (anti-rollback is
//                  not meaningful on an unsecured device, so this outranks
//                  rollback);
//   "rollback"     Image Security Ver < EFUSE Security Ver;
//   "production"   secure-fw or signed-fw, Life cycle GA SECURED or
//                  PRODUCTION, and EFUSE Security Ver <= Image Security Ver.
// Token items (`debug-token`, `dbg-token`, `cs-token`, `rmcs-token`,
// `crypto-to-commissioning`) are NOT failures: they say the firmware accepts
// a signed token that can enable debug later, not that debug is enabled.
// They are named in the reason so a reviewer can see them.
// Fail closed: every one of Security Attributes, Life cycle, EFUSE Security
// Ver and Image Security Ver must be present (plain `q` lacks the last
// three), the base attribute must be secure-fw / signed-fw / N/A, every
// item and the Life cycle must be recognised and the versions must be
// decimal integers; otherwise unknown naming the field.
// Does NOT check: whether a debug token has actually been applied, nor the
// Arm-side lifecycle (boot.arm_lifecycle, docs/bluefield.md#lifecycle).
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "bluefield/flint.h"
#include "firmware/inventory.h"
#include "isolation/probe_entries.h"
#include "common/text_lines.h"
#include "isolation/tool_run.h"

namespace dpuaudit::isolation {
namespace {

using bluefield::FirstToken;
using bluefield::FlintQuery;

using device::Argv;

constexpr std::string_view kFwSecurityId = "nic.fw_security";
constexpr std::string_view kProduction = "production";
constexpr std::string_view kDevelopment = "development";
constexpr std::string_view kDebug = "debug";
constexpr std::string_view kNotSecured = "not_secured";
constexpr std::string_view kRollback = "rollback";

constexpr std::string_view kSecurityAttributes = "Security Attributes";
constexpr std::string_view kLifeCycle = "Life cycle";
constexpr std::string_view kEfuseVer = "EFUSE Security Ver";
constexpr std::string_view kImageVer = "Image Security Ver";

constexpr auto Unknown = internal::UnknownFinding;

// Decimal, at most 9 digits (flint prints small counters).
bool ParseVersion(std::string_view text, long* out) {
  if (text.empty() || text.size() > 9) return false;
  long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool IsToken(std::string_view item) {
  return item == "debug-token" || item == "dbg-token" || item == "cs-token" ||
         item == "rmcs-token" || item == "crypto-to-commissioning";
}

Finding ProbeNicFwSecurity(const device::DeviceSource& source,
                           const ProbeContext& ctx) {
  Finding f;
  f.id = std::string(kFwSecurityId);
  f.expected = std::string(kProduction);
  if (!ctx.mst) {
    return internal::NoMstDeviceFinding(kFwSecurityId, kProduction, "flint",
                                        ctx.discovery_status);
  }
  const Argv argv = device::FlintQueryArgv(ctx.mst->path);
  f.source = internal::CommandLine(argv);
  f.evidence_id = device::EvidenceIdForCommand(argv);
  // The flint read the context shares (ProbeContext::Collect), or one made
  // here for a context built without it.
  std::optional<firmware::FlintRead> own;
  if (!ctx.flint) own = firmware::ReadFlint(source, ctx.mst->path);
  const firmware::FlintRead& read = ctx.flint ? *ctx.flint : *own;
  if (!read.run_status.ok()) {
    return Unknown(std::move(f), read.run_status.message());
  }
  if (!read.parse_status.ok()) {
    return Unknown(std::move(f), "could not parse output of `" + f.source +
                                     "`: " + read.parse_status.message());
  }
  const FlintQuery* q = &read.query;
  for (std::string_view key :
       {kSecurityAttributes, kLifeCycle, kEfuseVer, kImageVer}) {
    if (q->Find(key) == nullptr) {
      return Unknown(std::move(f), "no '" + std::string(key) +
                                       "' line in output of `" + f.source +
                                       "` (it is printed only by `q full`)");
    }
  }
  const std::string attributes = q->Value(kSecurityAttributes);
  const std::string life_cycle = q->Value(kLifeCycle);
  const std::string efuse_text = q->Value(kEfuseVer);
  const std::string image_text = q->Value(kImageVer);

  // "secure-fw, dev, debug-token" -> base + items.
  std::vector<std::string> items;
  {
    std::string_view rest = attributes;
    while (true) {
      size_t comma = rest.find(',');
      items.emplace_back(text::Trim(rest.substr(0, comma)));
      if (comma == std::string_view::npos) break;
      rest = rest.substr(comma + 1);
    }
  }
  const std::string& base = items.front();
  if (base != "secure-fw" && base != "signed-fw" && base != "N/A") {
    return Unknown(std::move(f), "unrecognised Security Attributes '" +
                                     text::Excerpt(attributes) + "'");
  }
  bool debug = false;
  bool dev = false;
  std::string tokens;
  for (size_t i = 1; i < items.size(); ++i) {
    if (items[i] == "debug") {
      debug = true;
    } else if (items[i] == "dev") {
      dev = true;
    } else if (IsToken(items[i])) {
      tokens += (tokens.empty() ? "" : ", ") + items[i];
    } else {
      return Unknown(std::move(f), "unrecognised Security Attributes item '" +
                                       text::Excerpt(items[i]) + "' in '" +
                                       text::Excerpt(attributes) + "'");
    }
  }
  const bool life_ok = life_cycle == "GA SECURED" || life_cycle == "PRODUCTION";
  const bool life_bad = life_cycle == "GA NON SECURED" ||
                        life_cycle == "PRE PRODUCTION" || life_cycle == "RMA";
  if (!life_ok && !life_bad) {
    return Unknown(std::move(f), "unrecognised Life cycle '" +
                                     text::Excerpt(life_cycle) + "'");
  }
  long efuse = 0;
  long image = 0;
  if (!ParseVersion(efuse_text, &efuse)) {
    return Unknown(std::move(f), "EFUSE Security Ver '" +
                                     text::Excerpt(efuse_text) +
                                     "' is not a decimal number");
  }
  if (!ParseVersion(image_text, &image)) {
    return Unknown(std::move(f), "Image Security Ver '" +
                                     text::Excerpt(image_text) +
                                     "' is not a decimal number");
  }
  const std::string facts = "Security Attributes '" + attributes +
                            "', Life cycle '" + life_cycle +
                            "', EFUSE Security Ver " + efuse_text +
                            ", Image Security Ver " + image_text;
  std::string_view observed;
  std::string why;
  if (debug) {
    observed = kDebug;
    why = "NIC firmware is a debug build";
  } else if (dev) {
    observed = kDevelopment;
    why = "NIC firmware is a development build";
  } else if (base == "N/A") {
    observed = kNotSecured;
    why = "NIC firmware is neither secure-fw nor signed-fw";
  } else if (life_bad) {
    observed = kNotSecured;
    why = "the NIC life cycle is not secured";
  } else if (image < efuse) {
    observed = kRollback;
    why = "the image security version is below the fused minimum "
          "(anti-rollback)";
  } else {
    observed = kProduction;
    why = "production NIC firmware";
  }
  f.observed = std::string(observed);
  f.verdict = observed == kProduction ? Verdict::kPass : Verdict::kFail;
  f.reason = why + ": " + facts;
  if (!tokens.empty()) {
    f.reason += "; accepts debug tokens (" + tokens +
                "), which can enable debug later but do not by themselves";
  }
  return f;
}

}  // namespace

namespace internal {

std::vector<ProbeInfo> NicProbeEntries() {
  return {
      {kFwSecurityId,
       "NIC firmware security (flint q full: attributes, life cycle, "
       "anti-rollback).",
       {kProduction},
       {kProduction, kDevelopment, kDebug, kNotSecured, kRollback},
       &ProbeNicFwSecurity},
  };
}

}  // namespace internal
}  // namespace dpuaudit::isolation
