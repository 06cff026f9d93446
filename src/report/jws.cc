#include "report/jws.h"

#include <set>

#include "common/strict_json.h"

namespace dpuaudit::report {
namespace {

using strict_json::ObjectReader;
using strict_json::Quote;
using nlohmann::json;

// The three base64url segments of a JWS, as received.
// The signing input (protected "." payload) is kept whole, so that the
// 50 KB payload is copied once, not once per segment and again for the
// signature check.
struct RawSegments {
  std::string signing_input;  // protected_b64 "." payload_b64
  size_t dot = 0;             // where the "." is in signing_input
  std::string signature_b64;

  std::string_view protected_b64() const {
    return std::string_view(signing_input).substr(0, dot);
  }
  std::string_view payload_b64() const {
    return std::string_view(signing_input).substr(dot + 1);
  }
  void Set(std::string_view protected_part, std::string_view payload_part) {
    signing_input.reserve(protected_part.size() + 1 + payload_part.size());
    signing_input.assign(protected_part);
    dot = signing_input.size();
    signing_input.push_back('.');
    signing_input.append(payload_part);
  }
};

// Header members that would let the message choose its own key, or change
// how the payload or signature is processed (RFC 7515 §4.1.3-4.1.6, §4.1.11;
// RFC 7797 §3; RFC 7516 §4.1.3).
constexpr std::string_view kForbiddenHeaders[] = {"crit", "b64", "zip", "jwk",
                                                  "jku",  "x5u", "x5c"};

Status CheckSize(std::string_view jws, size_t max_bytes) {
  if (jws.size() > max_bytes) {
    return ResourceExhaustedError("JWS of " + std::to_string(jws.size()) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(max_bytes) + " bytes.");
  }
  return OkStatus();
}

StatusOr<RawSegments> SplitFlattened(std::string_view jws) {
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(
                                   AsBytes(jws), "JWS JSON serialization"));
  if (j.is_object() && j.contains("signatures")) {
    return InvalidArgumentError(
        "JWS general JSON serialization (\"signatures\") is not supported; "
        "use the flattened form.");
  }
  if (j.is_object() && j.contains("header")) {
    return InvalidArgumentError(
        "JWS unprotected \"header\" is not accepted; every header parameter "
        "must be protected.");
  }
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(j, "JWS"));
  RawSegments s;
  DPA_ASSIGN_OR_RETURN(std::string protected_b64, r.String("protected"));
  DPA_ASSIGN_OR_RETURN(std::string payload_b64, r.String("payload"));
  DPA_ASSIGN_OR_RETURN(s.signature_b64, r.String("signature"));
  s.Set(protected_b64, payload_b64);
  DPA_RETURN_IF_ERROR(r.Finish());
  return s;
}

StatusOr<RawSegments> SplitCompact(std::string_view jws) {
  size_t dots = 0;
  for (char c : jws) dots += c == '.' ? 1 : 0;
  if (dots != 2) {
    return InvalidArgumentError("compact JWS must have 3 segments, got " +
                                std::to_string(dots + 1) + ".");
  }
  size_t a = jws.find('.');
  size_t b = jws.find('.', a + 1);
  RawSegments s;
  s.signing_input = std::string(jws.substr(0, b));
  s.dot = a;
  s.signature_b64 = std::string(jws.substr(b + 1));
  return s;
}

StatusOr<RawSegments> Split(std::string_view jws) {
  size_t first = jws.find_first_not_of(" \t\r\n");
  RawSegments s;
  if (first != std::string_view::npos && jws[first] == '{') {
    DPA_ASSIGN_OR_RETURN(s, SplitFlattened(jws));
  } else {
    DPA_ASSIGN_OR_RETURN(s, SplitCompact(jws));
  }
  const std::pair<std::string_view, std::string_view> named[] = {
      {"protected header", s.protected_b64()},
      {"payload", s.payload_b64()},
      {"signature", s.signature_b64}};
  for (const auto& [name, value] : named) {
    if (value.empty()) {
      return InvalidArgumentError("JWS " + std::string(name) +
                                  " segment is empty.");
    }
  }
  return s;
}

StatusOr<Bytes> DecodeSegment(std::string_view name, std::string_view b64) {
  auto decoded = Base64UrlDecode(b64);
  if (!decoded.ok()) {
    return decoded.status().WithPrefix("JWS " + std::string(name) + " segment");
  }
  return std::move(decoded).value();
}

Status CheckSegment(std::string_view name, std::string_view b64) {
  Status st = CheckBase64Url(b64);
  if (!st.ok()) return st.WithPrefix("JWS " + std::string(name) + " segment");
  return OkStatus();
}

StatusOr<UnverifiedJwsHeader> ParseHeader(std::string_view b64) {
  DPA_ASSIGN_OR_RETURN(Bytes raw, DecodeSegment("protected header", b64));
  DPA_ASSIGN_OR_RETURN(json h,
                       strict_json::ParseStrictJson(raw, "JWS protected header"));
  if (!h.is_object()) {
    return InvalidArgumentError("JWS protected header must be a JSON object.");
  }
  for (std::string_view name : kForbiddenHeaders) {
    if (h.contains(std::string(name))) {
      if (name == "crit") {
        return InvalidArgumentError(
            "JWS header \"crit\" is not supported (no extensions are "
            "understood).");
      }
      return InvalidArgumentError(
          "JWS header " + Quote(name) +
          " is not accepted: keys are pinned per node, never taken from the "
          "message, and the payload must be plain base64url.");
    }
  }
  UnverifiedJwsHeader out;
  auto str = [&h](const char* key, std::string* dst, bool required) -> Status {
    auto it = h.find(key);
    if (it == h.end()) {
      if (required) {
        return InvalidArgumentError(std::string("JWS header \"") + key +
                                    "\" is missing.");
      }
      return OkStatus();
    }
    if (!it->is_string()) {
      return InvalidArgumentError(std::string("JWS header \"") + key +
                                  "\" must be a string.");
    }
    *dst = it->get<std::string>();
    return OkStatus();
  };
  std::string cty;
  DPA_RETURN_IF_ERROR(str("alg", &out.alg, true));
  DPA_RETURN_IF_ERROR(str("kid", &out.kid, false));
  DPA_RETURN_IF_ERROR(str("typ", &out.typ, false));
  DPA_RETURN_IF_ERROR(str("cty", &cty, false));
  out.header = std::move(h);
  return out;
}

}  // namespace

StatusOr<std::string> SignCompact(ByteView payload, const Signer& signer,
                                  const JwsHeader& header) {
  if (header.alg != kAlgEs256) {
    return InvalidArgumentError("JWS alg " + Quote(header.alg) +
                                " is not supported; only ES256 is.");
  }
  json h = json::object();
  h["alg"] = header.alg;
  if (!header.kid.empty()) h["kid"] = header.kid;
  if (!header.typ.empty()) h["typ"] = header.typ;
  std::string input = Base64UrlEncode(AsBytes(strict_json::DumpJson(h)));
  input.push_back('.');
  input += Base64UrlEncode(payload);
  DPA_ASSIGN_OR_RETURN(Bytes sig, signer.Sign(AsBytes(input)));
  if (sig.size() != kEs256SignatureBytes) {
    return InternalError("ES256 signer returned " + std::to_string(sig.size()) +
                         " bytes, expected 64.");
  }
  input.push_back('.');
  input += Base64UrlEncode(sig);
  return input;
}

StatusOr<std::string> CompactToFlattened(std::string_view compact) {
  DPA_ASSIGN_OR_RETURN(RawSegments s, SplitCompact(compact));
  json j = {{"protected", s.protected_b64()},
            {"payload", s.payload_b64()},
            {"signature", s.signature_b64}};
  return strict_json::DumpJson(j);
}

StatusOr<UnverifiedJwsHeader> PeekUnverifiedHeader(std::string_view jws,
                                                   size_t max_bytes) {
  DPA_RETURN_IF_ERROR(CheckSize(jws, max_bytes));
  DPA_ASSIGN_OR_RETURN(RawSegments s, Split(jws));
  // Shape checks of the other segments, so that routing never succeeds on
  // something VerifyJws would reject as malformed.
  // Checked, not decoded: the payload is decoded once, by VerifyJws.
  DPA_RETURN_IF_ERROR(CheckSegment("payload", s.payload_b64()));
  DPA_RETURN_IF_ERROR(CheckSegment("signature", s.signature_b64));
  return ParseHeader(s.protected_b64());
}

StatusOr<VerifiedJws> VerifyJws(std::string_view jws, const Verifier& verifier,
                                std::string_view pinned_alg, size_t max_bytes) {
  if (pinned_alg != kAlgEs256) {
    return InvalidArgumentError("pinned alg " + Quote(pinned_alg) +
                                " is not supported; only ES256 is.");
  }
  // 1. Size, before anything is parsed or copied.
  DPA_RETURN_IF_ERROR(CheckSize(jws, max_bytes));
  // 2. Shape.
  DPA_ASSIGN_OR_RETURN(RawSegments s, Split(jws));
  DPA_ASSIGN_OR_RETURN(Bytes payload, DecodeSegment("payload", s.payload_b64()));
  DPA_ASSIGN_OR_RETURN(Bytes sig, DecodeSegment("signature", s.signature_b64));
  // 3. Protected header.
  DPA_ASSIGN_OR_RETURN(UnverifiedJwsHeader h, ParseHeader(s.protected_b64()));
  // 4. Algorithm pinning: the header never chooses the algorithm.
  if (h.alg != pinned_alg) {
    return UnauthenticatedError("JWS alg " + Quote(h.alg) +
                                " is not the pinned " + Quote(pinned_alg) +
                                ".");
  }
  // 5. Signature length (RFC 7518 §3.4).
  if (sig.size() != kEs256SignatureBytes) {
    return UnauthenticatedError("JWS ES256 signature must be 64 bytes, got " +
                                std::to_string(sig.size()) + ".");
  }
  // 6. Signature over the exact received signing input.
  Status verified = verifier.Verify(sig, AsBytes(s.signing_input));
  if (!verified.ok() && verified.code() != StatusCode::kUnauthenticated &&
      verified.code() != StatusCode::kPermissionDenied) {
    return verified.WithPrefix("JWS signature check failed to run");
  }
  if (!verified.ok()) {
    return UnauthenticatedError(
        "JWS signature does not verify with the pinned key.");
  }
  VerifiedJws out;
  out.header_ = std::move(h.header);
  out.alg_ = std::move(h.alg);
  out.kid_ = std::move(h.kid);
  out.typ_ = std::move(h.typ);
  out.payload_ = std::move(payload);
  out.signing_input_ = std::move(s.signing_input);
  return out;
}

nlohmann::json PublicJwk(const EcPublicKey& key, const std::string& kid) {
  json j = {{"kty", "EC"},
            {"crv", "P-256"},
            {"x", Base64UrlEncode(key.x())},
            {"y", Base64UrlEncode(key.y())},
            {"alg", "ES256"},
            {"use", "sig"}};
  if (!kid.empty()) j["kid"] = kid;
  return j;
}

StatusOr<EcPublicKey> ParsePublicJwk(const nlohmann::json& jwk) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(jwk, "JWK"));
  if (r.Has("d")) {
    return InvalidArgumentError(
        "JWK contains a private key member \"d\"; only public keys are "
        "accepted.");
  }
  DPA_ASSIGN_OR_RETURN(std::string kty, r.String("kty"));
  if (kty != "EC") {
    return InvalidArgumentError("JWK.kty " + Quote(kty) +
                                " is not supported; only \"EC\" is.");
  }
  DPA_ASSIGN_OR_RETURN(std::string crv, r.String("crv"));
  if (crv != "P-256") {
    return InvalidArgumentError("JWK.crv " + Quote(crv) +
                                " is not supported; only \"P-256\" is.");
  }
  bool present = false;
  DPA_ASSIGN_OR_RETURN(std::string alg, r.OptionalString("alg", &present));
  if (present && alg != kAlgEs256) {
    return InvalidArgumentError("JWK.alg " + Quote(alg) + " is not \"ES256\".");
  }
  DPA_ASSIGN_OR_RETURN(std::string use, r.OptionalString("use", &present));
  if (present && use != "sig") {
    return InvalidArgumentError("JWK.use " + Quote(use) + " is not \"sig\".");
  }
  DPA_RETURN_IF_ERROR(r.OptionalString("kid", &present).status());
  Bytes xy[2];
  const char* names[2] = {"x", "y"};
  for (int i = 0; i < 2; ++i) {
    DPA_ASSIGN_OR_RETURN(std::string b64, r.String(names[i]));
    auto decoded = Base64UrlDecode(b64);
    if (!decoded.ok()) {
      return decoded.status().WithPrefix(std::string("JWK.") + names[i]);
    }
    if (decoded->size() != 32) {
      return InvalidArgumentError(std::string("JWK.") + names[i] +
                                  " must decode to 32 bytes, got " +
                                  std::to_string(decoded->size()) + ".");
    }
    xy[i] = std::move(decoded).value();
  }
  DPA_RETURN_IF_ERROR(r.Finish());
  auto key = EcPublicKey::FromAffine(xy[0], xy[1]);
  if (!key.ok()) return key.status().WithPrefix("JWK");
  return key;
}

nlohmann::json Jwks(const std::vector<NamedKey>& keys) {
  json arr = json::array();
  for (const NamedKey& k : keys) arr.push_back(PublicJwk(k.key, k.kid));
  return json{{"keys", std::move(arr)}};
}

StatusOr<std::vector<NamedKey>> ParseJwks(const nlohmann::json& jwks) {
  DPA_ASSIGN_OR_RETURN(ObjectReader r, ObjectReader::New(jwks, "JWKS"));
  DPA_ASSIGN_OR_RETURN(const json* keys, r.Array("keys"));
  DPA_RETURN_IF_ERROR(r.Finish());
  std::vector<NamedKey> out;
  std::set<std::string> kids;
  for (size_t i = 0; i < keys->size(); ++i) {
    const json& k = (*keys)[i];
    std::string path = strict_json::Index("JWKS.keys", i);
    auto key = ParsePublicJwk(k);
    if (!key.ok()) return key.status().WithPrefix(path);
    auto kid = k.find("kid");
    if (kid == k.end() || kid->get_ref<const std::string&>().empty()) {
      return InvalidArgumentError(path + " has no kid.");
    }
    const std::string& kid_str = kid->get_ref<const std::string&>();
    if (!kids.insert(kid_str).second) {
      return InvalidArgumentError(path + ".kid " + Quote(kid_str) +
                                  " is not unique.");
    }
    out.push_back(NamedKey{kid_str, std::move(key).value()});
  }
  return out;
}

}  // namespace dpuaudit::report
