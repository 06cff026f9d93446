#include "verifier/bmc_state.h"

#include <utility>

#include "common/bytes.h"
#include "common/strict_json.h"
#include "spdm/evidence.h"

namespace dpuaudit::verifier {
namespace {

using nlohmann::json;
using strict_json::ObjectReader;

constexpr const char* kBindingFields[] = {"bmc_url", "bmc_key_sha256", "irot_deviceid_sha256",
                                          "irot_deviceid_serial", "irot_anchor_sha256",
                                          "serial"};

std::string* BindingField(BmcBinding& b, size_t i) {
  std::string* fields[] = {&b.bmc_url,          &b.bmc_key_sha256,     &b.irot_deviceid_sha256,
                           &b.irot_deviceid_serial, &b.irot_anchor_sha256, &b.serial};
  return fields[i];
}

std::string CommonName(const std::string& subject) {
  const size_t at = subject.find("CN=");
  if (at == std::string::npos) return subject;
  const size_t end = subject.find(',', at);
  return subject.substr(at + 3, end == std::string::npos ? std::string::npos : end - at - 3);
}

std::string Short(const std::string& hex) { return hex.substr(0, 16); }

SpdmTargetVerdict JudgeTarget(const bmc::SpdmTargetEvidence& t, const std::string& target,
                              const JudgeBmcInput& in,
                              const std::optional<MeasurementBaseline>& baseline,
                              const std::set<uint8_t>& referenced) {
  SpdmTargetVerdict v;
  v.target = target;
  v.redfish_id = t.id;
  const std::string id = target + ".measurements";
  const std::string source =
      "BMC " + in.evidence->base_url + " ComponentIntegrity/" + t.id + " (SPDM)";
  if (!t.status.ok()) {
    v.finding = UnknownFinding(id, source, "the BMC gave no SPDM evidence for " + t.id + ": " +
                                        t.status.message());
    return v;
  }
  if (in.anchors == nullptr || in.anchors->size() == 0) {
    v.finding = UnknownFinding(id, source,
                        "no DICE trust anchors are configured, so the chain of " + t.id +
                            " cannot be validated");
    return v;
  }
  spdm::TargetEvidence te{t.chain_pem, t.evidence.signed_measurements,
                          t.evidence.signing_algorithm, t.evidence.hashing_algorithm,
                          t.evidence.version};
  StatusOr<spdm::VerifiedTarget> verified =
      spdm::VerifyTargetEvidence(te, t.nonce, in.anchors, in.now, in.chain_cache);
  if (!verified.ok()) {
    v.contraindicated = true;
    v.finding.id = id;
    v.finding.verdict = Verdict::kFail;
    v.finding.expected = "signed by a key chaining to a trust anchor, over our nonce";
    v.finding.observed = "unverified";
    v.finding.source = source;
    v.finding.reason = "the SPDM evidence of " + t.id +
                       " does not verify: " + verified.status().message();
    MakeSafe(v.finding);
    return v;
  }
  v.verified = true;
  v.leaf_spki_sha256 = verified->leaf_spki_sha256;
  if (verified->chain) {
    const spdm::ValidatedChain& chain = *verified->chain;
    v.anchor_spki_sha256 = chain.anchor_spki_sha256();
    const spdm::ChainCertificate& device_id = DeviceIdCertificate(chain);
    v.deviceid_spki_sha256 = device_id.spki_sha256;
    v.deviceid_serial = device_id.serial_hex;
    for (const spdm::ChainCertificate& c : chain.certificates()) {
      for (const spdm::DiceTcb& tcb : c.dice) {
        for (const spdm::DiceFwid& fw : tcb.fwids) {
          v.fwids.push_back(CommonName(c.subject) + ": " + fw.hash_alg + ":" +
                            HexEncode(fw.digest));
        }
      }
    }
  }
  SpdmAppraisal a = AppraiseMeasurements(
      target, source + ", signed by " + Short(v.leaf_spki_sha256) + "…",
      verified->measurements, baseline, referenced);
  v.finding = std::move(a.finding);
  v.contraindicated = a.contraindicated;
  v.first_seen = a.first_seen;
  v.proposed = std::move(a.proposed);
  return v;
}

json BaselineToJson(const MeasurementBaseline& b) {
  json j = json::object();
  for (const auto& [index, value] : b.values) j[std::to_string(index)] = value;
  return j;
}

json BindingToJson(const BmcBinding& b) {
  json j = json::object();
  BmcBinding copy = b;
  for (size_t i = 0; i < std::size(kBindingFields); ++i) j[kBindingFields[i]] = *BindingField(copy, i);
  return j;
}

}  // namespace

std::string BmcBindingJson(const BmcBinding& b) { return strict_json::DumpJson(BindingToJson(b)); }

StatusOr<BmcBinding> ParseBmcBinding(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(text), "BMC binding"));
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, ""));
  BmcBinding b;
  for (size_t i = 0; i < std::size(kBindingFields); ++i) {
    DPA_ASSIGN_OR_RETURN(*BindingField(b, i), r.String(kBindingFields[i]));
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  return b;
}

std::string BaselineJson(const MeasurementBaseline& b) {
  return strict_json::DumpJson(BaselineToJson(b));
}

StatusOr<MeasurementBaseline> ParseBaseline(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(text), "SPDM baseline"));
  if (!j.is_object()) return InvalidArgumentError("SPDM baseline must be an object.");
  MeasurementBaseline b;
  for (const auto& [key, value] : j.items()) {
    int index = -1;
    if (!key.empty() && key.size() <= 3 && key.find_first_not_of("0123456789") == std::string::npos) {
      index = std::stoi(key);
    }
    if (index < 1 || index > 254) {
      return InvalidArgumentError("SPDM baseline index " + strict_json::Quote(key) +
                                  " is not 1-254.");
    }
    if (!value.is_string()) {
      return InvalidArgumentError("SPDM baseline index " + key + " must be a string.");
    }
    b.values[static_cast<uint8_t>(index)] = value.get<std::string>();
  }
  return b;
}

const spdm::ChainCertificate& DeviceIdCertificate(const spdm::ValidatedChain& chain) {
  const auto& certs = chain.certificates();  // leaf first, never empty
  size_t end = certs.size();
  const spdm::ChainCertificate& top = certs[end - 1];
  if (end > 1 && (top.subject == top.issuer || top.spki_sha256 == chain.anchor_spki_sha256())) {
    --end;  // the root or the anchor is nobody's device
  }
  for (size_t i = 0; i < end; ++i) {
    if (certs[i].dice.empty()) return certs[i];
  }
  return certs[end - 1];
}

const SpdmTargetVerdict* BmcVerdict::Target(std::string_view target) const {
  for (const SpdmTargetVerdict& t : targets) {
    if (t.target == target) return &t;
  }
  return nullptr;
}

const std::vector<std::string>& SpdmFindingIds() {
  static const std::vector<std::string> kIds = {"irot.measurements", "erot.measurements",
                                                "irot.identity"};
  return kIds;
}

BmcVerdict JudgeBmcPull(const JudgeBmcInput& in) {
  BmcVerdict v;
  v.node_id = in.node_id;
  v.pulled_at = in.evidence->collected_at;
  v.evidence = *in.evidence;
  struct Want {
    const char* redfish_id;
    const char* target;
    const std::optional<MeasurementBaseline>* baseline;
    const std::set<uint8_t>* referenced;
  };
  const Want wants[] = {{bmc::kIrotTarget, "irot", &in.irot_baseline, &in.irot_referenced},
                        {bmc::kErotTarget, "erot", &in.erot_baseline, &in.erot_referenced}};
  for (const Want& w : wants) {
    const bmc::SpdmTargetEvidence* t = nullptr;
    for (const auto& e : in.evidence->targets) {
      if (e.id == w.redfish_id) t = &e;
    }
    if (t == nullptr) {
      bmc::SpdmTargetEvidence missing;
      missing.id = w.redfish_id;
      missing.status = NotFoundError("the pull did not ask for " + std::string(w.redfish_id) +
                                     " (SPDM collection off).");
      v.targets.push_back(JudgeTarget(missing, w.target, in, *w.baseline, *w.referenced));
    } else {
      v.targets.push_back(JudgeTarget(*t, w.target, in, *w.baseline, *w.referenced));
    }
  }

  const SpdmTargetVerdict& irot = v.targets.front();
  const std::string source = "BMC " + in.evidence->base_url + " ComponentIntegrity/" +
                             std::string(bmc::kIrotTarget) + " DICE DeviceID";
  Finding& f = v.identity;
  f.id = "irot.identity";
  f.source = source;
  f.expected = "the IRoT DeviceID the node is bound to";
  if (!irot.verified) {
    f = UnknownFinding("irot.identity", source,
                "the IRoT's identity is not known: " + irot.finding.reason);
    return v;
  }
  BmcBinding seen;
  seen.bmc_url = in.evidence->base_url;
  seen.bmc_key_sha256 = in.bmc_key_sha256;
  seen.irot_deviceid_sha256 = irot.deviceid_spki_sha256;
  seen.irot_deviceid_serial = irot.deviceid_serial;
  seen.irot_anchor_sha256 = irot.anchor_spki_sha256;
  if (in.evidence->system && in.evidence->system->serial_number) {
    seen.serial = *in.evidence->system->serial_number;
  }
  v.observed = seen;
  const std::string seen_text = "DeviceID key " + Short(seen.irot_deviceid_sha256) +
                                "… (certificate serial " + seen.irot_deviceid_serial +
                                "), system serial " + (seen.serial.empty() ? "(none)" : seen.serial);
  if (!in.binding) {
    f.verdict = Verdict::kPass;
    f.observed = "bound";
    f.reason = "first seen: node bound to IRoT " + seen_text + " (trust on first use)";
    MakeSafe(f);
    return v;
  }
  const BmcBinding& b = *in.binding;
  const std::string bound_text = "DeviceID key " + Short(b.irot_deviceid_sha256) +
                                 "… (certificate serial " + b.irot_deviceid_serial +
                                 "), system serial " + (b.serial.empty() ? "(none)" : b.serial);
  if (b.irot_deviceid_sha256 == seen.irot_deviceid_sha256 &&
      b.irot_deviceid_serial == seen.irot_deviceid_serial && b.serial == seen.serial) {
    f.verdict = Verdict::kPass;
    f.observed = "bound";
    f.reason = "the bound IRoT answers: " + seen_text;
  } else {
    f.verdict = Verdict::kFail;
    f.observed = "another device";
    f.reason = "a different device answers: bound to " + bound_text + ", observed " +
               seen_text + "; after a repair or re-flash an administrator must re-bind it "
               "(dpuaudit bmc rebind)";
    v.identity_contraindicated = true;
  }
  MakeSafe(f);
  return v;
}

json BmcVerdictJson(const BmcVerdict& v) {
  json j;
  j["node_id"] = v.node_id;
  j["pulled_at"] = v.pulled_at;
  j["bmc_url"] = v.evidence.base_url;
  j["tls_mode"] = v.evidence.tls_mode;
  j["requests"] = v.evidence.requests;
  json errors = json::object();
  for (const auto& [path, why] : v.evidence.errors) errors[path] = why;
  j["errors"] = errors;
  auto finding = [](const Finding& f) {
    return json{{"id", f.id},         {"verdict", VerdictName(f.verdict)},
                {"expected", f.expected}, {"observed", f.observed},
                {"source", f.source}, {"reason", f.reason}};
  };
  json targets = json::array();
  for (const SpdmTargetVerdict& t : v.targets) {
    json tj{{"target", t.target},
            {"redfish_id", t.redfish_id},
            {"verified", t.verified},
            {"contraindicated", t.contraindicated},
            {"finding", finding(t.finding)},
            {"leaf_spki_sha256", t.leaf_spki_sha256},
            {"anchor_spki_sha256", t.anchor_spki_sha256},
            {"deviceid_spki_sha256", t.deviceid_spki_sha256},
            {"deviceid_serial", t.deviceid_serial},
            {"fwids", t.fwids}};
    if (t.proposed) tj["measurements"] = BaselineToJson(*t.proposed);
    targets.push_back(tj);
  }
  j["targets"] = targets;
  j["identity"] = finding(v.identity);
  j["identity_contraindicated"] = v.identity_contraindicated;
  if (v.observed) j["observed_binding"] = BindingToJson(*v.observed);
  return j;
}

}  // namespace dpuaudit::verifier
