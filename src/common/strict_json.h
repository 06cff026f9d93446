// Internal: the one place where nlohmann::json meets untrusted bytes.
//
// Guarantees: ParseStrictJson never throws; it rejects invalid UTF-8,
// trailing bytes, duplicate object keys (detected with nlohmann's parser
// callback, which sees every key before the object is built) and nesting
// deeper than `max_depth`. ObjectReader gives typed access to the members of
// one object and rejects, in Finish(), any member that was not read, so
// "unknown members are rejected" holds wherever a reader is used. Error
// messages name the JSON path ("evidence[3].sha256") and quote untrusted
// strings JSON-escaped and truncated, so no control byte reaches a log.
// Does not: interpret any value beyond its JSON type; check semantics.
#ifndef DPUAUDIT_COMMON_STRICT_JSON_H_
#define DPUAUDIT_COMMON_STRICT_JSON_H_

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::strict_json {

inline constexpr int kDefaultMaxJsonDepth = 64;

// Parses one JSON value (any type). `what` names the document in errors
// ("report payload", "JWS protected header").
StatusOr<nlohmann::json> ParseStrictJson(ByteView text, std::string_view what,
                                         int max_depth = kDefaultMaxJsonDepth);

// Dumps without throwing (invalid UTF-8 in strings is replaced, which cannot
// happen for values that came through ParseStrictJson).
std::string DumpJson(const nlohmann::json& j);

// `s` JSON-quoted, at most `max_chars` characters of it, for messages.
std::string Quote(std::string_view s, size_t max_chars = 64);

// "parent.key" / "key" when parent is empty.
std::string Join(std::string_view parent, std::string_view key);
// "parent[i]".
std::string Index(std::string_view parent, size_t i);

// Canonical padded base64 of at most `max` decoded bytes, the bound checked
// on the text length before anything is allocated: RESOURCE_EXHAUSTED
// "<path> decodes to more than N bytes.", or the decoder's error prefixed
// with `path`.
StatusOr<Bytes> DecodeBase64Bounded(const std::string& b64, size_t max,
                                    const std::string& path);

// Typed, tracked access to the members of one JSON object.
class ObjectReader {
 public:
  // INVALID_ARGUMENT unless `j` is an object. `path` is "" for the root.
  static StatusOr<ObjectReader> New(const nlohmann::json& j, std::string path);

  bool Has(std::string_view key) const;
  const std::string& path() const { return path_; }
  std::string PathOf(std::string_view key) const { return Join(path_, key); }

  // Required members. Errors: "<path> is missing." / "<path> must be a
  // string." etc.
  StatusOr<std::string> String(std::string_view key);
  StatusOr<int64_t> Int64(std::string_view key);
  StatusOr<bool> Bool(std::string_view key);
  StatusOr<const nlohmann::json*> Object(std::string_view key);
  StatusOr<const nlohmann::json*> Array(std::string_view key);
  // Optional members: absent -> nullopt-like result (OK with `present`
  // false). A present member of the wrong type is an error.
  StatusOr<std::string> OptionalString(std::string_view key, bool* present);
  // A required member of any type (null included).
  StatusOr<const nlohmann::json*> Any(std::string_view key) { return Get(key); }

  // Marks a member as known without reading it.
  void Skip(std::string_view key);

  // INVALID_ARGUMENT naming the first member that was never read.
  Status Finish() const;

 private:
  ObjectReader(const nlohmann::json* j, std::string path)
      : j_(j), path_(std::move(path)) {}
  StatusOr<const nlohmann::json*> Get(std::string_view key);

  const nlohmann::json* j_;
  std::string path_;
  std::set<std::string, std::less<>> seen_;
};

// "Exactly these members" for objects read without an ObjectReader.
// INVALID_ARGUMENT "<path> must be an object." unless `j` is one, else
// "<path> has unknown member \"k\"." (k as Quote gives it) for the first
// member, in key order, that `allowed` does not list.
Status RequireOnlyMembers(const nlohmann::json& j, std::string_view path,
                          std::initializer_list<std::string_view> allowed);
// INVALID_ARGUMENT "<path>.<k> is required." for the first of `required`,
// in the order given, that the object `j` lacks.
Status RequireMembers(const nlohmann::json& j, std::string_view path,
                      std::initializer_list<std::string_view> required);

// Reads an integer JSON value (signed or unsigned, never a float) as int64.
StatusOr<int64_t> AsInt64(const nlohmann::json& j, std::string_view path);

}  // namespace dpuaudit::strict_json

#endif  // DPUAUDIT_COMMON_STRICT_JSON_H_
