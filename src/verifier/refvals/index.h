// Reference values, the matching index: releases looked up by label, and by
// (component, version) or (component, digest) for one model and PSID.
//
// Guarantees: immutable once built, so cheap to share and query.
// FindVersion and FindDigest keep only releases of the model (CanonicalModel
// of the query when it has one, else the query as given) that list no PSID
// or the query's PSID; each release appears at most once, in the order the
// releases were given; FindDigest lower-cases the queried digest. Find
// returns the first release of a label.
// Does not: validate the releases (ParseRefManifest / ValidateRelease do),
// or rank the matches by state (verifier/refvals/appraisal.h does).
#ifndef DPUAUDIT_VERIFIER_REFVALS_INDEX_H_
#define DPUAUDIT_VERIFIER_REFVALS_INDEX_H_

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "verifier/refvals/model.h"

namespace dpuaudit::verifier {

// An index over releases for matching; cheap to query, immutable.
class RefIndex {
 public:
  RefIndex() : RefIndex(std::vector<RefRelease>{}) {}
  explicit RefIndex(std::vector<RefRelease> releases);
  const std::vector<RefRelease>& releases() const { return releases_; }
  // Releases of `model` (and matching `psid` when they list PSIDs) having a
  // value with this component and exact version / sha384.
  std::vector<const RefRelease*> FindVersion(std::string_view model,
                                             std::string_view psid,
                                             std::string_view component,
                                             std::string_view version) const;
  std::vector<const RefRelease*> FindDigest(std::string_view model,
                                            std::string_view psid,
                                            std::string_view component,
                                            std::string_view sha384) const;
  const RefRelease* Find(std::string_view release) const;

  // Collateral (issue 16 §2): the canonical manifest of every release
  // (strict_json::DumpJson(RefManifestJson(releases()))), which
  // ParseRefManifest reads back into the same index, and its SHA-256; and
  // the SHA-256 of one release's canonical manifest ("" for an unknown
  // label). Computed once, at construction.
  const std::string& manifest() const { return manifest_; }
  const std::string& sha256() const { return sha256_; }
  std::string ReleaseSha256(std::string_view release) const;

 private:
  std::vector<RefRelease> releases_;
  std::string manifest_, sha256_;
  std::map<std::string, std::string, std::less<>> release_sha256_;
  std::map<std::string, size_t, std::less<>> by_label_;
  // "<component>\n<version or sha384>" -> indices into releases_ (each
  // release once, ascending).
  std::map<std::string, std::vector<size_t>, std::less<>> by_version_;
  std::map<std::string, std::vector<size_t>, std::less<>> by_digest_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_REFVALS_INDEX_H_
