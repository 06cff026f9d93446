// `enroll` and `pubkey`: the agent key, the device identity and the TPM
// binding (credential activation) sent to the verifier. --json prints one
// object instead of the lines (docs/schemas/agent-enroll.schema.json,
// agent-pubkey.schema.json). A refusal by the verifier exits 1 for HTTP
// 409/410 and 2 otherwise, as in every binary (FailVerifier).
#include <spdlog/spdlog.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/agent/agent_util.h"
#include "apps/agent/commands.h"
#include "apps/shared/token_file.h"
#include "common/bytes.h"
#include "isolation/identity.h"
#include "isolation/probes.h"
#include "report/jws.h"
#include "report/node_id.h"

namespace dpuaudit::apps {

int Enroll(const AgentFlags& f) {
  if (Status s = report::ValidateNodeId(f.node_id, "--node-id"); !s.ok()) return Fail(s);
  bool created = false;
  auto key = EcPrivateKey::LoadOrCreateFile(f.key, &created);
  if (!key.ok()) return Fail(key.status());
  if (created) spdlog::info("created agent key {} (P-256, mode 0600)", f.key);
  auto client = Client(f);
  if (!client.ok()) return Fail(client.status());
  nlohmann::json body = {
      {"node_id", f.node_id},
      {"public_key", report::PublicJwk(key->public_key(), key->public_key().Thumbprint())}};
  {
    // The device identity as this agent reads it (the same probes the
    // reports' identity comes from): the verifier stores it as claimed and
    // shows it to the operator who approves; a serial-bound token needs it.
    auto source = OpenSource(f);
    if (!source.ok()) return Fail(source.status());
    isolation::ProbeContext ctx = isolation::ProbeContext::Discover(**source);
    isolation::DeviceIdentity id = isolation::CollectIdentity(**source, ctx);
    nlohmann::json device = nlohmann::json::object();
    if (!id.serial.empty()) device["serial"] = id.serial;
    if (!id.psid.empty()) device["psid"] = id.psid;
    if (!id.model.empty()) device["model"] = id.model;
    if (!device.empty()) body["device"] = std::move(device);
  }
  std::unique_ptr<attest::tpm::Tpm> tpm;
  attest::tpm::EkType ek_type = attest::tpm::EkType::kRsa2048;
  if (!f.tpm.empty()) {
    auto t = EkTypeOf(f);
    if (!t.ok()) return Fail(t.status());
    ek_type = *t;
    auto opened = attest::tpm::Tpm::Open(f.tpm);
    if (!opened.ok()) return Fail(opened.status());
    tpm = std::move(opened).value();
    auto ek = tpm->EkPublic(ek_type);
    if (!ek.ok()) return Fail(ek.status());
    auto ak = tpm->AkPublic();
    if (!ak.ok()) return Fail(ak.status());
    nlohmann::json t_json = {{"ek_public_b64", Base64Encode(*ek)},
                             {"ak_public_b64", Base64Encode(*ak)}};
    auto cert = tpm->ReadEkCertificate(ek_type);
    if (cert.ok()) {
      t_json["ek_cert_b64"] = Base64Encode(*cert);
    } else if (cert.status().code() == StatusCode::kNotFound) {
      spdlog::warn("the TPM has no EK certificate; the verifier accepts it only if its "
                   "policy allows uncertified EKs");
    } else {
      return Fail(cert.status());
    }
    body["tpm"] = std::move(t_json);
  }
  std::string token;
  if (!f.bootstrap_token_file.empty()) {
    auto t = ReadTokenFile(f.bootstrap_token_file, "bootstrap");
    if (!t.ok()) return Fail(t.status());
    token = *t;
  }
  HttpResponse r;
  {
    // The token travels only in the Authorization header; never logged.
    auto c = (*client)->PostWithBearer("/v1/nodes", "application/json", body.dump(), token);
    if (!c.ok()) return Fail(c.status());
    r = *c;
  }
  if (r.status != 200 && r.status != 201) return FailVerifier(StatusFromHttpError(r));
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  std::string state = j.is_object() ? JsonStr(j, "state", "") : "";
  const std::string thumbprint = key->public_key().Thumbprint();
  // --json: what was sent and what the verifier answered (its TPM
  // challenge is consumed below, not printed).
  nlohmann::json answer = j.is_object() ? j : nlohmann::json::object();
  answer.erase("tpm_challenge");
  nlohmann::json out = {
      {"node_id", f.node_id},
      {"key_file", f.key},
      {"key_created", created},
      {"key_thumbprint", thumbprint},
      {"device", body.value("device", nlohmann::json::object())},
      {"state", state},
      {"created", r.status == 201},
      {"tpm", nullptr},
      {"verifier", {{"url", f.verifier}, {"http_status", r.status}, {"answer", answer}}}};
  if (!f.json) {
    std::cout << "enrolled " << f.node_id << ": " << (state.empty() ? "?" : state)
              << " (key thumbprint " << thumbprint << ")\n";
    if (body.contains("device") && body["device"].contains("serial")) {
      std::cout << "device serial " << body["device"]["serial"].get<std::string>() << "\n";
    }
  }
  if (tpm && j.is_object()) {
    if (j.contains("tpm_challenge") && j["tpm_challenge"].is_object()) {
      // Credential activation: only the TPM holding this EK, with the AK
      // the verifier named, can recover the credential.
      const nlohmann::json& ch = j["tpm_challenge"];
      auto blob = Base64Decode(JsonStr(ch, "credential_blob_b64", ""));
      auto secret = Base64Decode(JsonStr(ch, "encrypted_secret_b64", ""));
      if (!blob.ok() || !secret.ok()) {
        return Fail(InvalidArgumentError("verifier sent a malformed TPM challenge."));
      }
      auto credential = tpm->ActivateCredential(ek_type, *blob, *secret);
      if (!credential.ok()) return Fail(credential.status());
      nlohmann::json activate = {{"credential_b64", Base64Encode(*credential)}};
      auto a = PostJson(**client, "/v1/nodes/" + f.node_id + "/tpm/activate",
                        "application/json", activate.dump());
      if (!a.ok()) return FailVerifier(a.status());
      out["tpm"] = {{"state", JsonStr(*a, "tpm_state", "")},
                    {"ak_name", JsonStr(*a, "ak_name", "")}};
      if (!f.json) {
        std::cout << "TPM bound: AK " << JsonStr(*a, "ak_name", "?")
                  << " activated with the EK\n";
      }
    } else {
      out["tpm"] = {{"state", JsonStr(j, "tpm_state", "")}, {"ak_name", ""}};
      if (!f.json) std::cout << "TPM: " << JsonStr(j, "tpm_state", "?") << "\n";
    }
  }
  if (f.json) {
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (state == "pending") {
    std::cout << "waiting for operator approval: dpuaudit-verifier approve "
              << f.node_id << " --thumbprint " << key->public_key().Thumbprint()
              << " --db <verifier.db>\n";
  }
  return kExitOk;
}


int PubKey(const AgentFlags& f) {
  auto key = EcPrivateKey::LoadFile(f.key);
  if (!key.ok()) return Fail(key.status());
  if (f.json) {
    const EcPublicKey& pub = key->public_key();
    nlohmann::json j = {{"key_file", f.key},
                        {"key_thumbprint", pub.Thumbprint()},
                        {"public_key_pem", pub.ToPem()},
                        {"public_key", report::PublicJwk(pub, pub.Thumbprint())}};
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << key->public_key().ToPem();
  return kExitOk;
}

}  // namespace dpuaudit::apps
