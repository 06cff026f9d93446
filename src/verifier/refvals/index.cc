#include "verifier/refvals/index.h"

#include <optional>
#include <utility>

#include "common/crypto.h"
#include "common/strict_json.h"

namespace dpuaudit::verifier {
namespace {

using internal::Lower;
using internal::PsidMatches;

std::string Key(std::string_view component, std::string_view value) {
  std::string k(component);
  k.push_back('\n');
  k.append(value);
  return k;
}

std::string CanonicalOrSame(std::string_view model) {
  std::optional<std::string> c = CanonicalModel(model);
  return c ? *c : std::string(model);
}

}  // namespace

std::string RefIndex::ReleaseSha256(std::string_view release) const {
  auto it = release_sha256_.find(release);
  return it == release_sha256_.end() ? std::string() : it->second;
}

RefIndex::RefIndex(std::vector<RefRelease> releases)
    : releases_(std::move(releases)) {
  manifest_ = strict_json::DumpJson(RefManifestJson(releases_));
  sha256_ = Sha256Hex(AsBytes(manifest_));
  for (const RefRelease& r : releases_) {
    release_sha256_.emplace(
        r.release, Sha256Hex(AsBytes(strict_json::DumpJson(RefManifestJson({r})))));
  }
  auto add = [](std::map<std::string, std::vector<size_t>, std::less<>>& m,
                std::string key, size_t i) {
    std::vector<size_t>& v = m[std::move(key)];
    if (v.empty() || v.back() != i) v.push_back(i);
  };
  for (size_t i = 0; i < releases_.size(); ++i) {
    by_label_.emplace(releases_[i].release, i);  // the first of a label wins
    for (const RefValue& v : releases_[i].values) {
      if (!v.version.empty()) add(by_version_, Key(v.component, v.version), i);
      if (!v.sha384.empty()) add(by_digest_, Key(v.component, v.sha384), i);
      if (!v.sha256.empty()) add(by_digest_, Key(v.component, v.sha256), i);
      // SPDM measurements may be SHA-512 digests, named by a sha512 alone.
      if (v.sha384.empty() && !v.sha512.empty()) add(by_digest_, Key(v.component, v.sha512), i);
    }
  }
}

std::vector<const RefRelease*> RefIndex::FindVersion(
    std::string_view model, std::string_view psid, std::string_view component,
    std::string_view version) const {
  std::vector<const RefRelease*> out;
  auto it = by_version_.find(Key(component, version));
  if (it == by_version_.end()) return out;
  std::string m = CanonicalOrSame(model);
  for (size_t i : it->second) {
    const RefRelease& r = releases_[i];
    if (r.model == m && PsidMatches(r, psid)) out.push_back(&r);
  }
  return out;
}

std::vector<const RefRelease*> RefIndex::FindDigest(
    std::string_view model, std::string_view psid, std::string_view component,
    std::string_view sha384) const {
  std::vector<const RefRelease*> out;
  auto it = by_digest_.find(Key(component, Lower(sha384)));
  if (it == by_digest_.end()) return out;
  std::string m = CanonicalOrSame(model);
  for (size_t i : it->second) {
    const RefRelease& r = releases_[i];
    if (r.model == m && PsidMatches(r, psid)) out.push_back(&r);
  }
  return out;
}

const RefRelease* RefIndex::Find(std::string_view release) const {
  auto it = by_label_.find(release);
  return it == by_label_.end() ? nullptr : &releases_[it->second];
}

}  // namespace dpuaudit::verifier
