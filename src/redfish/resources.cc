// Redfish resource readers (resources.h).
#include "redfish/resources.h"

#include <initializer_list>
#include <utility>

#include "common/bytes.h"
#include "common/strict_json.h"

namespace dpuaudit::redfish {
namespace {

using nlohmann::json;
using strict_json::Quote;

// Reads optional typed members of one object, naming `uri` and the JSON
// path in errors.
class Fields {
 public:
  Fields(const json& j, std::string_view uri) : j_(j), uri_(uri) {}

  // The member at `path` (members separated by '/'), or nullptr when any
  // step is absent. A step through a non-object is an error.
  StatusOr<const json*> At(std::string_view path) const {
    const json* cur = &j_;
    size_t start = 0;
    while (start <= path.size()) {
      const size_t slash = path.find('/', start);
      const std::string_view key =
          path.substr(start, slash == std::string_view::npos ? std::string_view::npos
                                                              : slash - start);
      if (!cur->is_object()) {
        return InvalidArgumentError(Where(path) + ": " +
                                    std::string(path.substr(0, start)) +
                                    " is not an object.");
      }
      auto it = cur->find(std::string(key));
      if (it == cur->end()) return static_cast<const json*>(nullptr);
      cur = &*it;
      if (slash == std::string_view::npos) break;
      start = slash + 1;
    }
    return cur;
  }

  StatusOr<std::optional<std::string>> String(std::string_view path) const {
    DPA_ASSIGN_OR_RETURN(const json* v, At(path));
    if (v == nullptr || v->is_null()) return std::optional<std::string>();
    if (!v->is_string()) return InvalidArgumentError(Where(path) + " must be a string.");
    return std::optional<std::string>(v->get<std::string>());
  }

  StatusOr<std::optional<bool>> Bool(std::string_view path) const {
    DPA_ASSIGN_OR_RETURN(const json* v, At(path));
    if (v == nullptr || v->is_null()) return std::optional<bool>();
    if (!v->is_boolean()) return InvalidArgumentError(Where(path) + " must be a boolean.");
    return std::optional<bool>(v->get<bool>());
  }

  StatusOr<std::string> RequiredString(std::string_view path) const {
    DPA_ASSIGN_OR_RETURN(std::optional<std::string> v, String(path));
    if (!v) return InvalidArgumentError(Where(path) + " is missing.");
    return *v;
  }

  std::string Where(std::string_view path) const {
    return std::string(uri_) + " " + std::string(path);
  }

 private:
  const json& j_;
  std::string_view uri_;
};

// A BIOS attribute under its current or its pre-24.10 spelling.
StatusOr<std::optional<std::string>> BiosString(const Fields& f, std::string_view key,
                                                std::string_view old_key) {
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> now,
                       f.String("Attributes/" + std::string(key)));
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> old,
                       f.String("Attributes/" + std::string(old_key)));
  if (now && old && *now != *old) {
    return InvalidArgumentError(f.Where("Attributes") + ": " + std::string(key) + " " +
                                Quote(*now) + " and " + std::string(old_key) + " " +
                                Quote(*old) + " disagree.");
  }
  return now ? now : old;
}

// Optional string members of T read from the paths given, in order.
template <typename T>
using TextField = std::pair<std::optional<std::string> T::*, const char*>;

template <typename T>
Status ReadTexts(const Fields& f, T& out, std::initializer_list<TextField<T>> fields) {
  for (const auto& [member, path] : fields) {
    DPA_ASSIGN_OR_RETURN(out.*member, f.String(path));
  }
  return OkStatus();
}

template <typename T>
StatusOr<T> ReadTextResource(const json& j, std::string_view uri,
                             std::initializer_list<TextField<T>> fields) {
  T out;
  DPA_RETURN_IF_ERROR(ReadTexts<T>(Fields(j, uri), out, fields));
  return out;
}

}  // namespace

StatusOr<json> ParseResource(std::string_view body, std::string_view uri) {
  if (body.size() > kMaxResourceBytes) {
    return ResourceExhaustedError(std::string(uri) + " answered " +
                                  std::to_string(body.size()) + " bytes, more than " +
                                  std::to_string(kMaxResourceBytes) + ".");
  }
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(AsBytes(body), uri));
  if (!j.is_object()) {
    return InvalidArgumentError(std::string(uri) + " is not a JSON object.");
  }
  auto err = j.find("error");
  if (err != j.end()) {
    std::string code = "?", message;
    if (err->is_object()) {
      auto c = err->find("code");
      if (c != err->end() && c->is_string()) code = c->get<std::string>();
      auto m = err->find("message");
      if (m != err->end() && m->is_string()) message = m->get<std::string>();
    }
    return UnavailableError(std::string(uri) + " answered a Redfish error: " +
                            Quote(code, 96) + ": " + Quote(message, 160));
  }
  return j;
}

StatusOr<ServiceRoot> ReadServiceRoot(const json& j) {
  Fields f(j, kServiceRoot);
  ServiceRoot r;
  DPA_RETURN_IF_ERROR(ReadTexts<ServiceRoot>(f, r,
                                             {{&ServiceRoot::product, "Product"},
                                              {&ServiceRoot::vendor, "Vendor"},
                                              {&ServiceRoot::redfish_version, "RedfishVersion"}}));
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> ci,
                       f.String("ComponentIntegrity/@odata.id"));
  r.has_component_integrity = ci.has_value();
  return r;
}

StatusOr<std::vector<std::string>> ReadCollection(const json& j, std::string_view uri) {
  auto m = j.find("Members");
  if (m == j.end() || !m->is_array()) {
    return InvalidArgumentError(std::string(uri) + " Members must be an array.");
  }
  if (m->size() > 1024) {
    return ResourceExhaustedError(std::string(uri) + " lists more than 1024 members.");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < m->size(); ++i) {
    const json& e = (*m)[i];
    auto id = e.is_object() ? e.find("@odata.id") : e.end();
    if (!e.is_object() || id == e.end() || !id->is_string()) {
      return InvalidArgumentError(std::string(uri) + " Members[" + std::to_string(i) +
                                  "] has no @odata.id string.");
    }
    out.push_back(id->get<std::string>());
  }
  return out;
}

StatusOr<System> ReadSystem(const json& j) {
  return ReadTextResource<System>(j, kSystem, {{&System::serial_number, "SerialNumber"},
      {&System::model, "Model"}, {&System::power_state, "PowerState"}});
}

StatusOr<SystemOemNvidia> ReadSystemOemNvidia(const json& j) {
  return ReadTextResource<SystemOemNvidia>(j, kSystemOemNvidia,
      {{&SystemOemNvidia::mode, "Mode"}, {&SystemOemNvidia::host_rshim, "HostRshim"}});
}

StatusOr<std::map<std::string, std::string>> ReadExternalHostPrivileges(const json& j) {
  Fields f(j, kExternalHostPrivileges);
  DPA_ASSIGN_OR_RETURN(const json* e, f.At("ExternalHostPrivilege"));
  std::map<std::string, std::string> out;
  if (e == nullptr) return out;
  if (!e->is_object()) {
    return InvalidArgumentError(f.Where("ExternalHostPrivilege") + " must be an object.");
  }
  for (auto it = e->begin(); it != e->end(); ++it) {
    if (it.key().rfind("HostPriv", 0) != 0) continue;
    if (!it->is_string()) {
      return InvalidArgumentError(f.Where("ExternalHostPrivilege/" + it.key()) +
                                  " must be a string.");
    }
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

StatusOr<Bios> ReadBios(const json& j) {
  Fields f(j, kBios);
  DPA_ASSIGN_OR_RETURN(const json* attrs, f.At("Attributes"));
  if (attrs != nullptr && !attrs->is_object()) {
    return InvalidArgumentError(f.Where("Attributes") + " must be an object.");
  }
  Bios b;
  DPA_ASSIGN_OR_RETURN(b.host_privilege_level,
                       BiosString(f, "HostPrivilegeLevel", "Host Privilege Level"));
  DPA_ASSIGN_OR_RETURN(b.internal_cpu_model,
                       BiosString(f, "InternalCPUModel", "Internal CPU Model"));
  DPA_ASSIGN_OR_RETURN(b.nic_mode, BiosString(f, "NicMode", "Nic Mode"));
  DPA_ASSIGN_OR_RETURN(b.enable_optee, f.Bool("Attributes/EnableOPTEE"));
  return b;
}

StatusOr<SecureBoot> ReadSecureBoot(const json& j) {
  Fields f(j, kSecureBoot);
  SecureBoot s;
  DPA_ASSIGN_OR_RETURN(s.enable, f.Bool("SecureBootEnable"));
  DPA_RETURN_IF_ERROR(ReadTexts<SecureBoot>(f, s,
                                            {{&SecureBoot::current_boot, "SecureBootCurrentBoot"},
                                             {&SecureBoot::mode, "SecureBootMode"}}));
  return s;
}

StatusOr<Manager> ReadManager(const json& j) {
  return ReadTextResource<Manager>(j, kManager, {{&Manager::firmware_version,
      "FirmwareVersion"}, {&Manager::model, "Model"}, {&Manager::date_time, "DateTime"}});
}

StatusOr<FirmwareItem> ReadFirmwareItem(const json& j, std::string_view uri) {
  Fields f(j, uri);
  FirmwareItem item;
  DPA_ASSIGN_OR_RETURN(item.id, f.RequiredString("Id"));
  DPA_ASSIGN_OR_RETURN(item.version, f.RequiredString("Version"));
  return item;
}

StatusOr<ComponentIntegrity> ReadComponentIntegrity(const json& j, std::string_view uri) {
  Fields f(j, uri);
  ComponentIntegrity c;
  DPA_ASSIGN_OR_RETURN(c.id, f.RequiredString("Id"));
  DPA_ASSIGN_OR_RETURN(c.enabled, f.Bool("ComponentIntegrityEnabled"));
  DPA_RETURN_IF_ERROR(ReadTexts<ComponentIntegrity>(
      f, c,
      {{&ComponentIntegrity::type, "ComponentIntegrityType"},
       {&ComponentIntegrity::type_version, "ComponentIntegrityTypeVersion"}}));
  // The DMTF schema path, then the shorter one some firmware uses.
  DPA_ASSIGN_OR_RETURN(
      c.certificate_uri,
      f.String("SPDM/IdentityAuthentication/ResponderAuthentication/ComponentCertificate/"
               "@odata.id"));
  if (!c.certificate_uri) {
    DPA_ASSIGN_OR_RETURN(
        c.certificate_uri,
        f.String("SPDM/IdentityAuthentication/ComponentCertificate/@odata.id"));
  }
  DPA_ASSIGN_OR_RETURN(
      c.measurements_action,
      f.String("Actions/#ComponentIntegrity.SPDMGetSignedMeasurements/target"));
  return c;
}

StatusOr<std::string> ReadCertificateChain(const json& j, std::string_view uri) {
  Fields f(j, uri);
  DPA_ASSIGN_OR_RETURN(std::optional<std::string> type, f.String("CertificateType"));
  if (type && *type != "PEMchain" && *type != "PEM") {
    return InvalidArgumentError(f.Where("CertificateType") + " " + Quote(*type) +
                                " is not PEMchain or PEM.");
  }
  return f.RequiredString("CertificateString");
}

StatusOr<Task> ReadTask(const json& j, std::string_view uri) {
  Fields f(j, uri);
  Task t;
  DPA_ASSIGN_OR_RETURN(t.state, f.RequiredString("TaskState"));
  DPA_ASSIGN_OR_RETURN(t.status, f.String("TaskStatus"));
  DPA_ASSIGN_OR_RETURN(const json* messages, f.At("Messages"));
  if (messages != nullptr) {
    if (!messages->is_array()) {
      return InvalidArgumentError(f.Where("Messages") + " must be an array.");
    }
    for (const json& m : *messages) {
      if (!m.is_object()) continue;
      auto args = m.find("MessageArgs");
      if (args == m.end() || !args->is_array()) continue;
      for (const json& a : *args) {
        if (a.is_string()) t.message_args.push_back(a.get<std::string>());
      }
    }
  }
  DPA_ASSIGN_OR_RETURN(const json* headers, f.At("Payload/HttpHeaders"));
  if (headers != nullptr && headers->is_array()) {
    for (const json& h : *headers) {
      if (!h.is_string()) continue;
      const std::string s = h.get<std::string>();
      constexpr std::string_view kLocation = "Location:";
      if (s.rfind(kLocation, 0) == 0) {
        size_t v = kLocation.size();
        while (v < s.size() && s[v] == ' ') ++v;
        t.location = s.substr(v);
      }
    }
  }
  return t;
}

StatusOr<SignedMeasurementsEvidence> ReadSignedMeasurements(const json& j,
                                                            std::string_view uri) {
  Fields f(j, uri);
  SignedMeasurementsEvidence e;
  DPA_ASSIGN_OR_RETURN(e.signed_measurements, f.RequiredString("SignedMeasurements"));
  DPA_ASSIGN_OR_RETURN(e.signing_algorithm, f.RequiredString("SigningAlgorithm"));
  DPA_ASSIGN_OR_RETURN(e.hashing_algorithm, f.RequiredString("HashingAlgorithm"));
  DPA_ASSIGN_OR_RETURN(e.version, f.RequiredString("Version"));
  return e;
}

}  // namespace dpuaudit::redfish
