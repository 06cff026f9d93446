// Strict parsing and serialisation of commands.json (see recorded.h).
// nlohmann exceptions are caught here and never leave this file.
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "device/recorded.h"

namespace dpuaudit::device {
namespace {

using nlohmann::json;

constexpr int kMaxDepth = 8;

// Thrown by the parser callback; caught in ParseStrictJson.
struct StrictJsonError {
  std::string message;
};

// Parses UTF-8 JSON, rejecting duplicate keys and deep nesting (which
// nlohmann would otherwise accept silently).
StatusOr<json> ParseStrictJson(ByteView bytes) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto callback = [&keys](int depth, json::parse_event_t event,
                          json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxDepth) {
          throw StrictJsonError{"commands.json is nested more than " +
                                std::to_string(kMaxDepth) + " levels deep."};
        }
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() &&
            !keys.back().insert(parsed.get<std::string>()).second) {
          throw StrictJsonError{"duplicate key \"" + parsed.get<std::string>() +
                                "\"."};
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(bytes.begin(), bytes.end(), callback,
                       /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const StrictJsonError& e) {
    return InvalidArgumentError(e.message);
  } catch (const json::exception& e) {
    return InvalidArgumentError(
        std::string("commands.json is not valid JSON (") + e.what() + ").");
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("commands.json could not be "
                                            "parsed (") +
                                e.what() + ").");
  }
}

Status CheckOutputPath(const std::string& field, const std::string& path) {
  if (path.empty()) return InvalidArgumentError(field + " must not be empty.");
  if (path.find('\0') != std::string::npos) {
    return InvalidArgumentError(field + " must not contain a NUL byte.");
  }
  if (path[0] == '/') {
    return InvalidArgumentError(field + " must be a relative path, not \"" +
                                path + "\".");
  }
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string comp = path.substr(
        start, end == std::string::npos ? std::string::npos : end - start);
    if (comp == "..") {
      return InvalidArgumentError(field +
                                  " must not contain a \"..\" "
                                  "component, got \"" +
                                  path + "\".");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return OkStatus();
}

StatusOr<std::string> GetOutputPath(const json& entry, const std::string& at,
                                    const char* key) {
  const std::string field = at + "." + key;
  const json& v = entry.at(key);
  if (!v.is_string()) return InvalidArgumentError(field + " must be a string.");
  std::string path = v.get<std::string>();
  DPA_RETURN_IF_ERROR(CheckOutputPath(field, path));
  return path;
}

StatusOr<bool> GetBool(const json& entry, const std::string& at,
                       const char* key) {
  if (!entry.contains(key)) return false;
  const json& v = entry.at(key);
  if (!v.is_boolean()) {
    return InvalidArgumentError(at + "." + key + " must be a boolean.");
  }
  return v.get<bool>();
}

StatusOr<RecordedCommand> ParseEntry(const json& entry, const std::string& at) {
  if (!entry.is_object())
    return InvalidArgumentError(at + " must be an object.");
  static const std::set<std::string> kKnown = {
      "argv", "stdout", "stderr", "exit_code", "timed_out", "truncated"};
  for (const auto& item : entry.items()) {
    if (kKnown.count(item.key()) == 0) {
      return InvalidArgumentError(at + " has unknown key \"" + item.key() +
                                  "\".");
    }
  }
  for (const char* required : {"argv", "stdout", "exit_code"}) {
    if (!entry.contains(required)) {
      return InvalidArgumentError(at + "." + required + " is required.");
    }
  }
  RecordedCommand cmd;
  const json& argv = entry.at("argv");
  if (!argv.is_array()) {
    return InvalidArgumentError(at + ".argv must be an array of strings.");
  }
  if (argv.empty())
    return InvalidArgumentError(at + ".argv must not be empty.");
  for (size_t k = 0; k < argv.size(); ++k) {
    const std::string field = at + ".argv[" + std::to_string(k) + "]";
    if (!argv[k].is_string()) {
      return InvalidArgumentError(field + " must be a string.");
    }
    std::string arg = argv[k].get<std::string>();
    if (arg.find('\0') != std::string::npos) {
      return InvalidArgumentError(field + " must not contain a NUL byte.");
    }
    if (k == 0 && arg.empty()) {
      return InvalidArgumentError(field + " must not be empty.");
    }
    cmd.argv.push_back(std::move(arg));
  }
  DPA_ASSIGN_OR_RETURN(cmd.stdout_path, GetOutputPath(entry, at, "stdout"));
  if (entry.contains("stderr")) {
    DPA_ASSIGN_OR_RETURN(cmd.stderr_path, GetOutputPath(entry, at, "stderr"));
  }
  const json& code = entry.at("exit_code");
  if (!code.is_number_integer()) {
    return InvalidArgumentError(at + ".exit_code must be an integer.");
  }
  bool in_range = code.is_number_unsigned()
                      ? code.get<uint64_t>() <= 255
                      : code.get<int64_t>() >= -1 && code.get<int64_t>() <= 255;
  if (!in_range) {
    return InvalidArgumentError(at + ".exit_code " + code.dump() +
                                " is out of range [-1, 255].");
  }
  cmd.exit_code = static_cast<int>(code.get<int64_t>());
  DPA_ASSIGN_OR_RETURN(cmd.timed_out, GetBool(entry, at, "timed_out"));
  DPA_ASSIGN_OR_RETURN(cmd.truncated, GetBool(entry, at, "truncated"));
  if (cmd.timed_out != (cmd.exit_code == -1)) {
    return InvalidArgumentError(at + ".exit_code must be -1 exactly when " +
                                at + ".timed_out is true.");
  }
  return cmd;
}

StatusOr<std::vector<RecordedCommand>> ParseDocument(const json& doc) {
  if (!doc.is_object()) {
    return InvalidArgumentError("commands.json must be a JSON object.");
  }
  for (const auto& item : doc.items()) {
    if (item.key() != "commands") {
      return InvalidArgumentError("commands.json has unknown key \"" +
                                  item.key() + "\".");
    }
  }
  if (!doc.contains("commands")) {
    return InvalidArgumentError("commands is required.");
  }
  const json& list = doc.at("commands");
  if (!list.is_array())
    return InvalidArgumentError("commands must be an array.");
  std::vector<RecordedCommand> out;
  std::map<std::vector<std::string>, size_t> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "commands[" + std::to_string(i) + "]";
    DPA_ASSIGN_OR_RETURN(RecordedCommand cmd, ParseEntry(list[i], at));
    auto [it, inserted] = seen.emplace(cmd.argv, i);
    if (!inserted) {
      return InvalidArgumentError(at + ".argv duplicates commands[" +
                                  std::to_string(it->second) + "].argv.");
    }
    out.push_back(std::move(cmd));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<RecordedCommand>> ParseCommandsJson(ByteView json_bytes) {
  if (json_bytes.size() > kMaxCommandsJsonBytes) {
    return ResourceExhaustedError("commands.json is larger than " +
                                  std::to_string(kMaxCommandsJsonBytes) +
                                  " bytes.");
  }
  DPA_ASSIGN_OR_RETURN(json doc, ParseStrictJson(json_bytes));
  try {
    return ParseDocument(doc);
  } catch (const std::exception& e) {  // not expected: types are checked
    return InternalError(std::string("commands.json: ") + e.what() + ".");
  }
}

StatusOr<std::string> SerializeCommandsJson(
    const std::vector<RecordedCommand>& commands) {
  std::string text;
  try {
    json list = json::array();
    for (const RecordedCommand& c : commands) {
      json entry = json::object();
      entry["argv"] = c.argv;
      entry["stdout"] = c.stdout_path;
      if (!c.stderr_path.empty()) entry["stderr"] = c.stderr_path;
      entry["exit_code"] = c.exit_code;
      if (c.timed_out) entry["timed_out"] = true;
      if (c.truncated) entry["truncated"] = true;
      list.push_back(std::move(entry));
    }
    json doc = json::object();
    doc["commands"] = std::move(list);
    text = doc.dump(2, ' ', /*ensure_ascii=*/false,
                    json::error_handler_t::strict) +
           "\n";
  } catch (const std::exception& e) {
    return InvalidArgumentError(
        std::string("commands cannot be written as JSON (") + e.what() + ").");
  }
  // Whatever we write must read back as the same commands.
  auto parsed = ParseCommandsJson(AsBytes(text));
  if (!parsed.ok()) return parsed.status();
  if (*parsed != commands) {
    return InvalidArgumentError("commands do not survive a JSON round trip.");
  }
  return text;
}

}  // namespace dpuaudit::device
