#include "apps/cli/reports.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "apps/cli/cli_util.h"
#include "apps/cli/firmware.h"
#include "apps/cli/quote.h"
#include "apps/shared/http_client.h"
#include "apps/shared/table.h"
#include "apps/shared/token_file.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/evidence.h"
#include "isolation/probes.h"
#include "report/claims.h"
#include "report/jws.h"

namespace dpuaudit::apps {
namespace {

StatusOr<std::unique_ptr<HttpClient>> Client(const ReadTarget& t) {
  HttpClientOptions o;
  o.ca_file = t.cacert;
  o.insecure_http = t.insecure_http;
  return HttpClient::New(t.verifier, o);
}

StatusOr<nlohmann::json> GetJson(const HttpClient& c, const ReadTarget& t,
                                 const std::string& path) {
  std::string token;
  if (!t.token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(token, ReadTokenFile(t.token_file, "reader"));
  }
  DPA_ASSIGN_OR_RETURN(HttpResponse r, c.GetWithBearer(path, token));
  if (r.status != 200) return StatusFromHttpError(r);
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded()) return InvalidArgumentError("GET " + path + ": not JSON.");
  return j;
}

// --- dpuaudit report show --------------------------------------------------

// Reads a report for display: verifies it when a key is given (never
// returns claims under a bad signature), else parses it unverified and says
// so in `sig_status`.
StatusOr<std::optional<report::ReportClaims>> LoadReportForDisplay(
    const std::string& file, const std::string& pubkey_file, const ReadTarget& verifier,
    std::string* sig_status) {
  DPA_ASSIGN_OR_RETURN(std::string jws, ReadText(file));
  auto header = report::PeekUnverifiedHeader(jws);
  if (!header.ok()) return header.status().WithPrefix(file);
  std::optional<report::ReportClaims> claims;
  std::optional<EcPublicKey> key;
  if (!pubkey_file.empty()) {
    DPA_ASSIGN_OR_RETURN(std::string pem, ReadText(pubkey_file));
    auto k = EcPublicKey::FromPem(pem);
    if (!k.ok()) return k.status().WithPrefix(pubkey_file);
    key = *k;
  } else if (!verifier.verifier.empty()) {
    DPA_ASSIGN_OR_RETURN(auto c, Client(verifier));
    DPA_ASSIGN_OR_RETURN(nlohmann::json node, GetJson(*c, verifier, "/v1/nodes/" + header->kid));
    if (!node.contains("public_key")) {
      return InvalidArgumentError("verifier did not return the node's key.");
    }
    DPA_ASSIGN_OR_RETURN(EcPublicKey k, report::ParsePublicJwk(node["public_key"]));
    key = k;
  }
  if (key) {
    DPA_ASSIGN_OR_RETURN(auto v, Es256Verifier::New(*key));
    auto verified = report::VerifyReport(jws, *v);
    if (!verified.ok()) {
      *sig_status = "INVALID: " + verified.status().message();
      return claims;  // empty: never show claims under a bad signature
    }
    *sig_status = "valid (ES256, key " + key->Thumbprint() + ")";
    claims = verified->claims;
    return claims;
  }
  *sig_status = "NOT CHECKED (give --pubkey or --verifier); claims below are unverified";
  DPA_ASSIGN_OR_RETURN(Bytes payload, UnverifiedJwsPayload(jws));
  auto parsed = report::ParseClaims(payload);
  if (!parsed.ok()) return parsed.status().WithPrefix(file);
  claims = *parsed;
  return claims;
}

}  // namespace

int ReportFirmware(const std::string& file, const std::string& pubkey_file,
                   const ReadTarget& verifier) {
  std::string sig_status;
  auto claims = LoadReportForDisplay(file, pubkey_file, verifier, &sig_status);
  if (!claims.ok()) return Fail(claims.status());
  std::cout << "report:     " << file << "\n"
            << "signature:  " << sig_status << "\n";
  if (!claims->has_value()) return kExitError;
  std::cout << DescribeFirmware(**claims);
  return kExitOk;
}

int ReportShow(const std::string& file, const std::string& pubkey_file,
               const ReadTarget& verifier) {
  std::string sig_status;
  auto loaded = LoadReportForDisplay(file, pubkey_file, verifier, &sig_status);
  if (!loaded.ok()) return Fail(loaded.status());
  std::optional<report::ReportClaims> claims = *loaded;
  std::cout << "report:     " << file << "\n"
            << "signature:  " << sig_status << "\n";
  if (!claims) return kExitError;  // never show claims under a bad signature
  const auto& c = *claims;
  std::cout << "format:     " << c.format << "\n"
            << "node:       " << c.node_id << "\n"
            << "nonce:      " << c.nonce << "\n"
            << "issued at:  " << TimeString(c.issued_at) << "\n"
            << "device:     " << c.device.model << "  serial " << c.device.serial
            << "  part " << c.device.part_number << "  psid " << c.device.psid
            << "  mac " << c.device.base_mac << "  fw " << c.device.fw_version << "\n";
  std::cout << "\n" << DescribeFirmware(c);
  std::cout << "\nevidence (" << c.evidence.size() << "):\n";
  Table ev({"ID", "EXIT", "BYTES", "SHA-256", "SOURCE"}, 64);
  for (const auto& e : c.evidence) {
    ev.AddRow({e.id, std::to_string(e.exit_code) + (e.timed_out ? " timeout" : "") +
                         (e.truncated ? " truncated" : ""),
               std::to_string(e.raw.size()), e.sha256.substr(0, 16), report::EvidenceSourceOf(e)});
  }
  std::cout << ev.Render();

  // Re-derive every finding from the evidence, as the verifier does.
  std::map<std::string, Finding> rederived;
  if (auto src = device::NewEvidenceDeviceSource(c.evidence); src.ok()) {
    for (auto& f : isolation::RunProbes(**src)) rederived[f.id] = f;
  }
  std::cout << "\nfindings (agent's verdict, and re-derived here from the evidence):\n";
  Table ft({"PROBE", "AGENT", "RE-DERIVED", "OBSERVED", "EXPECTED", "REASON"}, 60);
  for (const auto& f : c.findings) {
    auto it = rederived.find(f.id);
    std::string again = it == rederived.end() ? "-" : std::string(VerdictName(it->second.verdict));
    ft.AddRow({f.id, std::string(VerdictName(f.verdict)), again, f.observed, f.expected, f.reason});
  }
  std::cout << ft.Render();
  return kExitOk;  // a bad signature returned early above
}

// `report export-quote`: the AK comes from --ak, or from the verifier's
// record of the node that signed the report.
int ExportQuoteCmd(const std::string& file, const std::string& out, const std::string& ak,
                   const ReadTarget& verifier) {
  if (!ak.empty()) return ExportQuote(file, out, ak);
  if (verifier.verifier.empty()) {
    std::cerr << "dpuaudit: report export-quote needs --ak FILE or --verifier URL.\n";
    return kExitError;
  }
  auto run = [&]() -> StatusOr<std::string> {
    DPA_ASSIGN_OR_RETURN(std::string jws, ReadText(file));
    DPA_ASSIGN_OR_RETURN(report::UnverifiedJwsHeader header,
                         report::PeekUnverifiedHeader(jws, report::kDefaultMaxJwsBytes));
    DPA_ASSIGN_OR_RETURN(auto c, Client(verifier));
    DPA_ASSIGN_OR_RETURN(nlohmann::json node, GetJson(*c, verifier, "/v1/nodes/" + header.kid));
    if (!node.contains("tpm") || !node["tpm"].is_object() ||
        !node["tpm"].value("ak_public_b64", nlohmann::json()).is_string()) {
      return FailedPreconditionError("node " + header.kid + " has no TPM binding at " +
                                     verifier.verifier + ".");
    }
    DPA_ASSIGN_OR_RETURN(Bytes ak_bytes,
                         Base64Decode(node["tpm"]["ak_public_b64"].get<std::string>()));
    if (::mkdir(out.c_str(), 0755) != 0 && errno != EEXIST) {
      return InternalError("cannot create " + out + ": " + std::strerror(errno));
    }
    std::string path = out + "/ak.tpm2b_public";
    DPA_RETURN_IF_ERROR(WriteFileAtomic(path, ak_bytes, 0644));
    return path;
  };
  auto path = run();
  if (!path.ok()) {
    std::cerr << "dpuaudit: " << path.status().message() << "\n";
    return kExitError;
  }
  return ExportQuote(file, out, *path);
}

}  // namespace dpuaudit::apps
