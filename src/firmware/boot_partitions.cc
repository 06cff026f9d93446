// `mlxbf-bootctl` parsing, boot-partition measurement and their JSON form
// (boot_partitions.h). nlohmann exceptions are caught here and never leave
// this file.
#include "firmware/boot_partitions.h"

#include <exception>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "common/crypto.h"
#include "common/digest.h"
#include "common/strict_json.h"
#include "common/text_lines.h"
#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "device/run_tool.h"

namespace dpuaudit::firmware {
namespace {

using nlohmann::json;

constexpr std::string_view kWhat = "mlxbf-bootctl output";
constexpr std::string_view kJsonPath = "partitions";
constexpr size_t kMaxItems = 2;
constexpr size_t kDrainBufferBytes = 1 << 20;

bool IsBootPartition(std::string_view path) {
  return path == device::kBootPartition0 || path == device::kBootPartition1;
}

// A status's message, never empty (the JSON form requires one).
std::string Reason(const Status& s, std::string_view if_ok) {
  if (s.ok()) return std::string(if_ok);
  return s.message().empty() ? s.ToString() : s.message();
}

// ---- whole-partition SHA-256 in the parser's pass ----

// Passes reads through, hashing and counting every byte that goes by.
class HashingByteStream final : public ByteStream {
 public:
  explicit HashingByteStream(ByteStream& inner)
      : inner_(inner), hashing_("hashing " + inner.Name()) {
    StatusOr<MultiDigest> d = MultiDigest::New({DigestAlg::kSha256}, hashing_);
    if (d.ok()) {
      digest_.emplace(std::move(d).value());
      status_ = digest_->Start(hashing_);
    } else {
      status_ = d.status();
    }
  }
  StatusOr<size_t> Read(uint8_t* out, size_t max) override {
    DPA_RETURN_IF_ERROR(status_);
    DPA_ASSIGN_OR_RETURN(size_t n, inner_.Read(out, max));
    if (n > max) {
      return InternalError(inner_.Name() + " returned more than was asked.");
    }
    status_ = digest_->Update(ByteView(out, n), hashing_);
    DPA_RETURN_IF_ERROR(status_);
    bytes_ += n;
    return n;
  }
  int64_t SizeHint() const override { return inner_.SizeHint(); }
  std::string Name() const override { return inner_.Name(); }

  uint64_t bytes() const { return bytes_; }
  // Lower-case hex SHA-256 of everything read; "" if hashing failed.
  std::string Finish() {
    if (!status_.ok()) return "";
    status_ = FailedPreconditionError(hashing_ + ": already finished.");
    StatusOr<Bytes> d = digest_->Finish(0, hashing_);
    return d.ok() ? HexEncode(*d) : "";
  }

 private:
  ByteStream& inner_;
  const std::string hashing_;
  std::optional<MultiDigest> digest_;
  Status status_;
  uint64_t bytes_ = 0;
};

// Reads the rest of `in` (bounded buffer), so that the digest covers the
// whole partition even when it holds no valid boot stream.
Status Drain(HashingByteStream& in, uint64_t max_total) {
  auto buf = std::make_unique<uint8_t[]>(kDrainBufferBytes);
  for (;;) {
    DPA_ASSIGN_OR_RETURN(size_t n, in.Read(buf.get(), kDrainBufferBytes));
    if (n == 0) return OkStatus();
    if (in.bytes() > max_total) {
      return ResourceExhaustedError(in.Name() + " is larger than " +
                                    std::to_string(max_total) + " bytes.");
    }
  }
}

PartitionMeasurement MeasurePartition(const device::DeviceSource& source,
                                      const std::string& path) {
  PartitionMeasurement m;
  m.path = path;
  auto stream = source.OpenStream(path);
  if (!stream.ok()) {
    m.status = stream.status();
    return m;
  }
  HashingByteStream in(**stream);
  const bluefield::BfbLimits limits;
  auto layout = bluefield::ParseBfb(in, limits);
  bool read_whole = layout.ok();
  if (!layout.ok()) {
    m.status = layout.status().WithPrefix(path);
    // A partition without a valid stream is still measured as a whole,
    // unless reading it is what failed.
    if (layout.status().code() == StatusCode::kInvalidArgument) {
      read_whole = Drain(in, limits.max_total_bytes).ok();
    }
  }
  m.size = in.bytes();
  if (read_whole) m.sha256 = in.Finish();
  if (layout.ok()) {
    if (m.sha256.empty()) {
      m.status = InternalError(path + ": hashing the partition failed.");
    } else {
      m.layout = std::move(layout).value();
    }
  }
  return m;
}

// ---- strict JSON reading ----

Status JsonError(const std::string& path, const std::string& what) {
  return InvalidArgumentError(path + " " + what + ".");
}

StatusOr<std::string> GetString(const json& j, const std::string& path) {
  if (!j.is_string()) return JsonError(path, "must be a string");
  return j.get<std::string>();
}

StatusOr<PartitionMeasurement> ItemFromJson(const json& j,
                                            const std::string& path) {
  DPA_RETURN_IF_ERROR(strict_json::RequireOnlyMembers(
      j, path, {"path", "size", "sha256", "error", "layout"}));
  DPA_RETURN_IF_ERROR(
      strict_json::RequireMembers(j, path, {"path", "sha256", "size"}));
  PartitionMeasurement m;
  DPA_ASSIGN_OR_RETURN(m.path, GetString(j["path"], path + ".path"));
  if (!IsBootPartition(m.path)) {
    return JsonError(path + ".path", "\"" + m.path + "\" is not " +
                                         device::kBootPartition0 + " or " +
                                         device::kBootPartition1);
  }
  const json& size = j["size"];
  if (size.is_number_unsigned()) {
    m.size = size.get<uint64_t>();
  } else if (size.is_number_integer() && size.get<int64_t>() >= 0) {
    m.size = static_cast<uint64_t>(size.get<int64_t>());
  } else {
    return JsonError(path + ".size", "must be a non-negative integer");
  }
  DPA_ASSIGN_OR_RETURN(m.sha256, GetString(j["sha256"], path + ".sha256"));
  if (!m.sha256.empty() && !IsLowerHexOfLength(m.sha256, 64)) {
    return JsonError(path + ".sha256", "is not 64 lower-case hex digits");
  }
  const bool has_error = j.contains("error");
  const bool has_layout = j.contains("layout");
  if (has_error == has_layout) {
    return JsonError(path, "must have exactly one of \"error\" and \"layout\"");
  }
  if (has_error) {
    DPA_ASSIGN_OR_RETURN(std::string error,
                         GetString(j["error"], path + ".error"));
    if (error.empty()) return JsonError(path + ".error", "must not be empty");
    m.status = UnavailableError(std::move(error));
    return m;
  }
  if (m.sha256.empty()) {
    return JsonError(path + ".sha256", "must be set for a measured partition");
  }
  DPA_ASSIGN_OR_RETURN(bluefield::BfbLayout layout,
                       bluefield::BfbLayoutFromJson(j["layout"], path + ".layout"));
  if (layout.total_bytes != m.size) {
    return JsonError(path + ".size", std::to_string(m.size) +
                                         " is not layout.total_bytes " +
                                         std::to_string(layout.total_bytes));
  }
  m.layout = std::move(layout);
  return m;
}

StatusOr<BootPartitions> PartitionsFromJson(const json& j) {
  const std::string path(kJsonPath);
  DPA_RETURN_IF_ERROR(strict_json::RequireOnlyMembers(
      j, path, {"primary", "bootctl_error", "items"}));
  DPA_RETURN_IF_ERROR(strict_json::RequireMembers(j, path, {"items", "primary"}));
  BootPartitions p;
  p.bootctl_evidence_id =
      device::EvidenceIdForCommand(device::MlxbfBootctlArgv());
  const json& primary = j["primary"];
  if (primary.is_string()) {
    p.primary = primary.get<std::string>();
    if (!IsBootPartition(p.primary)) {
      return JsonError(path + ".primary", "\"" + p.primary + "\" is not " +
                                              device::kBootPartition0 + " or " +
                                              device::kBootPartition1);
    }
    if (j.contains("bootctl_error")) {
      return JsonError(path + ".bootctl_error",
                       "must be absent when primary is known");
    }
  } else if (primary.is_null()) {
    if (!j.contains("bootctl_error")) {
      return JsonError(path + ".bootctl_error",
                       "is required when primary is null");
    }
    DPA_ASSIGN_OR_RETURN(std::string error, GetString(j["bootctl_error"],
                                                      path + ".bootctl_error"));
    if (error.empty()) {
      return JsonError(path + ".bootctl_error", "must not be empty");
    }
    p.bootctl_status = UnavailableError(std::move(error));
  } else {
    return JsonError(path + ".primary", "must be a string or null");
  }
  const json& items = j["items"];
  if (!items.is_array()) return JsonError(path + ".items", "must be an array");
  if (items.size() > kMaxItems) {
    return JsonError(path + ".items",
                     "holds more than " + std::to_string(kMaxItems) + " items");
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string at = path + ".items[" + std::to_string(i) + "]";
    DPA_ASSIGN_OR_RETURN(PartitionMeasurement m, ItemFromJson(items[i], at));
    for (const PartitionMeasurement& seen : p.partitions) {
      if (seen.path == m.path) {
        return JsonError(at + ".path", "\"" + m.path + "\" is repeated");
      }
    }
    p.partitions.push_back(std::move(m));
  }
  return p;
}

}  // namespace

StatusOr<BootctlInfo> ParseMlxbfBootctl(std::string_view text) {
  DPA_ASSIGN_OR_RETURN(std::vector<text::Line> lines,
                       text::SplitLines(text, kWhat));
  BootctlInfo info;
  std::set<std::string> seen;
  for (const text::Line& line : lines) {
    if (text::IsBlank(line.text)) continue;
    const size_t sep = line.text.find(": ");
    if (sep == std::string_view::npos) {
      return text::LineError(kWhat, line.number, "expected 'key: value', got '" +
                                        text::Excerpt(line.text) + "'.");
    }
    const std::string key(text::Trim(line.text.substr(0, sep)));
    const std::string value(text::Trim(line.text.substr(sep + 2)));
    if (key.empty()) {
      return text::LineError(kWhat, line.number,
                       "empty key in '" + text::Excerpt(line.text) + "'.");
    }
    if (!seen.insert(key).second) {
      return text::LineError(kWhat, line.number, "'" + key + "' repeated.");
    }
    if (key == "primary" || key == "backup") {
      if (!IsBootPartition(value)) {
        return text::LineError(kWhat, line.number,
                         "'" + key + "' is '" + text::Excerpt(value) +
                             "', expected " + device::kBootPartition0 + " or " +
                             device::kBootPartition1 + ".");
      }
      (key == "primary" ? info.primary : info.backup) = value;
    } else if (key == "lifecycle state") {
      info.lifecycle_state = value;
    } else {
      info.other.emplace_back(key, value);
    }
  }
  if (info.primary.empty()) {
    return InvalidArgumentError(std::string(kWhat) + ": no 'primary' line.");
  }
  if (info.backup.empty()) {
    return InvalidArgumentError(std::string(kWhat) + ": no 'backup' line.");
  }
  if (info.primary == info.backup) {
    return InvalidArgumentError(std::string(kWhat) + ": primary and backup " +
                                "are both " + info.primary + ".");
  }
  return info;
}

const PartitionMeasurement* BootPartitions::Primary() const {
  if (primary.empty()) return nullptr;
  for (const PartitionMeasurement& m : partitions) {
    if (m.path == primary) return m.status.ok() ? &m : nullptr;
  }
  return nullptr;
}

BootPartitions MeasureBootPartitions(const device::DeviceSource& source) {
  BootPartitions p;
  const device::Argv argv = device::MlxbfBootctlArgv();
  p.bootctl_evidence_id = device::EvidenceIdForCommand(argv);
  StatusOr<std::string> out = device::RunTool(source, argv);
  if (!out.ok()) {
    p.bootctl_status = out.status();
  } else {
    StatusOr<BootctlInfo> info = ParseMlxbfBootctl(*out);
    if (info.ok()) {
      p.primary = info->primary;
    } else {
      p.bootctl_status = info.status();
    }
  }
  for (const char* path : {device::kBootPartition0, device::kBootPartition1}) {
    p.partitions.push_back(MeasurePartition(source, path));
  }
  return p;
}

nlohmann::json BootPartitionsJson(const BootPartitions& p) {
  json j = json::object();
  if (p.primary.empty()) {
    j["primary"] = nullptr;
    j["bootctl_error"] =
        Reason(p.bootctl_status, "mlxbf-bootctl named no primary.");
  } else {
    j["primary"] = p.primary;
  }
  json items = json::array();
  for (const PartitionMeasurement& m : p.partitions) {
    json item = {{"path", m.path}, {"size", m.size}, {"sha256", m.sha256}};
    if (m.status.ok() && m.layout) {
      item["layout"] = bluefield::BfbLayoutToJson(*m.layout);
    } else {
      item["error"] = Reason(m.status, "not measured.");
    }
    items.push_back(std::move(item));
  }
  j["items"] = std::move(items);
  return j;
}

StatusOr<BootPartitions> ParseBootPartitionsJson(const nlohmann::json& j) {
  try {
    return PartitionsFromJson(j);
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string(kJsonPath) +
                                " could not be read (" + e.what() + ").");
  }
}

}  // namespace dpuaudit::firmware
