// WriteRecording: evidence -> recorded-device folder
// (docs/architecture.md#recorded-device).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common/files.h"
#include "device/evidence.h"
#include "device/posix_util.h"
#include "device/recorded.h"

namespace dpuaudit::device {
namespace {

namespace fs = std::filesystem;

constexpr mode_t kFileMode = 0644;
constexpr size_t kMaxNameChars = 60;

Status MakeDirs(const std::string& path, const std::string& what) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) {
    return InvalidArgumentError("cannot create directory for " + what + " (" +
                                ec.message() +
                                "); does it conflict with "
                                "another evidence entry?");
  }
  return OkStatus();
}

// "mlxprivhost.query@/dev/mst/mt41692_pciconf0" ->
// "mlxprivhost.query_dev_mst_mt41692_pciconf0"-like, safe as a file name.
std::string SanitiseName(const std::string& id) {
  std::string out;
  for (char c : id) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    out += keep ? c : '_';
    if (out.size() == kMaxNameChars) break;
  }
  return out;
}

std::string Counter(size_t n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%02zu", n);
  return buf;
}

Status CheckEntryName(const std::string& name, const std::string& dir) {
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    return InvalidArgumentError("listing of " + dir +
                                " has an invalid entry name \"" + name + "\".");
  }
  return OkStatus();
}

std::vector<std::string> SplitNames(const Bytes& raw) {
  std::vector<std::string> names;
  std::string s = ToString(raw);
  if (s.empty()) return names;
  size_t start = 0;
  while (true) {
    size_t nl = s.find('\n', start);
    names.push_back(s.substr(
        start, nl == std::string::npos ? std::string::npos : nl - start));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return names;
}

// out_dir must be absent (it is created, not its parents) or an empty
// directory.
Status PrepareOutDir(const std::string& out_dir) {
  struct stat st;
  if (::lstat(out_dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return internal::ErrnoStatus("checking " + out_dir, errno);
    }
    if (::mkdir(out_dir.c_str(), 0755) != 0) {
      return internal::ErrnoStatus("creating " + out_dir, errno);
    }
    return OkStatus();
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(out_dir + " exists and is not a directory.");
  }
  DPA_ASSIGN_OR_RETURN(std::vector<std::string> names,
                       internal::ListDirectory(out_dir));
  if (!names.empty()) {
    return FailedPreconditionError(out_dir + " exists and is not empty.");
  }
  return OkStatus();
}

}  // namespace

Status WriteRecording(const std::vector<Evidence>& evidence,
                      const std::string& out_dir) {
  // Same validation as the verifier applies (unique, consistent ids; valid
  // paths and exit codes) before anything touches the disk.
  {
    auto check = NewEvidenceDeviceSource(evidence);
    if (!check.ok()) return check.status();
  }
  std::vector<RecordedCommand> commands;
  std::vector<std::pair<std::string, const Bytes*>> outputs;  // rel -> bytes
  for (const Evidence& e : evidence) {
    if (e.kind != EvidenceKind::kCommand) continue;
    std::string stem =
        "out/" + Counter(commands.size() + 1) + "-" + SanitiseName(e.id);
    RecordedCommand c;
    c.argv = e.argv;
    c.stdout_path = stem + ".txt";
    outputs.emplace_back(c.stdout_path, &e.raw);
    if (!e.stderr_raw.empty()) {
      c.stderr_path = stem + ".stderr.txt";
      outputs.emplace_back(c.stderr_path, &e.stderr_raw);
    }
    c.exit_code = e.exit_code;
    c.timed_out = e.timed_out;
    c.truncated = e.truncated;
    commands.push_back(std::move(c));
  }
  DPA_ASSIGN_OR_RETURN(std::string json, SerializeCommandsJson(commands));
  for (const Evidence& e : evidence) {
    if (e.kind != EvidenceKind::kDir || e.exit_code != 0) continue;
    for (const std::string& name : SplitNames(e.raw)) {
      DPA_RETURN_IF_ERROR(CheckEntryName(name, e.path));
    }
  }

  DPA_RETURN_IF_ERROR(PrepareOutDir(out_dir));
  const std::string fs_root = out_dir + "/fs";
  DPA_RETURN_IF_ERROR(MakeDirs(fs_root, "fs/"));
  DPA_RETURN_IF_ERROR(MakeDirs(out_dir + "/out", "out/"));

  // Directories first, then files, then a placeholder for every listed
  // entry that nothing else created.
  for (const Evidence& e : evidence) {
    if (e.kind == EvidenceKind::kDir && e.exit_code == 0) {
      DPA_RETURN_IF_ERROR(MakeDirs(fs_root + e.path, e.id));
    }
  }
  for (const Evidence& e : evidence) {
    if (e.kind != EvidenceKind::kFile || e.exit_code != 0) continue;
    const std::string host = fs_root + e.path;
    DPA_RETURN_IF_ERROR(MakeDirs(fs::path(host).parent_path().string(), e.id));
    DPA_RETURN_IF_ERROR(WriteNewFile(host, e.raw, kFileMode));
  }
  for (const Evidence& e : evidence) {
    if (e.kind != EvidenceKind::kDir || e.exit_code != 0) continue;
    const std::string dir = e.path == "/" ? fs_root : fs_root + e.path;
    for (const std::string& name : SplitNames(e.raw)) {
      const std::string host = dir + "/" + name;
      struct stat st;
      if (::lstat(host.c_str(), &st) == 0) continue;
      DPA_RETURN_IF_ERROR(WriteNewFile(host, {}, kFileMode));
    }
  }
  for (const auto& [rel, bytes] : outputs) {
    DPA_RETURN_IF_ERROR(WriteNewFile(out_dir + "/" + rel, *bytes, kFileMode));
  }
  return WriteNewFile(out_dir + "/commands.json", AsBytes(json), kFileMode);
}

Status CopyStreamsIntoRecording(const DeviceSource& source,
                                const std::vector<std::string>& paths,
                                const std::string& out_dir) {
  const std::string fs_root = out_dir + "/fs";
  for (const std::string& path : paths) {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
    StatusOr<std::unique_ptr<ByteStream>> in = source.OpenStream(path);
    if (!in.ok()) {
      // What the agent could not open it could not measure either; the
      // recording then lacks it, exactly as the device did.
      if (in.status().code() == StatusCode::kNotFound) continue;
      return in.status().WithPrefix("recording " + path);
    }
    const std::string host = fs_root + path;
    DPA_RETURN_IF_ERROR(MakeDirs(fs::path(host).parent_path().string(), path));
    const std::string tmp = host + ".partial";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return UnavailableError("create " + tmp + ": " + std::strerror(errno));
    std::vector<uint8_t> buf(1 << 20);
    Status status = OkStatus();
    for (;;) {
      StatusOr<size_t> n = (*in)->Read(buf.data(), buf.size());
      if (!n.ok()) {
        status = n.status();
        break;
      }
      if (*n == 0) break;
      size_t done = 0;
      while (done < *n) {
        ssize_t w = ::write(fd, buf.data() + done, *n - done);
        if (w < 0) {
          if (errno == EINTR) continue;
          status = UnavailableError("write " + tmp + ": " + std::strerror(errno));
          break;
        }
        done += static_cast<size_t>(w);
      }
      if (!status.ok()) break;
    }
    if (::close(fd) != 0 && status.ok()) {
      status = UnavailableError("close " + tmp + ": " + std::strerror(errno));
    }
    if (status.ok() && ::rename(tmp.c_str(), host.c_str()) != 0) {
      status = UnavailableError("rename " + tmp + ": " + std::strerror(errno));
    }
    if (!status.ok()) {
      ::unlink(tmp.c_str());
      return status;
    }
  }
  return OkStatus();
}

}  // namespace dpuaudit::device
