#include "common/strict_json.h"

#include <algorithm>

#include <limits>
#include <vector>

namespace dpuaudit::strict_json {
namespace {

using nlohmann::json;

std::string TypeName(const json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number_float()) return "a float";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  if (j.is_null()) return "null";
  return "an unsupported value";
}

Status WrongType(std::string_view path, std::string_view want,
                 const json& got) {
  return InvalidArgumentError(std::string(path) + " must be " +
                              std::string(want) + ", got " + TypeName(got) +
                              ".");
}

}  // namespace

StatusOr<json> ParseStrictJson(ByteView text, std::string_view what,
                               int max_depth) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  bool too_deep = false;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event,
                                   json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        if (depth > max_depth) too_deep = true;
        return !too_deep;  // false: do not build what is rejected anyway
      case json::parse_event_t::array_start:
        if (depth > max_depth) too_deep = true;
        return !too_deep;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string() &&
            !keys.back().insert(parsed.get_ref<const std::string&>()).second &&
            duplicate.empty()) {
          duplicate = parsed.get_ref<const std::string&>();
          duplicate.push_back('\0');  // marks "found" even for key ""
        }
        break;
      default:
        break;
    }
    return true;
  };
  json out;
  try {
    out = json::parse(text.begin(), text.end(), cb,
                      /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    // nlohmann's own message quotes the bytes it read: only its kind is used.
    std::string_view detail = e.what();
    std::string kind;
    if (detail.find("UTF-8") != std::string_view::npos) {
      kind = ": a string is not valid UTF-8";
    } else if (detail.find("surrogate") != std::string_view::npos) {
      kind = ": a \\u escape is an unpaired UTF-16 surrogate (not UTF-8)";
    }
    return InvalidArgumentError(std::string(what) +
                                " is not valid JSON (error at byte " +
                                std::to_string(e.byte) + ")" + kind + ".");
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string(what) + " is not valid JSON.");
  } catch (const std::exception&) {
    return InternalError(std::string(what) + ": JSON parser failed.");
  }
  if (too_deep) {
    return InvalidArgumentError(std::string(what) + " nests deeper than " +
                                std::to_string(max_depth) + " levels.");
  }
  if (!duplicate.empty()) {
    duplicate.pop_back();
    return InvalidArgumentError(std::string(what) + " has duplicate key " +
                                Quote(duplicate) + ".");
  }
  return out;
}

std::string DumpJson(const json& j) {
  try {
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
  } catch (const std::exception&) {
    return "null";  // unreachable: only allocation can fail here
  }
}

std::string Quote(std::string_view s, size_t max_chars) {
  bool cut = s.size() > max_chars;
  std::string_view head = cut ? s.substr(0, max_chars) : s;
  std::string q = DumpJson(json(std::string(head)));
  if (cut) q.insert(q.size() - 1, "...");
  return q;
}

std::string Join(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string out(parent);
  out.push_back('.');
  out.append(key);
  return out;
}

std::string Index(std::string_view parent, size_t i) {
  return std::string(parent) + "[" + std::to_string(i) + "]";
}

StatusOr<int64_t> AsInt64(const json& j, std::string_view path) {
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgumentError(std::string(path) +
                                  " is out of the int64 range.");
    }
    return static_cast<int64_t>(u);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return WrongType(path, "an integer", j);
}

StatusOr<ObjectReader> ObjectReader::New(const json& j, std::string path) {
  if (!j.is_object()) {
    return WrongType(path.empty() ? "the document" : path, "an object", j);
  }
  return ObjectReader(&j, std::move(path));
}

bool ObjectReader::Has(std::string_view key) const {
  return j_->find(std::string(key)) != j_->end();
}

void ObjectReader::Skip(std::string_view key) { seen_.emplace(key); }

StatusOr<const json*> ObjectReader::Get(std::string_view key) {
  seen_.emplace(key);
  auto it = j_->find(std::string(key));
  if (it == j_->end()) {
    return InvalidArgumentError(PathOf(key) + " is missing.");
  }
  return &*it;
}

StatusOr<std::string> ObjectReader::String(std::string_view key) {
  DPA_ASSIGN_OR_RETURN(const json* v, Get(key));
  if (!v->is_string()) return WrongType(PathOf(key), "a string", *v);
  return v->get<std::string>();
}

StatusOr<std::string> ObjectReader::OptionalString(std::string_view key,
                                                   bool* present) {
  *present = Has(key);
  if (!*present) {
    seen_.emplace(key);
    return std::string();
  }
  return String(key);
}

StatusOr<int64_t> ObjectReader::Int64(std::string_view key) {
  DPA_ASSIGN_OR_RETURN(const json* v, Get(key));
  return AsInt64(*v, PathOf(key));
}

StatusOr<bool> ObjectReader::Bool(std::string_view key) {
  DPA_ASSIGN_OR_RETURN(const json* v, Get(key));
  if (!v->is_boolean()) return WrongType(PathOf(key), "a boolean", *v);
  return v->get<bool>();
}

StatusOr<const json*> ObjectReader::Object(std::string_view key) {
  DPA_ASSIGN_OR_RETURN(const json* v, Get(key));
  if (!v->is_object()) return WrongType(PathOf(key), "an object", *v);
  return v;
}

StatusOr<const json*> ObjectReader::Array(std::string_view key) {
  DPA_ASSIGN_OR_RETURN(const json* v, Get(key));
  if (!v->is_array()) return WrongType(PathOf(key), "an array", *v);
  return v;
}

Status ObjectReader::Finish() const {
  for (auto it = j_->begin(); it != j_->end(); ++it) {
    if (seen_.find(it.key()) == seen_.end()) {
      return InvalidArgumentError(
          (path_.empty() ? std::string("the document") : path_) +
          " has unknown member " + Quote(it.key()) + ".");
    }
  }
  return OkStatus();
}

Status RequireOnlyMembers(const json& j, std::string_view path,
                          std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) {
    return InvalidArgumentError(std::string(path) + " must be an object.");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      return InvalidArgumentError(std::string(path) + " has unknown member " +
                                  Quote(it.key()) + ".");
    }
  }
  return OkStatus();
}

Status RequireMembers(const json& j, std::string_view path,
                      std::initializer_list<std::string_view> required) {
  for (std::string_view k : required) {
    if (j.find(std::string(k)) == j.end()) {
      return InvalidArgumentError(Join(path, k) + " is required.");
    }
  }
  return OkStatus();
}

StatusOr<Bytes> DecodeBase64Bounded(const std::string& b64, size_t max,
                                    const std::string& path) {
  if (b64.size() / 4 * 3 > max + 2) {
    return ResourceExhaustedError(path + " decodes to more than " +
                                  std::to_string(max) + " bytes.");
  }
  auto decoded = Base64Decode(b64);
  if (!decoded.ok()) return decoded.status().WithPrefix(path);
  if (decoded->size() > max) {
    return ResourceExhaustedError(path + " decodes to more than " +
                                  std::to_string(max) + " bytes.");
  }
  return std::move(decoded).value();
}

}  // namespace dpuaudit::strict_json
