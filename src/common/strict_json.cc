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

namespace {

// Builds the DOM straight from nlohmann's SAX events (no per-object key set,
// no callback parser's keep stacks): a key that the object already holds is
// the duplicate, found by the insertion itself; strings are moved, not
// copied, into the tree. Behaves as nlohmann's callback parser did before
// (kept for the same messages): the first duplicate in document order is
// recorded and parsing goes on (the last value wins in the discarded tree); a
// container opened deeper than max_depth is recorded and skipped, with its
// contents, while the rest is still checked; a syntax error wins over both.
class StrictDomBuilder {
 public:
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  explicit StrictDomBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return Value(json(nullptr)); }
  bool boolean(bool v) { return Value(json(v)); }
  bool number_integer(json::number_integer_t v) { return Value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return Value(json(v)); }
  bool number_float(json::number_float_t v, const string_t&) { return Value(json(v)); }
  bool string(string_t& v) { return Value(json(std::move(v))); }
  bool binary(binary_t& v) { return Value(json::binary(std::move(v))); }

  bool start_object(std::size_t) { return Open(json::value_t::object); }
  bool start_array(std::size_t) { return Open(json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(string_t& k) {
    if (skipping_ > 0) return true;
    auto& obj = stack_.back()->get_ref<json::object_t&>();
    auto [it, inserted] = obj.try_emplace(std::move(k));
    if (!inserted && !has_duplicate_) {
      has_duplicate_ = true;
      duplicate_ = it->first;  // k was not moved from: try_emplace kept it
    }
    slot_ = &it->second;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) {
    failed_ = true;
    error_byte_ = position;
    if (const auto* pe = dynamic_cast<const json::parse_error*>(&ex)) {
      error_byte_ = pe->byte;
    }
    error_detail_ = ex.what();
    return false;
  }

  json& root() { return root_; }
  bool failed() const { return failed_; }
  std::size_t error_byte() const { return error_byte_; }
  const std::string& error_detail() const { return error_detail_; }
  bool too_deep() const { return too_deep_; }
  bool has_duplicate() const { return has_duplicate_; }
  const std::string& duplicate() const { return duplicate_; }

 private:
  // Where the next value goes: the root, the end of the open array, or the
  // slot its key made in the open object.
  json* Place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json* top = stack_.back();
    if (top->is_array()) {
      auto& arr = top->get_ref<json::array_t&>();
      arr.push_back(std::move(v));
      return &arr.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool Value(json&& v) {
    if (skipping_ == 0) Place(std::move(v));
    return true;
  }
  bool Open(json::value_t type) {
    const int depth = static_cast<int>(stack_.size()) + skipping_;
    if (skipping_ > 0 || depth > max_depth_) {
      if (depth > max_depth_) too_deep_ = true;
      ++skipping_;
      return true;
    }
    stack_.push_back(Place(json(type)));
    return true;
  }
  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
    } else {
      stack_.pop_back();
    }
    return true;
  }

  const int max_depth_;
  json root_;
  std::vector<json*> stack_;  // the open containers that are built
  json* slot_ = nullptr;
  int skipping_ = 0;          // open containers below a too-deep one
  bool too_deep_ = false;
  bool has_duplicate_ = false;
  std::string duplicate_;
  bool failed_ = false;
  std::size_t error_byte_ = 0;
  std::string error_detail_;
};

}  // namespace

StatusOr<json> ParseStrictJson(ByteView text, std::string_view what,
                               int max_depth) {
  StrictDomBuilder sax(max_depth);
  try {
    json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json,
                    /*strict=*/true, /*ignore_comments=*/false);
  } catch (const std::exception&) {
    return InternalError(std::string(what) + ": JSON parser failed.");
  }
  if (sax.failed()) {
    // nlohmann's own message quotes the bytes it read: only its kind is used.
    std::string_view detail = sax.error_detail();
    std::string kind;
    if (detail.find("UTF-8") != std::string_view::npos) {
      kind = ": a string is not valid UTF-8";
    } else if (detail.find("surrogate") != std::string_view::npos) {
      kind = ": a \\u escape is an unpaired UTF-16 surrogate (not UTF-8)";
    }
    return InvalidArgumentError(std::string(what) +
                                " is not valid JSON (error at byte " +
                                std::to_string(sax.error_byte()) + ")" + kind + ".");
  }
  if (sax.too_deep()) {
    return InvalidArgumentError(std::string(what) + " nests deeper than " +
                                std::to_string(max_depth) + " levels.");
  }
  if (sax.has_duplicate()) {
    return InvalidArgumentError(std::string(what) + " has duplicate key " +
                                Quote(sax.duplicate()) + ".");
  }
  return std::move(sax.root());
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
