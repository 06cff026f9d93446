// One pull of a BMC's evidence (collect.h).
#include "bmc/collect.h"

#include <chrono>
#include <thread>
#include <utility>

#include "common/crypto.h"

namespace dpuaudit::bmc {
namespace {

using nlohmann::json;

// Why the rest of a pull is not requested ("" while it goes on): the
// service root failed (a transport failure: every other request would fail
// the same way, and each costs its timeouts), or the pull's deadline passed.
struct PullState {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::chrono::milliseconds budget{0};
  std::string stop;
  bool Stopped() {
    if (stop.empty() && deadline && std::chrono::steady_clock::now() > *deadline) {
      stop = "the pull's deadline of " + std::to_string(budget.count()) + " ms passed";
    }
    return !stop.empty();
  }
};

template <typename T, typename Reader>
std::optional<T> Fetch(RedfishClient& client, std::string_view path, BmcEvidence& e,
                       PullState& pull, Reader read) {
  if (pull.Stopped()) {
    e.errors[std::string(path)] = "not requested: " + pull.stop + ".";
    return std::nullopt;
  }
  StatusOr<json> j = client.Get(path);
  if (!j.ok()) {
    e.errors[std::string(path)] = j.status().ToString();
    return std::nullopt;
  }
  StatusOr<T> v = read(*j);
  if (!v.ok()) {
    e.errors[std::string(path)] = v.status().ToString();
    return std::nullopt;
  }
  return std::move(v).value();
}

std::string LastSegment(const std::string& uri) {
  const size_t slash = uri.rfind('/');
  return slash == std::string::npos ? uri : uri.substr(slash + 1);
}

StatusOr<std::string> TaskPath(const PostResult& post, const std::string& action) {
  if (!post.location.empty()) return post.location;
  if (post.body.is_object()) {
    auto id = post.body.find("@odata.id");
    if (id != post.body.end() && id->is_string()) return id->get<std::string>();
  }
  return UnavailableError("POST " + action + " answered HTTP " +
                          std::to_string(post.status) + " with no Task to follow.");
}

Status CollectTarget(RedfishClient& client, const std::string& member_uri,
                     const CollectOptions& options, SpdmTargetEvidence& t) {
  DPA_ASSIGN_OR_RETURN(json member, client.Get(member_uri));
  DPA_ASSIGN_OR_RETURN(redfish::ComponentIntegrity ci,
                       redfish::ReadComponentIntegrity(member, member_uri));
  if (ci.enabled == false) {
    return FailedPreconditionError(member_uri + " has ComponentIntegrityEnabled false.");
  }
  if (ci.type && *ci.type != "SPDM") {
    return FailedPreconditionError(member_uri + " ComponentIntegrityType is " + *ci.type +
                                   ", not SPDM.");
  }
  if (!ci.certificate_uri) {
    return NotFoundError(member_uri + " names no SPDM ComponentCertificate.");
  }
  if (!ci.measurements_action) {
    return NotFoundError(member_uri + " has no SPDMGetSignedMeasurements action.");
  }
  DPA_ASSIGN_OR_RETURN(json cert, client.Get(*ci.certificate_uri));
  DPA_ASSIGN_OR_RETURN(t.chain_pem, redfish::ReadCertificateChain(cert, *ci.certificate_uri));

  DPA_ASSIGN_OR_RETURN(t.nonce, RandomBytes(32));
  const json body = {{"Nonce", HexEncode(t.nonce)}, {"SlotId", 0}};
  DPA_ASSIGN_OR_RETURN(PostResult post, client.Post(*ci.measurements_action, body));
  std::string result_path = *ci.measurements_action + "/data";
  if (post.status != 200 || post.body.is_null() || !post.body.contains("SignedMeasurements")) {
    DPA_ASSIGN_OR_RETURN(std::string task_path, TaskPath(post, *ci.measurements_action));
    const auto deadline = std::chrono::steady_clock::now() + options.task_timeout;
    redfish::Task task;
    while (true) {
      DPA_ASSIGN_OR_RETURN(json tj, client.Get(task_path));
      DPA_ASSIGN_OR_RETURN(task, redfish::ReadTask(tj, task_path));
      if (task.state != "New" && task.state != "Starting" && task.state != "Running" &&
          task.state != "Pending") {
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return DeadlineExceededError("Task " + task_path + " is still " + task.state +
                                     " after " +
                                     std::to_string(options.task_timeout.count()) + " ms.");
      }
      std::this_thread::sleep_for(options.task_poll);
    }
    if (task.state != "Completed") {
      return UnavailableError("Task " + task_path + " ended " + task.state +
                              (task.status ? " (" + *task.status + ")" : std::string()) +
                              ".");
    }
    if (task.location) {
      result_path = *task.location;
    } else {
      for (const std::string& arg : task.message_args) {
        if (arg.rfind(*ci.measurements_action, 0) == 0) result_path = arg;
      }
    }
    DPA_ASSIGN_OR_RETURN(json data, client.Get(result_path));
    DPA_ASSIGN_OR_RETURN(t.evidence, redfish::ReadSignedMeasurements(data, result_path));
  } else {
    DPA_ASSIGN_OR_RETURN(t.evidence,
                         redfish::ReadSignedMeasurements(post.body, *ci.measurements_action));
  }
  return OkStatus();
}

json Opt(const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); }
json Opt(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

BmcEvidence CollectBmcEvidence(RedfishClient& client, const CollectOptions& options) {
  BmcEvidence e;
  e.base_url = client.base_url();
  e.tls_mode = client.tls_mode();
  e.collected_at = options.now;
  PullState pull;
  if (options.deadline.count() > 0) {
    pull.deadline = std::chrono::steady_clock::now() + options.deadline;
    pull.budget = options.deadline;
  }
  e.service_root = Fetch<redfish::ServiceRoot>(client, redfish::kServiceRoot, e, pull,
                                               redfish::ReadServiceRoot);
  if (!e.service_root && client.requests() > 0 &&
      e.errors[std::string(redfish::kServiceRoot)].rfind("INVALID_ARGUMENT", 0) != 0) {
    pull.stop = "the service root could not be read (" +
                e.errors[std::string(redfish::kServiceRoot)] + ")";
  }
  e.system = Fetch<redfish::System>(client, redfish::kSystem, e, pull, redfish::ReadSystem);
  e.oem = Fetch<redfish::SystemOemNvidia>(client, redfish::kSystemOemNvidia, e, pull,
                                          redfish::ReadSystemOemNvidia);
  e.host_privileges = Fetch<std::map<std::string, std::string>>(
      client, redfish::kExternalHostPrivileges, e, pull, redfish::ReadExternalHostPrivileges);
  e.bios = Fetch<redfish::Bios>(client, redfish::kBios, e, pull, redfish::ReadBios);
  e.secure_boot = Fetch<redfish::SecureBoot>(client, redfish::kSecureBoot, e, pull,
                                             redfish::ReadSecureBoot);
  e.manager =
      Fetch<redfish::Manager>(client, redfish::kManager, e, pull, redfish::ReadManager);
  auto members = Fetch<std::vector<std::string>>(
      client, redfish::kFirmwareInventory, e, pull,
      [](const json& j) { return redfish::ReadCollection(j, redfish::kFirmwareInventory); });
  if (members) {
    for (const std::string& uri : *members) {
      auto item = Fetch<redfish::FirmwareItem>(
          client, uri, e, pull, [&](const json& j) { return redfish::ReadFirmwareItem(j, uri); });
      if (item) e.firmware[item->id] = item->version;
    }
  }
  if (options.spdm) {
    std::map<std::string, std::string> targets;  // id -> member URI
    Status listing = OkStatus();
    if (pull.Stopped()) {
      listing = UnavailableError("not requested: " + pull.stop + ".");
    } else if (e.service_root && !e.service_root->has_component_integrity) {
      listing = NotFoundError(
          "the BMC's service root has no ComponentIntegrity (SPDM attestation is not "
          "offered by this BMC firmware).");
    } else if (!e.service_root) {
      listing = UnavailableError("the BMC's service root could not be read.");
    } else {
      StatusOr<json> c = client.Get(redfish::kComponentIntegrity);
      StatusOr<std::vector<std::string>> m =
          c.ok() ? redfish::ReadCollection(*c, redfish::kComponentIntegrity)
                 : StatusOr<std::vector<std::string>>(c.status());
      if (!m.ok()) {
        listing = m.status();
      } else {
        for (const std::string& uri : *m) targets[LastSegment(uri)] = uri;
      }
    }
    for (const char* id : {kIrotTarget, kErotTarget}) {
      SpdmTargetEvidence t;
      t.id = id;
      if (!listing.ok()) {
        t.status = listing;
      } else if (pull.Stopped()) {
        t.status = UnavailableError("not requested: " + pull.stop + ".");
      } else if (targets.count(id) == 0) {
        t.status = NotFoundError(std::string("the BMC lists no ComponentIntegrity/") + id + ".");
      } else {
        t.status = CollectTarget(client, targets[id], options, t);
      }
      e.targets.push_back(std::move(t));
    }
  }
  e.requests = client.requests();
  return e;
}

json BmcEvidenceJson(const BmcEvidence& e) {
  json j;
  j["base_url"] = e.base_url;
  j["tls_mode"] = e.tls_mode;
  j["collected_at"] = e.collected_at;
  j["serial_number"] = e.system ? Opt(e.system->serial_number) : json(nullptr);
  j["model"] = e.system ? Opt(e.system->model) : json(nullptr);
  j["mode"] = e.oem ? Opt(e.oem->mode) : json(nullptr);
  j["host_rshim"] = e.oem ? Opt(e.oem->host_rshim) : json(nullptr);
  j["host_privileges"] = e.host_privileges ? json(*e.host_privileges) : json(nullptr);
  j["bios"] = e.bios ? json{{"host_privilege_level", Opt(e.bios->host_privilege_level)},
                            {"internal_cpu_model", Opt(e.bios->internal_cpu_model)},
                            {"nic_mode", Opt(e.bios->nic_mode)},
                            {"enable_optee", Opt(e.bios->enable_optee)}}
                     : json(nullptr);
  j["secure_boot"] = e.secure_boot ? json{{"enable", Opt(e.secure_boot->enable)},
                                          {"current_boot", Opt(e.secure_boot->current_boot)},
                                          {"mode", Opt(e.secure_boot->mode)}}
                                   : json(nullptr);
  j["bmc_firmware_version"] = e.manager ? Opt(e.manager->firmware_version) : json(nullptr);
  j["firmware"] = e.firmware;
  json targets = json::array();
  for (const SpdmTargetEvidence& t : e.targets) {
    json tj = {{"id", t.id}, {"ok", t.status.ok()}};
    if (!t.status.ok()) {
      tj["error"] = t.status.ToString();
    } else {
      tj["nonce"] = HexEncode(t.nonce);
      tj["signed_measurements"] = t.evidence.signed_measurements;
      tj["signing_algorithm"] = t.evidence.signing_algorithm;
      tj["hashing_algorithm"] = t.evidence.hashing_algorithm;
      tj["version"] = t.evidence.version;
      tj["certificate_chain"] = t.chain_pem;
    }
    targets.push_back(std::move(tj));
  }
  j["spdm_targets"] = std::move(targets);
  j["errors"] = e.errors;
  j["requests"] = e.requests;
  return j;
}

}  // namespace dpuaudit::bmc
