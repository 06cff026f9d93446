// dpuaudit-bmc-sim: a BlueField-3 BMC simulator for the tests and the demo.
//
// A real HTTPS Redfish server on loopback (libmicrohttpd via the verifier's
// HttpServer, a TLS certificate made at start). It serves either a captured
// mockup tree (--tree DIR: URI /redfish/v1/X is DIR/redfish/v1/X/index.json)
// or the resources generated from a posture profile (--profile FILE, ours,
// tests/fixtures/bmc/*.json), with HTTP basic and session authentication.
// With --spdm it adds ComponentIntegrity/Bluefield_DPU_IRoT and
// Bluefield_ERoT: a DICE-like P-384 chain made at first start (kept in
// --keys-dir so restarts keep the device identity), and
// SPDMGetSignedMeasurements answered through an asynchronous Task with a
// correctly signed SPDM 1.1 transcript over the caller's nonce.
//
// --fault NAME (repeatable) makes it misbehave:
//   wrong-nonce bad-signature unknown-root expired-cert measurement-changed
//   rollback nic-mode host-rshim-enabled host-privileged other-serial
//   secure-boot-off slow hang oversized task-fails other-device
// When serving, it writes --ready-file: {"url", "port", "tls_spki_sha256"}.
// Exit codes: 0 after SIGTERM/SIGINT, 2 on a usage or start-up error.
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/verifier/http_server.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "common/openssl.h"
#include "testing/spdm_responder.h"
#include "testing/x509_builder.h"

namespace {

using dpuaudit::Bytes;
using dpuaudit::ByteView;
using dpuaudit::EvpPkeyPtr;
using dpuaudit::X509Ptr;
using nlohmann::json;
namespace fs = std::filesystem;
namespace t = dpuaudit::testing;

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

int64_t Now() { return static_cast<int64_t>(std::time(nullptr)); }

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteText(const std::string& path, const std::string& text, fs::perms perms) {
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + path);
    out << text;
  }
  fs::permissions(path, perms);
}

Bytes Sha(const EVP_MD* md, std::string_view text) {
  Bytes out(EVP_MD_size(md));
  unsigned int n = 0;
  EVP_Digest(text.data(), text.size(), out.data(), &n, md, nullptr);
  return out;
}

std::string SpkiSha256(X509* cert) {
  unsigned char* der = nullptr;
  const int len = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der);
  std::string hex = dpuaudit::Sha256Hex(ByteView(der, static_cast<size_t>(len)));
  OPENSSL_free(der);
  return hex;
}

json RedfishError(const std::string& code, const std::string& message) {
  return {{"error", {{"code", code}, {"message", message}}}};
}

struct Options {
  std::string listen = "127.0.0.1";
  uint16_t port = 0;
  std::string ready_file;
  std::string tls_cert_out;
  std::string tls_name;  // extra DNS SAN; "" -> IP:127.0.0.1,DNS:localhost
  bool tls_expired = false;
  std::string credentials;
  std::string tree;
  std::string profile;
  bool spdm = false;
  std::string keys_dir;
  std::string anchor_out;
  std::set<std::string> faults;
};

class Simulator {
 public:
  explicit Simulator(Options o) : o_(std::move(o)) {}

  void Init() {
    const json creds = json::parse(ReadText(o_.credentials));
    username_ = creds.at("username").get<std::string>();
    password_ = creds.at("password").get<std::string>();
    if (!o_.profile.empty()) profile_ = json::parse(ReadText(o_.profile));
    if (o_.spdm) InitDice();
  }

  bool Has(const std::string& fault) const { return o_.faults.count(fault) != 0; }

  // ---- the DICE-like chain: root -> device CA (L5) -> alias leaf (L6) ----
  void InitDice() {
    if (o_.keys_dir.empty()) throw std::runtime_error("--spdm needs --keys-dir");
    fs::create_directories(o_.keys_dir);
    auto key = [&](const std::string& name) {
      const std::string path = o_.keys_dir + "/" + name + ".pem";
      if (fs::exists(path)) return t::ReadPrivateKeyPem(ReadText(path));
      EvpPkeyPtr k = t::MakeEcKey("P-384");
      WriteText(path, t::PemOfKey(k.get()), fs::perms::owner_read | fs::perms::owner_write);
      return k;
    };
    root_key_ = key("root");
    other_root_key_ = key("other-root");
    for (const char* target : {"Bluefield_DPU_IRoT", "Bluefield_ERoT"}) {
      Target& tg = targets_[target];
      tg.id = target;
      // other-device: the IRoT of another DPU (its own DeviceID key) under
      // the same root, as after a board swap.
      tg.ca_key = key(std::string(target) + (Has("other-device") ? "-ca-other" : "-ca"));
      tg.leaf_key = key(std::string(target) + "-leaf");
    }
    const int64_t now = Now();
    t::CertSpec root{"dpuaudit test Device Identity CA", true, now - 86400 * 30,
                     now + 86400 * 3650, 1};
    root_cert_ = t::MakeCertificate(root, root_key_.get(), nullptr, nullptr);
    other_root_cert_ = t::MakeCertificate(root, other_root_key_.get(), nullptr, nullptr);
    if (!o_.anchor_out.empty()) {
      WriteText(o_.anchor_out, t::PemOf(root_cert_.get()),
                fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                    fs::perms::others_read);
    }
    const bool unknown_root = Has("unknown-root");
    X509* signer_cert = unknown_root ? other_root_cert_.get() : root_cert_.get();
    EVP_PKEY* signer_key = unknown_root ? other_root_key_.get() : root_key_.get();
    long serial = 10;
    for (auto& [id, tg] : targets_) {
      const std::string serial_text = Serial();
      t::CertSpec ca{id + " L5 " + serial_text, true, now - 86400 * 30, now + 86400 * 3650,
                     ++serial};
      ca.extra_oid = "2.23.133.5.4.1";
      ca.extra_value = t::FwidList384(Sha(EVP_sha384(), id + " first mutable code"));
      tg.ca_cert = t::MakeCertificate(ca, tg.ca_key.get(), signer_cert, signer_key);
      t::CertSpec leaf{id + " L6 alias", false, now - 86400,
                       Has("expired-cert") ? now - 3600 : now + 86400 * 365, ++serial};
      leaf.extra_oid = "2.23.133.5.4.1";
      leaf.extra_value = t::FwidList384(Sha(EVP_sha384(), id + " runtime firmware"));
      tg.leaf_cert = t::MakeCertificate(leaf, tg.leaf_key.get(), tg.ca_cert.get(),
                                        tg.ca_key.get());
      tg.chain = t::PemOf(tg.leaf_cert.get()) + t::PemOf(tg.ca_cert.get()) +
                 t::PemOf(signer_cert);
    }
  }

  std::string Serial() const {
    if (Has("other-serial")) return "MT0000000000";
    return profile_.is_object() ? profile_.value("serial", "MT0000000001") : "MT0000000001";
  }

  // ---- resources ----
  std::optional<json> Resource(const std::string& path) {
    std::optional<json> r;
    if (!o_.tree.empty()) {
      const std::string file = o_.tree + path + "/index.json";
      if (fs::exists(file)) r = json::parse(ReadText(file), nullptr, false);
      if (r && r->is_discarded()) r.reset();
    } else {
      r = Generated(path);
    }
    if (o_.spdm) {
      if (path == "/redfish/v1" && r) {
        (*r)["ComponentIntegrity"] = {{"@odata.id", "/redfish/v1/ComponentIntegrity"}};
      }
      if (auto s = SpdmResource(path)) r = s;
    }
    if (!r) return r;
    // Faults that change what the BMC reports.
    if (path == "/redfish/v1/Systems/Bluefield/Oem/Nvidia") {
      if (Has("nic-mode")) (*r)["Mode"] = "NicMode";
      if (Has("host-rshim-enabled")) (*r)["HostRshim"] = "Enabled";
    }
    if (path == "/redfish/v1/Systems/Bluefield/Bios") {
      if (Has("host-privileged")) (*r)["Attributes"]["HostPrivilegeLevel"] = "Privileged";
      if (Has("nic-mode")) (*r)["Attributes"]["NicMode"] = "NicMode";
    }
    if (path == "/redfish/v1/Systems/Bluefield/SecureBoot" && Has("secure-boot-off")) {
      (*r)["SecureBootEnable"] = false;
      (*r)["SecureBootCurrentBoot"] = "Disabled";
    }
    if (path == "/redfish/v1/Systems/Bluefield" && Has("other-serial")) {
      (*r)["SerialNumber"] = "MT0000000000";
    }
    if (path == "/redfish/v1/Systems/Bluefield" && Has("oversized")) {
      (*r)["Padding"] = std::string(2 * 1024 * 1024, 'x');
    }
    return r;
  }

  std::optional<json> Generated(const std::string& path) const {
    const json& p = profile_;
    auto id = [&](const std::string& uri) { return json{{"@odata.id", uri}}; };
    if (path == "/redfish/v1") {
      return json{{"@odata.id", path}, {"Product", "dpuaudit BMC simulator"},
                  {"Vendor", "Nvidia"}, {"RedfishVersion", "1.17.0"},
                  {"Systems", id("/redfish/v1/Systems")},
                  {"Managers", id("/redfish/v1/Managers")},
                  {"UpdateService", id("/redfish/v1/UpdateService")}};
    }
    if (path == "/redfish/v1/Systems/Bluefield") {
      return json{{"@odata.id", path}, {"Id", "Bluefield"},
                  {"Model", p.value("model", "BlueField-3 SmartNIC Main Card")},
                  {"SerialNumber", Serial()}, {"PowerState", "On"}};
    }
    if (path == "/redfish/v1/Systems/Bluefield/Oem/Nvidia") {
      return json{{"@odata.id", path}, {"Mode", p.value("mode", "DpuMode")},
                  {"HostRshim", p.value("host_rshim", "Disabled")}};
    }
    if (path == "/redfish/v1/Systems/Bluefield/Oem/Nvidia/Connectx/ExternalHostPrivileges") {
      return json{{"@odata.id", path},
                  {"ExternalHostPrivilege", p.value("host_privileges", json::object())}};
    }
    if (path == "/redfish/v1/Systems/Bluefield/Bios") {
      return json{{"@odata.id", path},
                  {"Attributes",
                   {{"HostPrivilegeLevel", p.value("host_privilege_level", "Restricted")},
                    {"InternalCPUModel", p.value("internal_cpu_model", "Embedded")},
                    {"NicMode", p.value("mode", "DpuMode")},
                    {"EnableOPTEE", false}}}};
    }
    if (path == "/redfish/v1/Systems/Bluefield/SecureBoot") {
      const json sb = p.value("secure_boot", json::object());
      return json{{"@odata.id", path}, {"SecureBootEnable", sb.value("enable", true)},
                  {"SecureBootCurrentBoot", sb.value("current_boot", "Enabled")},
                  {"SecureBootMode", sb.value("mode", "UserMode")}};
    }
    if (path == "/redfish/v1/Managers/Bluefield_BMC") {
      return json{{"@odata.id", path}, {"Id", "Bluefield_BMC"}, {"Model", "OpenBmc"},
                  {"FirmwareVersion", p.value("bmc_firmware", "BF-25.04-7")}};
    }
    const json fw = p.value("firmware", json::object());
    const std::string inv = "/redfish/v1/UpdateService/FirmwareInventory";
    if (path == inv) {
      json members = json::array();
      for (auto it = fw.begin(); it != fw.end(); ++it) members.push_back(id(inv + "/" + it.key()));
      return json{{"@odata.id", path}, {"Members", members},
                  {"Members@odata.count", members.size()}};
    }
    if (path.rfind(inv + "/", 0) == 0) {
      const std::string item = path.substr(inv.size() + 1);
      if (fw.contains(item)) {
        return json{{"@odata.id", path}, {"Id", item}, {"Version", fw[item]}};
      }
    }
    return std::nullopt;
  }

  std::string ActionPath(const std::string& target) const {
    return "/redfish/v1/ComponentIntegrity/" + target +
           "/Actions/ComponentIntegrity.SPDMGetSignedMeasurements";
  }

  std::optional<json> SpdmResource(const std::string& path) {
    if (path == "/redfish/v1/ComponentIntegrity") {
      json members = json::array();
      for (const auto& [tid, tg] : targets_) {
        members.push_back({{"@odata.id", "/redfish/v1/ComponentIntegrity/" + tid}});
      }
      return json{{"@odata.id", path}, {"Members", members}};
    }
    for (auto& [tid, tg] : targets_) {
      if (path == "/redfish/v1/ComponentIntegrity/" + tid) {
        return json{
            {"@odata.id", path},
            {"Id", tid},
            {"ComponentIntegrityEnabled", true},
            {"ComponentIntegrityType", "SPDM"},
            {"ComponentIntegrityTypeVersion", "1.1.0"},
            {"SPDM",
             {{"IdentityAuthentication",
               {{"ResponderAuthentication",
                 {{"ComponentCertificate",
                   {{"@odata.id", "/redfish/v1/Chassis/" + tid + "/Certificates/CertChain"}}}}}}}}},
            {"Actions",
             {{"#ComponentIntegrity.SPDMGetSignedMeasurements", {{"target", ActionPath(tid)}}}}}};
      }
      if (path == "/redfish/v1/Chassis/" + tid + "/Certificates/CertChain") {
        return json{{"@odata.id", path}, {"Id", "CertChain"}, {"CertificateType", "PEMchain"},
                    {"CertificateString", tg.chain}, {"SPDM", {{"SlotId", 0}}}};
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [n, task] : tasks_) {
      const std::string task_path = "/redfish/v1/TaskService/Tasks/" + std::to_string(n);
      if (path == task_path) {
        json j = {{"@odata.id", task_path}, {"Id", std::to_string(n)}};
        if (task.polls++ == 0) {
          j["TaskState"] = "Running";
        } else if (Has("task-fails")) {
          j["TaskState"] = "Exception";
          j["TaskStatus"] = "Critical";
        } else {
          j["TaskState"] = "Completed";
          j["TaskStatus"] = "OK";
          j["Payload"] = {{"HttpHeaders", {"Location: " + task_path + "/Result"}}};
        }
        return j;
      }
      if (path == task_path + "/Result") return task.result;
    }
    return std::nullopt;
  }

  // The measurement blocks of a target (DSP0274 DMTF form).
  std::vector<t::SpdmBlock> Blocks(const std::string& target) const {
    std::vector<t::SpdmBlock> b;
    const std::string s = Serial();
    if (target == "Bluefield_DPU_IRoT") {
      b.push_back({1, 1, 0x83, Bytes{0x00, 0x00, 0x01, 0x00}});  // block version 1.0.0
      b.push_back({2, 1, 0x01, Sha(EVP_sha512(), "psc firmware 1")});
      b.push_back({3, 1, 0x01,
                   Sha(EVP_sha512(), Has("measurement-changed") ? "nic firmware 2"
                                                                 : "nic firmware 1")});
      b.push_back({4, 1, 0x01, Sha(EVP_sha512(), "arm firmware 1")});
      for (uint8_t i = 5; i <= 10; ++i) {
        b.push_back({i, 1, 0x02, Sha(EVP_sha512(), s + " config " + std::to_string(i))});
      }
      const uint8_t svn = Has("rollback") ? 2 : 3;
      b.push_back({11, 1, 0x87, Bytes{svn, 0, 0, 0}});  // firmware security version
    } else {
      for (uint8_t i = 1; i <= 8; ++i) {
        b.push_back({i, 1, 0x01, Sha(EVP_sha384(), "bmc image " + std::to_string(i))});
      }
      b.push_back({9, 1, 0x87, Bytes{1, 0, 0, 0}});
    }
    return b;
  }

  // POST <action>: a Task whose result is the signed transcript.
  void Measure(const std::string& target, const dpuaudit::apps::ServerRequest& req,
               dpuaudit::apps::ServerResponse& res) {
    json body = json::parse(req.body, nullptr, false);
    auto nonce = body.is_object() && body.contains("Nonce") && body["Nonce"].is_string()
                     ? dpuaudit::HexDecode(body["Nonce"].get<std::string>())
                     : dpuaudit::StatusOr<Bytes>(dpuaudit::InvalidArgumentError("no Nonce"));
    if (!nonce.ok() || nonce->size() != 32) {
      res.status = 400;
      res.body = RedfishError("Base.1.15.0.PropertyValueFormatError",
                              "Nonce must be 64 hex characters").dump();
      return;
    }
    Target& tg = targets_.at(target);
    t::SpdmExchange e;
    e.nonce = *nonce;
    if (Has("wrong-nonce")) e.nonce[0] ^= 0xFF;
    e.blocks = Blocks(target);
    RAND_bytes(e.responder_nonce.data(), static_cast<int>(e.responder_nonce.size()));
    Bytes transcript = t::SpdmTranscript(e, tg.leaf_key.get(), EVP_sha384(), 48);
    if (Has("bad-signature")) transcript.back() ^= 0x01;
    json result = {{"HashingAlgorithm", "TPM_ALG_SHA_384"},
                   {"SigningAlgorithm", "TPM_ALG_ECDSA_ECC_NIST_P384"},
                   {"Version", "1.1.0"},
                   {"SignedMeasurements", dpuaudit::Base64Encode(transcript)}};
    std::lock_guard<std::mutex> lock(mu_);
    const int n = ++next_task_;
    tasks_[n] = Task{0, result};
    const std::string task_path = "/redfish/v1/TaskService/Tasks/" + std::to_string(n);
    res.status = 202;
    res.headers.push_back({"Location", task_path});
    res.body = json{{"@odata.id", task_path}, {"TaskState", "Running"}}.dump();
  }

  bool Authorized(const dpuaudit::apps::ServerRequest& req) {
    const std::string token = req.Header("x-auth-token");
    if (!token.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      return sessions_.count(token) != 0;
    }
    const std::string basic = req.Header("authorization");
    return basic == "Basic " + dpuaudit::Base64Encode(dpuaudit::AsBytes(username_ + ":" + password_));
  }

  void Delay() {
    const int ms = Has("hang") ? 60000 : Has("slow") ? 1500 : 0;
    for (int waited = 0; waited < ms && !g_stop; waited += 50) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  void Handle(const dpuaudit::apps::ServerRequest& req, dpuaudit::apps::ServerResponse& res) {
    Delay();
    const std::string& path = req.path;
    if (req.method == "POST" && path == "/redfish/v1/SessionService/Sessions") {
      json body = json::parse(req.body, nullptr, false);
      if (!body.is_object() || body.value("UserName", "") != username_ ||
          body.value("Password", "") != password_) {
        res.status = 401;
        res.body = RedfishError("Base.1.15.0.InsufficientPrivilege", "login failed").dump();
        return;
      }
      Bytes raw(16);
      RAND_bytes(raw.data(), static_cast<int>(raw.size()));
      const std::string token = dpuaudit::HexEncode(raw);
      std::lock_guard<std::mutex> lock(mu_);
      const std::string uri = "/redfish/v1/SessionService/Sessions/" + std::to_string(++next_session_);
      sessions_[token] = uri;
      res.status = 201;
      res.headers.push_back({"X-Auth-Token", token});
      res.headers.push_back({"Location", uri});
      res.body = json{{"@odata.id", uri}, {"UserName", username_}}.dump();
      return;
    }
    if (!Authorized(req) && !(req.method == "GET" && path == "/redfish/v1")) {
      res.status = 401;
      res.body = RedfishError("Base.1.15.0.NoValidSession", "authentication required").dump();
      return;
    }
    if (req.method == "DELETE") {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
        if (it->second == path) {
          sessions_.erase(it);
          res.status = 204;
          res.body.clear();
          return;
        }
      }
      res.status = 404;
      res.body = RedfishError("Base.1.15.0.ResourceNotFound", path).dump();
      return;
    }
    if (req.method == "POST") {
      for (const auto& [tid, tg] : targets_) {
        if (o_.spdm && path == ActionPath(tid)) return Measure(tid, req, res);
      }
      res.status = 405;
      res.body = RedfishError("Base.1.15.0.ActionNotSupported", path).dump();
      return;
    }
    std::optional<json> r = Resource(path);
    if (!r) {
      res.status = 404;
      res.body = RedfishError("Base.1.15.0.ResourceNotFound",
                              "The requested resource of type " + path + " was not found.")
                     .dump();
      return;
    }
    res.status = 200;
    res.body = r->dump(1);
  }

  int Run() {
    // The HTTPS certificate: P-256, self-signed, for 127.0.0.1/localhost
    // (or --tls-name), expired on request.
    const int64_t now = Now();
    // Kept in --keys-dir when given, so a restarted simulator keeps the
    // key a verifier pinned.
    EvpPkeyPtr tls_key;
    const std::string tls_key_path = o_.keys_dir.empty() ? "" : o_.keys_dir + "/tls.pem";
    if (!tls_key_path.empty() && fs::exists(tls_key_path)) {
      tls_key = t::ReadPrivateKeyPem(ReadText(tls_key_path));
    } else {
      tls_key = t::MakeEcKey("P-256");
      if (!tls_key_path.empty()) {
        fs::create_directories(o_.keys_dir);
        WriteText(tls_key_path, t::PemOfKey(tls_key.get()),
                  fs::perms::owner_read | fs::perms::owner_write);
      }
    }
    t::CertSpec spec{"dpu-bmc", false, o_.tls_expired ? now - 86400 * 400 : now - 3600,
                     o_.tls_expired ? now - 86400 : now + 86400 * 30, 7};
    spec.san = o_.tls_name.empty() ? "IP:127.0.0.1,DNS:localhost" : "DNS:" + o_.tls_name;
    X509Ptr tls_cert = t::MakeCertificate(spec, tls_key.get(), nullptr, nullptr);
    if (!o_.tls_cert_out.empty()) {
      WriteText(o_.tls_cert_out, t::PemOf(tls_cert.get()),
                fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                    fs::perms::others_read);
    }
    dpuaudit::apps::HttpLimits limits;
    limits.threads = 2;
    limits.request_timeout_seconds = 90;
    dpuaudit::apps::HttpServer server(limits, [](const std::string& code,
                                                 const std::string& message) {
      return RedfishError(code, message).dump();
    });
    const std::string any = "/redfish/v1(/[A-Za-z0-9._~:+-]+)*";
    for (const char* method : {"GET", "POST", "DELETE"}) {
      server.Route(method, any, [this](const dpuaudit::apps::ServerRequest& req,
                                       dpuaudit::apps::ServerResponse& res) { Handle(req, res); });
    }
    auto port = server.Start(o_.listen, o_.port, t::PemOf(tls_cert.get()),
                             t::PemOfKey(tls_key.get()));
    if (!port.ok()) {
      std::cerr << "dpuaudit-bmc-sim: " << port.status().ToString() << "\n";
      return 2;
    }
    const std::string url = "https://" + o_.listen + ":" + std::to_string(*port);
    const json ready = {{"url", url}, {"port", *port},
                        {"tls_spki_sha256", SpkiSha256(tls_cert.get())}};
    if (!o_.ready_file.empty()) {
      const std::string tmp = o_.ready_file + ".tmp";
      WriteText(tmp, ready.dump() + "\n",
                fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                    fs::perms::others_read);
      fs::rename(tmp, o_.ready_file);
    }
    std::cout << ready.dump() << std::endl;
    while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.Stop();
    return 0;
  }

 private:
  struct Target {
    std::string id;
    EvpPkeyPtr ca_key, leaf_key;
    X509Ptr ca_cert, leaf_cert;
    std::string chain;
  };
  struct Task {
    int polls = 0;
    json result;
  };

  Options o_;
  std::string username_, password_;
  json profile_ = json::object();
  EvpPkeyPtr root_key_, other_root_key_;
  X509Ptr root_cert_, other_root_cert_;
  std::map<std::string, Target> targets_;
  std::mutex mu_;
  std::map<int, Task> tasks_;
  int next_task_ = 0;
  std::map<std::string, std::string> sessions_;  // token -> session URI
  int next_session_ = 0;
};

constexpr const char* kUsage =
    "usage: dpuaudit-bmc-sim --credentials FILE (--tree DIR | --profile FILE)\n"
    "         [--spdm --keys-dir DIR [--anchor-out FILE]] [--listen ADDR] [--port N]\n"
    "         [--ready-file FILE] [--tls-cert-out FILE] [--tls-name NAME] [--tls-expired]\n"
    "         [--fault NAME]...\n"
    "A BlueField-3 BMC simulator (HTTPS Redfish on loopback) for dpuaudit's tests and demo.\n"
    "Faults: wrong-nonce bad-signature unknown-root expired-cert measurement-changed rollback\n"
    "        nic-mode host-rshim-enabled host-privileged other-serial secure-boot-off slow\n"
    "        hang oversized task-fails other-device\n"
    "Exit codes: 0 stopped by SIGTERM/SIGINT, 2 usage or start-up error.\n";

}  // namespace

int main(int argc, char** argv) {
  Options o;
  static const std::set<std::string> kFaults = {
      "wrong-nonce", "bad-signature", "unknown-root", "expired-cert", "measurement-changed",
      "rollback", "nic-mode", "host-rshim-enabled", "host-privileged", "other-serial",
      "secure-boot-off", "slow", "hang", "oversized", "task-fails", "other-device"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "dpuaudit-bmc-sim: " << a << " needs a value\n" << kUsage;
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--listen") {
      o.listen = value();
    } else if (a == "--port") {
      o.port = static_cast<uint16_t>(std::stoi(value()));
    } else if (a == "--ready-file") {
      o.ready_file = value();
    } else if (a == "--tls-cert-out") {
      o.tls_cert_out = value();
    } else if (a == "--tls-name") {
      o.tls_name = value();
    } else if (a == "--tls-expired") {
      o.tls_expired = true;
    } else if (a == "--credentials") {
      o.credentials = value();
    } else if (a == "--tree") {
      o.tree = value();
    } else if (a == "--profile") {
      o.profile = value();
    } else if (a == "--spdm") {
      o.spdm = true;
    } else if (a == "--keys-dir") {
      o.keys_dir = value();
    } else if (a == "--anchor-out") {
      o.anchor_out = value();
    } else if (a == "--fault") {
      const std::string f = value();
      if (kFaults.count(f) == 0) {
        std::cerr << "dpuaudit-bmc-sim: unknown fault " << f << "\n" << kUsage;
        return 2;
      }
      o.faults.insert(f);
    } else {
      std::cerr << "dpuaudit-bmc-sim: unknown argument " << a << "\n" << kUsage;
      return 2;
    }
  }
  if (o.credentials.empty() || o.tree.empty() == o.profile.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  try {
    Simulator sim(o);
    sim.Init();
    return sim.Run();
  } catch (const std::exception& e) {
    std::cerr << "dpuaudit-bmc-sim: " << e.what() << "\n";
    return 2;
  }
}
