// `dpuaudit bmc show` and `dpuaudit spdm verify` (bmc.h).
#include "apps/cli/bmc.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli/cli_util.h"
#include "bmc/collect.h"
#include "bmc/redfish_client.h"
#include "common/crypto.h"
#include "common/openssl.h"
#include "common/strict_json.h"
#include "redfish/resources.h"
#include "spdm/evidence.h"

namespace dpuaudit::apps {
namespace {

using nlohmann::json;

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

StatusOr<spdm::TrustAnchors> LoadAnchors(const std::vector<std::string>& files) {
  std::vector<std::string> pems;
  for (const std::string& f : files) {
    DPA_ASSIGN_OR_RETURN(std::string text, ReadText(f));
    pems.push_back(text);
  }
  return spdm::TrustAnchors::FromPem(pems, files);
}

// SPKI SHA-256 of a PEM certificate or public key.
StatusOr<std::string> PinOf(const std::string& file) {
  DPA_ASSIGN_OR_RETURN(std::string pem, ReadText(file));
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EvpPkeyPtr key;
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPemPassphrase, nullptr));
  if (cert) {
    key.reset(X509_get_pubkey(cert.get()));
  } else {
    ERR_clear_error();
    BioPtr again(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    key.reset(PEM_read_bio_PUBKEY(again.get(), nullptr, NoPemPassphrase, nullptr));
  }
  if (!key) {
    ERR_clear_error();
    return InvalidArgumentError(file + " is neither a PEM certificate nor a PEM public key.");
  }
  unsigned char* der = nullptr;
  const int len = i2d_PUBKEY(key.get(), &der);
  if (len <= 0) return SslStatus("encoding the public key failed");
  OsslBytesPtr<unsigned char> owned(der);
  return Sha256Hex(ByteView(der, static_cast<size_t>(len)));
}

json MeasurementsJson(const spdm::VerifiedMeasurements& m) {
  json out = json::array();
  for (const spdm::MeasurementBlock& b : m.blocks()) {
    json bj = {{"index", b.index}, {"specification", b.specification}};
    if (b.dmtf) {
      bj["value_type"] = b.dmtf->value_type;
      bj["kind"] = spdm::DmtfValueKindName(b.dmtf->value_type);
      bj["raw"] = b.dmtf->raw_bit_stream();
      bj["value"] = HexEncode(b.dmtf->value);
    } else {
      bj["measurement"] = HexEncode(b.measurement);
    }
    out.push_back(std::move(bj));
  }
  return out;
}

json VerifiedJson(const spdm::VerifiedTarget& v) {
  json j = {{"verified", true},
            {"chain_validated", v.chain_validated},
            {"leaf_subject", v.leaf_subject},
            {"leaf_spki_sha256", v.leaf_spki_sha256},
            {"signing_algorithm", spdm::SigningAlgorithmName(v.measurements.signing())},
            {"hashing_algorithm", spdm::HashingAlgorithmName(v.measurements.hashing())},
            {"signed_digest", v.measurements.signed_digest_hex()},
            {"measurements", MeasurementsJson(v.measurements)}};
  if (v.chain) {
    j["anchor_spki_sha256"] = v.chain->anchor_spki_sha256();
    j["chain_order"] = v.chain->was_root_first() ? "root-first" : "leaf-first";
    json certs = json::array();
    for (const spdm::ChainCertificate& c : v.chain->certificates()) {
      json cj = {{"subject", c.subject}, {"serial", c.serial_hex}};
      json dice = json::array();
      for (const spdm::DiceTcb& t : c.dice) {
        json fw = json::array();
        for (const spdm::DiceFwid& f : t.fwids) {
          fw.push_back({{"hash_alg", f.hash_alg}, {"digest", HexEncode(f.digest)}});
        }
        dice.push_back({{"oid", t.oid}, {"reading", t.reading}, {"fwids", fw}});
      }
      cj["dice"] = dice;
      certs.push_back(cj);
    }
    j["certificates"] = certs;
  }
  return j;
}

std::string Cut(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

std::string Or(const std::optional<std::string>& v) { return v ? *v : "(not reported)"; }

}  // namespace

int BmcShow(const BmcShowOptions& o) {
  bmc::BmcEndpoint ep;
  ep.base_url = o.url;
  ep.ca_file = o.ca;
  ep.pinned_key_sha256 = o.pin_sha256;
  ep.auth = o.basic_auth ? bmc::BmcAuth::kBasic : bmc::BmcAuth::kSession;
  ep.timeout = std::chrono::milliseconds(o.timeout_ms);
  if (!o.pin_key.empty()) {
    if (!o.pin_sha256.empty()) {
      return Fail(InvalidArgumentError("give --pin-key or --pin-sha256, not both."));
    }
    StatusOr<std::string> pin = PinOf(o.pin_key);
    if (!pin.ok()) return Fail(pin.status());
    ep.pinned_key_sha256 = *pin;
  }
  std::optional<spdm::TrustAnchors> anchors;
  if (!o.anchors.empty()) {
    auto a = LoadAnchors(o.anchors);
    if (!a.ok()) return Fail(a.status());
    anchors = std::move(a).value();
  }
  auto creds = bmc::LoadCredentialsFile(o.credentials);
  if (!creds.ok()) return Fail(creds.status());
  auto client = bmc::RedfishClient::Connect(ep, *creds);
  if (!client.ok()) return Fail(client.status());
  bmc::CollectOptions co;
  co.spdm = o.spdm;
  co.now = Now();
  const bmc::BmcEvidence e = bmc::CollectBmcEvidence(**client, co);

  int rc = kExitOk;
  json verification = json::object();
  std::vector<std::string> spdm_lines;
  for (const bmc::SpdmTargetEvidence& t : e.targets) {
    if (!t.status.ok()) {
      verification[t.id] = {{"verified", false}, {"state", "unknown"},
                            {"error", t.status.ToString()}};
      spdm_lines.push_back("  " + t.id + "  unknown: " + t.status.message());
      continue;
    }
    if (!anchors) {
      verification[t.id] = {{"verified", false}, {"state", "not_checked"},
                            {"error", "no --anchors given: the chain is not validated"}};
      spdm_lines.push_back("  " + t.id + "  read, not verified (no --anchors)");
      continue;
    }
    spdm::TargetEvidence te{t.chain_pem, t.evidence.signed_measurements,
                            t.evidence.signing_algorithm, t.evidence.hashing_algorithm,
                            t.evidence.version};
    auto v = spdm::VerifyTargetEvidence(te, t.nonce, &*anchors, Now());
    if (!v.ok()) {
      rc = kExitDeny;
      verification[t.id] = {{"verified", false}, {"state", "failed"},
                            {"error", v.status().ToString()}};
      spdm_lines.insert(spdm_lines.begin(), "  " + t.id + "  FAILED: " + v.status().message());
      continue;
    }
    verification[t.id] = VerifiedJson(*v);
    verification[t.id]["state"] = "verified";
    spdm_lines.push_back("  " + t.id + "  verified: " +
                         std::to_string(v->measurements.blocks().size()) +
                         " measurements, our nonce, chain to anchor " +
                         v->chain->anchor_spki_sha256().substr(0, 16));
  }
  if (o.json) {
    json j = bmc::BmcEvidenceJson(e);
    j["spdm_verification"] = verification;
    std::cout << j.dump(2) << "\n";
    return rc;
  }
  std::ostringstream out;
  if (!e.errors.empty()) {
    out << "errors (" << e.errors.size() << ")\n";
    for (const auto& [path, why] : e.errors) out << "  " << Cut(path + ": " + why, 98) << "\n";
  }
  out << "BMC " << e.base_url << " (TLS " << e.tls_mode << "), " << e.requests
      << " requests\n";
  auto row = [&](const std::string& k, const std::string& v) {
    out << "  " << k << std::string(k.size() < 22 ? 22 - k.size() : 1, ' ') << Cut(v, 74)
        << "\n";
  };
  row("serial", e.system ? Or(e.system->serial_number) : "(unreadable)");
  row("mode", e.oem ? Or(e.oem->mode) : "(unreadable)");
  row("host rshim", e.oem ? Or(e.oem->host_rshim) : "(unreadable)");
  row("host privilege level", e.bios ? Or(e.bios->host_privilege_level) : "(unreadable)");
  if (e.host_privileges) {
    std::string p;
    for (const auto& [k, v] : *e.host_privileges) p += (p.empty() ? "" : " ") + k.substr(8) + "=" + v;
    row("host privileges", p.empty() ? "(none reported)" : p);
  }
  if (e.secure_boot) {
    row("secure boot", std::string(e.secure_boot->enable.value_or(false) ? "enabled" : "disabled") +
                           " (" + Or(e.secure_boot->current_boot) + ", " +
                           Or(e.secure_boot->mode) + ")");
  }
  row("BMC firmware", e.manager ? Or(e.manager->firmware_version) : "(unreadable)");
  out << "firmware inventory (" << e.firmware.size() << ")\n";
  for (const auto& [id, version] : e.firmware) row(id, version);
  if (o.spdm) {
    out << "SPDM\n";
    for (const std::string& l : spdm_lines) out << Cut(l, 100) << "\n";
  }
  std::cout << out.str();
  return rc;
}

int SpdmVerify(const SpdmVerifyOptions& o) {
  StatusOr<std::string> evidence_text = ReadText(o.evidence);
  if (!evidence_text.ok()) return Fail(evidence_text.status());
  StatusOr<std::string> chain = ReadText(o.chain);
  if (!chain.ok()) return Fail(chain.status());
  StatusOr<Bytes> nonce = HexDecode(o.nonce);
  if (!nonce.ok() || nonce->size() != 32) {
    return Fail(InvalidArgumentError("--nonce must be 64 hex digits (the 32-byte nonce sent)."));
  }
  spdm::TargetEvidence te;
  te.chain_pem = *chain;
  if (!evidence_text->empty() && evidence_text->front() == '{') {
    auto j = redfish::ParseResource(*evidence_text, o.evidence);
    if (!j.ok()) return Fail(j.status());
    auto ev = redfish::ReadSignedMeasurements(*j, o.evidence);
    if (!ev.ok()) return Fail(ev.status());
    te.signed_measurements_b64 = ev->signed_measurements;
    te.signing_algorithm = ev->signing_algorithm;
    te.hashing_algorithm = ev->hashing_algorithm;
    te.version = ev->version;
  } else {
    te.signed_measurements_b64 = *evidence_text;
    te.signing_algorithm = o.signing;
    te.hashing_algorithm = o.hashing;
    te.version = "1.1.0";
  }
  std::optional<spdm::TrustAnchors> anchors;
  if (!o.anchors.empty()) {
    auto a = LoadAnchors(o.anchors);
    if (!a.ok()) return Fail(a.status());
    anchors = std::move(a).value();
  }
  auto v = spdm::VerifyTargetEvidence(te, *nonce, anchors ? &*anchors : nullptr, Now());
  if (!v.ok()) {
    if (o.json) {
      std::cout << json{{"verified", false}, {"state", "failed"}, {"error", v.status().ToString()}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << "FAILED: " << v.status().message() << "\n";
    }
    return kExitDeny;
  }
  if (o.json) {
    // One spdm_verification entry of `bmc show --json` (docs/bmc-evidence-schema.md).
    json j = VerifiedJson(*v);
    j["state"] = "verified";
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::ostringstream out;
  out << "verified: SPDM 1.1 MEASUREMENTS signed by " << Cut(v->leaf_subject, 60) << "\n";
  out << "  signature  " << spdm::SigningAlgorithmName(v->measurements.signing()) << " over "
      << spdm::HashingAlgorithmName(v->measurements.hashing()) << "\n";
  out << "  nonce      ours (" << o.nonce.substr(0, 16) << "...)\n";
  out << "  chain      "
      << (v->chain_validated
              ? "validated to anchor " + v->chain->anchor_spki_sha256().substr(0, 16) + "..."
              : std::string("NOT validated (no --anchors): only the leaf key was used"))
      << "\n";
  out << "measurements (" << v->measurements.blocks().size() << ")\n";
  for (const spdm::MeasurementBlock& b : v->measurements.blocks()) {
    std::string line = "  " + std::to_string(b.index) + "  ";
    if (b.dmtf) {
      line += spdm::DmtfValueKindName(b.dmtf->value_type) +
              (b.dmtf->raw_bit_stream() ? " raw " : " digest ") + HexEncode(b.dmtf->value);
    } else {
      line += "spec " + std::to_string(b.specification) + " " + HexEncode(b.measurement);
    }
    out << Cut(line, 100) << "\n";
  }
  std::cout << out.str();
  return kExitOk;
}

}  // namespace dpuaudit::apps
