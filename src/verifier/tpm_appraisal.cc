#include "verifier/tpm_appraisal.h"

#include <algorithm>
#include <set>

#include "attest/credential.h"
#include "attest/eventlog.h"
#include "attest/replay.h"
#include "verifier/refvals/appraisal.h"

namespace dpuaudit::verifier {
namespace {

// AR4SI values, written once in report/ear.h.
constexpr int kAffirming = report::kAr4siAffirming;
constexpr int kWarning = report::kAr4siWarning;
constexpr int kUnrecognised = report::kAr4siUnrecognised;
constexpr int kContraindicated = report::kAr4siContraindicated;

constexpr attest::TpmStep kSteps[] = {
    attest::TpmStep::kAkBound,        attest::TpmStep::kSignature,
    attest::TpmStep::kAttestType,     attest::TpmStep::kQualifyingData,
    attest::TpmStep::kPcrSelection,   attest::TpmStep::kPcrDigest,
    attest::TpmStep::kReplay,         attest::TpmStep::kReferenceValues};

constexpr std::string_view kEkCertificateId = "tpm.ek_certificate";
constexpr std::string_view kSecureBootId = "tpm.secure_boot";
constexpr std::string_view kSource = "TPM quote and event log";

Finding StepFinding(attest::TpmStep step, Verdict v, std::string reason) {
  Finding f;
  f.id = std::string(attest::TpmStepId(step));
  f.verdict = v;
  f.expected = step == attest::TpmStep::kReferenceValues ? "active" : "verified";
  if (v == Verdict::kPass) f.observed = "verified";
  if (v == Verdict::kFail) f.observed = "failed";
  f.source = std::string(kSource);
  f.reason = std::move(reason);
  return f;
}

StatusOr<Bytes> DecodeB64Member(const nlohmann::json& j, const std::string& key,
                                bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return InvalidArgumentError("tpm." + key + " is missing.");
    return Bytes{};
  }
  if (!it->is_string() || it->get<std::string>().empty()) {
    return InvalidArgumentError("tpm." + key + " must be a non-empty base64 string.");
  }
  StatusOr<Bytes> b = Base64Decode(it->get<std::string>());
  if (!b.ok()) return b.status().WithPrefix("tpm." + key);
  return b;
}

std::string DerToPem(ByteView der) {
  std::string b64 = Base64Encode(der);
  std::string pem = "-----BEGIN CERTIFICATE-----\n";
  for (size_t i = 0; i < b64.size(); i += 64) pem += b64.substr(i, 64) + "\n";
  pem += "-----END CERTIFICATE-----\n";
  return pem;
}

}  // namespace

std::vector<RuleSpec> TpmRuleSpecs() {
  std::vector<RuleSpec> out;
  for (attest::TpmStep s : kSteps) {
    RuleSpec spec;
    spec.id = std::string(attest::TpmStepId(s));
    if (s == attest::TpmStep::kReferenceValues) {
      for (std::string_view v : kRefObservedValues) spec.allowed_values.emplace_back(v);
    } else {
      spec.allowed_values = {"verified", "failed"};
    }
    out.push_back(std::move(spec));
  }
  out.push_back({std::string(kEkCertificateId), {"trusted", "absent"}, ""});
  out.push_back({std::string(kSecureBootId), {"enabled", "disabled"}, ""});
  return out;
}

StatusOr<CheckedTpmEnrollment> CheckTpmEnrollment(const nlohmann::json& tpm,
                                                  const TpmPolicy& policy,
                                                  const std::string& ek_ca_dir,
                                                  int64_t now,
                                                  WorkBudget* budget) {
  // 1. Members.
  if (!tpm.is_object()) return InvalidArgumentError("tpm must be an object.");
  for (const auto& [k, v] : tpm.items()) {
    if (k != "ek_public_b64" && k != "ak_public_b64" && k != "ek_cert_b64") {
      return InvalidArgumentError("tpm member \"" + k + "\" is not allowed.");
    }
  }
  DPA_ASSIGN_OR_RETURN(Bytes ek_bytes, DecodeB64Member(tpm, "ek_public_b64", true));
  DPA_ASSIGN_OR_RETURN(Bytes ak_bytes, DecodeB64Member(tpm, "ak_public_b64", true));
  DPA_ASSIGN_OR_RETURN(Bytes cert, DecodeB64Member(tpm, "ek_cert_b64", false));
  // 2. Structure and the cheap key checks; the compositeness test waits.
  constexpr auto kDefer = attest::TpmPublic::RsaCheck::kDeferCompositeness;
  StatusOr<attest::TpmPublic> ek = attest::TpmPublic::Decode(ek_bytes, kDefer);
  if (!ek.ok()) return ek.status().WithPrefix("tpm.ek_public_b64");
  StatusOr<attest::TpmPublic> ak = attest::TpmPublic::Decode(ak_bytes, kDefer);
  if (!ak.ok()) return ak.status().WithPrefix("tpm.ak_public_b64");
  // 3. Attributes.
  if (Status s = attest::CheckAkAttributes(*ak); !s.ok()) {
    return InvalidArgumentError("tpm.ak_public_b64: " + s.message());
  }
  if ((ek->attributes() & attest::kTpmaRestricted) == 0 ||
      (ek->attributes() & attest::kTpmaDecrypt) == 0) {
    return InvalidArgumentError(
        "tpm.ek_public_b64: the EK must be a restricted decryption (storage) key.");
  }
  // 4. The EK certificate, or the policy's leave to go without one.
  CheckedTpmEnrollment out{*ek, *ak, "", ""};
  if (cert.empty()) {
    if (!policy.allow_uncertified_ek) {
      return PermissionDeniedError(
          "the TPM has no EK certificate, and the policy does not allow uncertified "
          "EKs (tpm.allow_uncertified_ek).");
    }
  } else {
    if (ek_ca_dir.empty()) {
      return UnauthenticatedError(
          "the verifier has no trusted EK CA folder (--ek-ca-dir), so no EK "
          "certificate can be verified.");
    }
    StatusOr<attest::EkCertificateInfo> info =
        attest::VerifyEkCertificate(cert, out.ek, ek_ca_dir, now);
    if (!info.ok()) return info.status().WithPrefix("tpm.ek_cert_b64");
    out.ek_cert_pem = DerToPem(cert);
    out.ek_cert_issuer = info->issuer;
  }
  // 5. The expensive check, last, and for token-less requests inside the
  // budget. A certified EK is not tested (see the header).
  const bool test_ek = out.ek_cert_pem.empty() && !out.ek.key_fully_checked();
  const bool test_ak = !out.ak.key_fully_checked();
  if (!test_ek && !test_ak) return out;
  std::optional<StatusOr<WorkBudget::Ticket>> ticket;
  if (budget != nullptr) {
    ticket.emplace(budget->Begin());
    if (!ticket->ok()) return ticket->status();
  }
  if (test_ak) {
    if (Status s = out.ak.CheckCompositeness(); !s.ok()) {
      return s.WithPrefix("tpm.ak_public_b64");
    }
  }
  if (test_ek) {
    if (Status s = out.ek.CheckCompositeness(); !s.ok()) {
      return s.WithPrefix("tpm.ek_public_b64");
    }
  }
  return out;
}

TpmAppraisal AppraiseTpm(const TpmAppraisalInput& in) {
  TpmAppraisal out;
  const bool certified = in.binding != nullptr && !in.binding->ek_cert_pem.empty();
  const Tier tier = certified ? Tier::kHardwareRooted : Tier::kSelfReported;

  // tpm.ek_certificate: what enrollment established.
  {
    Finding f;
    f.id = std::string(kEkCertificateId);
    f.expected = "trusted";
    f.source = "TPM enrollment";
    if (in.binding == nullptr || in.binding->state != TpmBindingState::kActive) {
      f.verdict = Verdict::kUnknown;
      f.reason = "the node has no active TPM binding";
    } else if (certified) {
      f.verdict = Verdict::kPass;
      f.observed = "trusted";
      f.reason = "EK certificate issued by " + in.binding->ek_cert_issuer;
    } else {
      f.verdict = Verdict::kFail;
      f.observed = "absent";
      f.reason = "the EK has no certificate from a trusted manufacturer CA "
                 "(enrolled under tpm.allow_uncertified_ek): nothing shows this is a "
                 "hardware TPM";
    }
    if (in.bluefield) {
      f.reason += (f.reason.empty() ? "" : "; ") +
                  std::string("BlueField TPMs are OP-TEE fTPMs; NVIDIA documents the fTPM "
                              "trusted application as signed with a development key "
                              "(BSP 4.5.x, beta), so its quotes attest what the Arm "
                              "secure world reports, not a hardware root of trust");
    }
    out.findings.push_back(std::move(f));
  }

  // Steps 1-8, in order; the first failure stops the chain.
  std::vector<Finding> steps;
  auto fail = [&](attest::TpmStep step, std::string reason) {
    out.failure = TpmStepFailure{step, reason};
    steps.push_back(StepFinding(step, Verdict::kFail, std::move(reason)));
  };
  auto pass = [&](attest::TpmStep step, std::string reason) {
    steps.push_back(StepFinding(step, Verdict::kPass, std::move(reason)));
  };

  std::optional<attest::TpmPublic> ak;
  std::optional<attest::VerifiedQuote> quote;
  std::optional<attest::VerifiedBootLog> boot_log;
  std::optional<attest::BootState> boot_state;
  // 1. AK known and bound to this node.
  if (in.binding == nullptr) {
    fail(attest::TpmStep::kAkBound, "the node was not enrolled with a TPM");
  } else if (in.binding->state != TpmBindingState::kActive) {
    fail(attest::TpmStep::kAkBound,
         "the node's AK was never bound to its EK: credential activation is pending");
  } else if (in.claims == nullptr) {
    fail(attest::TpmStep::kAkBound,
         "the node is bound to a TPM but the report carries no quote");
  } else if (HexEncode(in.claims->ak_name) != in.binding->ak_name_hex) {
    fail(attest::TpmStep::kAkBound,
         "the quote names AK " + HexEncode(in.claims->ak_name) +
             ", not the AK bound to this node (" + in.binding->ak_name_hex + ")");
  } else {
    StatusOr<Bytes> ak_bytes = Base64Decode(in.binding->ak_public_b64);
    StatusOr<attest::TpmPublic> decoded =
        ak_bytes.ok() ? attest::TpmPublic::Decode(*ak_bytes)
                      : StatusOr<attest::TpmPublic>(ak_bytes.status());
    if (!decoded.ok()) {
      fail(attest::TpmStep::kAkBound, "stored AK does not decode: " + decoded.status().message());
    } else {
      ak = *decoded;
      pass(attest::TpmStep::kAkBound, "AK " + in.binding->ak_name_hex +
                                          " bound by credential activation");
    }
  }
  // 2-6. The quote.
  if (!out.failure) {
    attest::TpmStep failed = attest::TpmStep::kSignature;
    attest::QuoteInput qi{in.claims->quote_attest, in.claims->quote_sig, &in.claims->pcrs};
    StatusOr<attest::VerifiedQuote> v = attest::QuoteVerifier::Verify(
        *ak, qi, in.expected_qualifying_data, in.policy->pcr_selection, &failed);
    if (!v.ok()) {
      for (attest::TpmStep s : kSteps) {
        if (s == failed) break;
        if (s != attest::TpmStep::kAkBound) pass(s, "");
      }
      fail(failed, v.status().message());
    } else {
      quote = std::move(v).value();
      for (attest::TpmStep s : {attest::TpmStep::kSignature, attest::TpmStep::kAttestType,
                                attest::TpmStep::kQualifyingData,
                                attest::TpmStep::kPcrSelection, attest::TpmStep::kPcrDigest}) {
        pass(s, "");
      }
    }
  }
  // 7. Replay.
  if (!out.failure) {
    if (in.claims->eventlog.empty()) {
      fail(attest::TpmStep::kReplay, "the report carries no event log");
    } else {
      StatusOr<attest::EventLog> log = attest::ParseEventLog(in.claims->eventlog);
      if (!log.ok()) {
        fail(attest::TpmStep::kReplay, "event log: " + log.status().message());
      } else {
        StatusOr<attest::VerifiedBootLog> replay =
            attest::ReplayAgainstQuote(*log, quote->pcrs);
        if (!replay.ok()) {
          fail(attest::TpmStep::kReplay, replay.status().message());
        } else {
          std::string reason = std::to_string(replay->events().size()) +
                               " events replayed to the quoted PCRs";
          for (attest::ReplayQuirk q : replay->quirks_applied()) {
            out.quirks_applied.emplace_back(attest::ReplayQuirkName(q));
          }
          if (!out.quirks_applied.empty()) {
            reason += " with firmware workaround(s): ";
            for (size_t i = 0; i < out.quirks_applied.size(); ++i) {
              reason += (i ? ", " : "") + out.quirks_applied[i];
            }
          }
          boot_state = attest::DeriveBootState(*replay);
          boot_log = std::move(replay).value();
          pass(attest::TpmStep::kReplay, reason);
        }
      }
    }
  }
  // 8. Reference values.
  if (!out.failure) {
    TpmFacts facts;
    facts.model = in.model;
    facts.psid = in.psid;
    auto bank = quote->pcrs.banks().find(attest::kTpmAlgSha256);
    if (bank != quote->pcrs.banks().end()) {
      for (const auto& [pcr, value] : bank->second) facts.sha256_pcrs[pcr] = HexEncode(value);
    }
    for (const auto& app : boot_state->boot_applications) {
      facts.boot_apps.push_back({app.path, app.sha256});
    }
    Finding f =
        AppraiseTpmReferenceValues(facts, *in.refs, in.now, in.matched_releases);
    if (f.verdict == Verdict::kFail && f.observed != "obsolete") {
      out.failure = TpmStepFailure{attest::TpmStep::kReferenceValues, f.reason};
    }
    steps.push_back(std::move(f));
  }
  // Steps after a failure are not reached.
  for (attest::TpmStep s : kSteps) {
    bool present = std::any_of(steps.begin(), steps.end(), [&](const Finding& f) {
      return f.id == attest::TpmStepId(s);
    });
    if (!present) {
      Finding f = StepFinding(s, Verdict::kUnknown,
                              "not reached: " +
                                  std::string(attest::TpmStepId(out.failure->step)) +
                                  " failed");
      steps.push_back(std::move(f));
    }
  }
  for (Finding& f : steps) out.findings.push_back(std::move(f));

  // tpm.secure_boot from verified events only.
  {
    Finding f;
    f.id = std::string(kSecureBootId);
    f.expected = "enabled";
    f.source = "EV_EFI_VARIABLE_DRIVER_CONFIG SecureBoot (PCR 7)";
    if (!boot_state) {
      f.verdict = Verdict::kUnknown;
      f.reason = "no verified event log";
    } else if (auto it = boot_state->unproven.find("secure_boot");
               it != boot_state->unproven.end()) {
      // Replay proves the digests only; the SecureBoot byte is read from
      // the event data, which must hash to them (docs/eventlog.md).
      f.verdict = Verdict::kUnknown;
      f.reason = "the SecureBoot event's data is not bound to its digests: " +
                 it->second;
    } else if (!boot_state->secure_boot.has_value()) {
      f.verdict = Verdict::kUnknown;
      f.reason = "the verified events do not measure the SecureBoot variable";
    } else {
      f.observed = *boot_state->secure_boot ? "enabled" : "disabled";
      f.verdict = *boot_state->secure_boot ? Verdict::kPass : Verdict::kFail;
      f.reason = std::to_string(boot_state->db.size()) + " db certificate(s), " +
                 std::to_string(boot_state->dbx_entries) + " dbx entries";
      for (const char* fact : {"db", "dbx"}) {
        if (boot_state->unproven.contains(fact))
          f.reason += std::string("; ") + fact + " unproven";
      }
    }
    out.findings.push_back(std::move(f));
  }
  for (const Finding& f : out.findings) out.tiers[f.id] = tier;

  // The EAR submod.
  report::TrustVector tv;
  if (out.failure && out.failure->step == attest::TpmStep::kAkBound) {
    tv.instance_identity = kContraindicated;
  } else if (in.binding != nullptr) {
    tv.instance_identity = certified ? kAffirming : kWarning;
  }
  if (certified) tv.hardware = kAffirming;
  if (out.failure && out.failure->step != attest::TpmStep::kAkBound &&
      out.failure->step != attest::TpmStep::kReferenceValues) {
    tv.configuration = kContraindicated;  // evidence that does not verify
  } else if (boot_state && boot_state->secure_boot.has_value()) {
    tv.configuration = *boot_state->secure_boot ? kAffirming : kWarning;
  }
  for (const Finding& f : out.findings) {
    if (f.id != attest::TpmStepId(attest::TpmStep::kReferenceValues) ||
        f.verdict == Verdict::kUnknown) {
      continue;
    }
    tv.executables = f.observed == "active"     ? kAffirming
                     : f.observed == "obsolete" ? kWarning
                     : f.observed == "revoked"  ? kContraindicated
                                                : kUnrecognised;
  }
  out.submod.trust_vector = tv;
  out.submod.status = report::StatusOfVector(tv);
  return out;
}

}  // namespace dpuaudit::verifier
