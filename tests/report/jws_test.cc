#include "report/jws.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/report_test_util.h"

namespace dpuaudit::report {
namespace {

using nlohmann::json;
using testing::AcceptAllVerifier;
using testing::FailingVerifier;
using testing::FixedSigner;
using ::testing::HasSubstr;
using testing::SignRaw;
using testing::StatusHas;
using testing::StatusIs;
using testing::TestKey;

constexpr char kPayload[] = "{\"hello\":\"world\"}";

class JwsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = TestKey::New();
    other_ = TestKey::New();
  }
  std::string Sign(std::string_view payload = kPayload) {
    JwsHeader h;
    h.kid = "node-1";
    h.typ = "dpuaudit-report+jws";
    auto jws = SignCompact(AsBytes(payload), *key_.signer, h);
    EXPECT_TRUE(jws.ok()) << jws.status().ToString();
    return *jws;
  }
  Status Verify(std::string_view jws, size_t max = kDefaultMaxJwsBytes) {
    return VerifyJws(jws, *key_.verifier, kAlgEs256, max).status();
  }
  TestKey key_, other_;
};

std::vector<std::string> Segments(const std::string& jws) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t dot = jws.find('.', start);
    out.push_back(jws.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

TEST_F(JwsTest, CompactRoundTrip) {
  std::string jws = Sign();
  auto segs = Segments(jws);
  ASSERT_EQ(segs.size(), 3u);
  // The header is serialised once, compact, members sorted.
  EXPECT_EQ(ToString(*Base64UrlDecode(segs[0])),
            R"({"alg":"ES256","kid":"node-1","typ":"dpuaudit-report+jws"})");
  EXPECT_EQ(Base64UrlDecode(segs[2])->size(), 64u);

  auto v = VerifyJws(jws, *key_.verifier, "ES256", 1 << 20);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(ToString(v->payload()), kPayload);
  EXPECT_EQ(v->alg(), "ES256");
  EXPECT_EQ(v->kid(), "node-1");
  EXPECT_EQ(v->typ(), "dpuaudit-report+jws");
  EXPECT_EQ(v->header()["kid"], "node-1");
  EXPECT_EQ(v->signing_input(), segs[0] + "." + segs[1]);
}

TEST_F(JwsTest, EmptyKidAndTypAreOmitted) {
  auto jws = SignCompact(AsBytes(kPayload), *key_.signer, JwsHeader{});
  ASSERT_TRUE(jws.ok());
  EXPECT_EQ(ToString(*Base64UrlDecode(Segments(*jws)[0])),
            R"({"alg":"ES256"})");
  auto v = VerifyJws(*jws, *key_.verifier);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->kid(), "");
  EXPECT_EQ(v->typ(), "");
}

TEST_F(JwsTest, FlattenedJsonAccepted) {
  std::string compact = Sign();
  auto flat = CompactToFlattened(compact);
  ASSERT_TRUE(flat.ok());
  auto j = json::parse(*flat);
  EXPECT_EQ(j.size(), 3u);
  auto v = VerifyJws(*flat, *key_.verifier);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(ToString(v->payload()), kPayload);
  EXPECT_EQ(v->kid(), "node-1");
}

TEST_F(JwsTest, FlattenedUnknownMemberRejected) {
  auto j = json::parse(*CompactToFlattened(Sign()));
  j["extra"] = 1;
  EXPECT_THAT(Verify(j.dump()), StatusIs(StatusCode::kInvalidArgument,
                                         "JWS has unknown member \"extra\"."));
}

TEST_F(JwsTest, FlattenedUnprotectedHeaderRejected) {
  auto j = json::parse(*CompactToFlattened(Sign()));
  j["header"] = {{"kid", "evil"}};
  EXPECT_THAT(Verify(j.dump()),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS unprotected \"header\" is not accepted; every "
                       "header parameter must be protected."));
}

TEST_F(JwsTest, FlattenedShapeErrors) {
  auto j = json::parse(*CompactToFlattened(Sign()));
  json missing = j;
  missing.erase("signature");
  EXPECT_THAT(Verify(missing.dump()), StatusIs(StatusCode::kInvalidArgument,
                                               "JWS.signature is missing."));
  json wrong_type = j;
  wrong_type["payload"] = 5;
  EXPECT_THAT(Verify(wrong_type.dump()),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS.payload must be a string, got an integer."));
  json general = {
      {"payload", j["payload"]},
      {"signatures", json::array({{{"protected", j["protected"]},
                                   {"signature", j["signature"]}}})}};
  EXPECT_THAT(Verify(general.dump()), StatusHas(StatusCode::kInvalidArgument,
                                                "general JSON serialization"));
  std::string dup = R"({"protected":"a","protected":"b","payload":"c",)"
                    R"("signature":"d"})";
  EXPECT_THAT(Verify(dup), StatusIs(StatusCode::kInvalidArgument,
                                    "JWS JSON serialization has duplicate key "
                                    "\"protected\"."));
  EXPECT_THAT(Verify("{\"protected\":"),
              StatusHas(StatusCode::kInvalidArgument,
                        "JWS JSON serialization is not valid JSON"));
  EXPECT_THAT(Verify("[1]"),
              StatusIs(StatusCode::kInvalidArgument,
                       "compact JWS must have 3 segments, got 1."));
}

TEST_F(JwsTest, TamperedPayloadRejected) {
  auto segs = Segments(Sign());
  std::string forged = segs[0] + "." +
                       Base64UrlEncode(AsBytes("{\"hello\":\"WORLD\"}")) + "." +
                       segs[2];
  EXPECT_THAT(Verify(forged),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
}

TEST_F(JwsTest, TamperedHeaderRejected) {
  auto segs = Segments(Sign());
  std::string header =
      R"({"alg":"ES256","kid":"node-2","typ":"dpuaudit-report+jws"})";
  std::string forged =
      Base64UrlEncode(AsBytes(header)) + "." + segs[1] + "." + segs[2];
  EXPECT_THAT(Verify(forged),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
  // Same JSON, different bytes: still the received bytes that are checked.
  std::string spaced =
      R"({"alg": "ES256","kid":"node-1","typ":"dpuaudit-report+jws"})";
  forged = Base64UrlEncode(AsBytes(spaced)) + "." + segs[1] + "." + segs[2];
  EXPECT_THAT(Verify(forged),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
}

TEST_F(JwsTest, FlippedSignatureBitRejected) {
  auto segs = Segments(Sign());
  Bytes sig = *Base64UrlDecode(segs[2]);
  sig[10] ^= 0x01;
  std::string forged = segs[0] + "." + segs[1] + "." + Base64UrlEncode(sig);
  EXPECT_THAT(Verify(forged),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
}

TEST_F(JwsTest, SignatureByAnotherKeyRejected) {
  std::string jws =
      SignRaw(R"({"alg":"ES256","kid":"node-1"})", kPayload, *other_.signer);
  EXPECT_THAT(Verify(jws),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
  // ...and accepted by the other key's verifier, so the JWS is well formed.
  EXPECT_TRUE(VerifyJws(jws, *other_.verifier).ok());
}

TEST_F(JwsTest, TruncatedRejected) {
  std::string jws = Sign();
  size_t second_dot = jws.rfind('.');
  EXPECT_THAT(Verify(jws.substr(0, second_dot + 1)),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS signature segment is empty."));
  EXPECT_THAT(Verify(jws.substr(0, second_dot)),
              StatusIs(StatusCode::kInvalidArgument,
                       "compact JWS must have 3 segments, got 2."));
  // Cut one character of the signature: 85 base64url chars cannot exist.
  EXPECT_THAT(Verify(jws.substr(0, jws.size() - 1)),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS signature segment: base64url length 85 is "
                       "impossible."));
  EXPECT_THAT(Verify(""), StatusIs(StatusCode::kInvalidArgument,
                                   "compact JWS must have 3 segments, got 1."));
}

TEST_F(JwsTest, WrongNumberOfDotsRejected) {
  std::string jws = Sign();
  EXPECT_THAT(Verify(jws + ".AAAA"),
              StatusIs(StatusCode::kInvalidArgument,
                       "compact JWS must have 3 segments, got 4."));
  EXPECT_THAT(Verify("abc"),
              StatusIs(StatusCode::kInvalidArgument,
                       "compact JWS must have 3 segments, got 1."));
  EXPECT_THAT(Verify(".."), StatusIs(StatusCode::kInvalidArgument,
                                     "JWS protected header segment is empty."));
  auto segs = Segments(jws);
  EXPECT_THAT(
      Verify(segs[0] + ".." + segs[2]),
      StatusIs(StatusCode::kInvalidArgument, "JWS payload segment is empty."));
}

TEST_F(JwsTest, BadBase64UrlRejected) {
  auto segs = Segments(Sign());
  std::string payload = segs[1];
  payload[2] = '+';  // standard base64, not base64url
  EXPECT_THAT(Verify(segs[0] + "." + payload + "." + segs[2]),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS payload segment: base64url: invalid character at "
                       "offset 2."));
  EXPECT_THAT(Verify(segs[0] + "." + segs[1] + "." + segs[2] + "=="),
              StatusHas(StatusCode::kInvalidArgument,
                        "JWS signature segment: base64url"));
  EXPECT_THAT(Verify("e30 ." + segs[1] + "." + segs[2]),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS protected header segment: base64url: invalid "
                       "character at offset 3."));
}

TEST_F(JwsTest, SignatureOfWrongLengthRejected) {
  auto segs = Segments(Sign());
  Bytes sig = *Base64UrlDecode(segs[2]);
  Bytes short_sig(sig.begin(), sig.end() - 1);
  EXPECT_THAT(
      Verify(segs[0] + "." + segs[1] + "." + Base64UrlEncode(short_sig)),
      StatusIs(StatusCode::kUnauthenticated,
               "JWS ES256 signature must be 64 bytes, got 63."));
  Bytes der_like(72, 0x30);  // a DER-encoded ECDSA signature is not JOSE
  EXPECT_THAT(Verify(segs[0] + "." + segs[1] + "." + Base64UrlEncode(der_like)),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS ES256 signature must be 64 bytes, got 72."));
}

struct AlgCase {
  const char* alg_json;
  const char* message;
};

class JwsAlgTest : public JwsTest,
                   public ::testing::WithParamInterface<AlgCase> {};

TEST_P(JwsAlgTest, OnlyThePinnedAlgIsAccepted) {
  // Validly signed by the pinned key, so only the alg check can fail.
  std::string header = std::string(R"({"alg":)") + GetParam().alg_json + "}";
  std::string jws = SignRaw(header, kPayload, *key_.signer);
  EXPECT_THAT(Verify(jws),
              StatusIs(StatusCode::kUnauthenticated, GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Algs, JwsAlgTest,
    ::testing::Values(
        AlgCase{R"("none")", R"(JWS alg "none" is not the pinned "ES256".)"},
        AlgCase{R"("HS256")", R"(JWS alg "HS256" is not the pinned "ES256".)"},
        AlgCase{R"("ES384")", R"(JWS alg "ES384" is not the pinned "ES256".)"},
        AlgCase{R"("es256")", R"(JWS alg "es256" is not the pinned "ES256".)"},
        AlgCase{R"("ES256 ")",
                R"(JWS alg "ES256 " is not the pinned "ES256".)"},
        AlgCase{R"("")", R"(JWS alg "" is not the pinned "ES256".)"},
        AlgCase{R"("ES256\u0000")",
                R"(JWS alg "ES256\u0000" is not the pinned "ES256".)"}));

TEST_F(JwsTest, AlgNoneWithEmptySignatureRejected) {
  // The classic unsecured JWS: "<header>.<payload>." (RFC 7519 §6.1).
  std::string jws = Base64UrlEncode(AsBytes(R"({"alg":"none"})")) + "." +
                    Base64UrlEncode(AsBytes(kPayload)) + ".";
  EXPECT_THAT(Verify(jws), StatusIs(StatusCode::kInvalidArgument,
                                    "JWS signature segment is empty."));
}

TEST_F(JwsTest, Hs256WithHmacSizedSignatureRejectedByAlg) {
  // An HS256 token keyed with the public key (key confusion): 32-byte MAC.
  std::string jws = Base64UrlEncode(AsBytes(R"({"alg":"HS256"})")) + "." +
                    Base64UrlEncode(AsBytes(kPayload)) + "." +
                    Base64UrlEncode(Bytes(32, 0xab));
  EXPECT_THAT(Verify(jws),
              StatusIs(StatusCode::kUnauthenticated,
                       R"(JWS alg "HS256" is not the pinned "ES256".)"));
}

TEST_F(JwsTest, EmbeddedKeyHeadersRejected) {
  // The attacker signs with their own key and ships it in the header.
  json attacker_jwk = PublicJwk(other_.public_key(), "evil");
  for (const char* name : {"jwk", "jku", "x5u", "x5c"}) {
    json h = {{"alg", "ES256"}};
    h[name] = std::string(name) == "jwk"   ? attacker_jwk
              : std::string(name) == "x5c" ? json::array({"MIIB"})
                                           : json("https://attacker.invalid/k");
    std::string jws = SignRaw(h.dump(), kPayload, *other_.signer);
    EXPECT_THAT(Verify(jws),
                StatusIs(StatusCode::kInvalidArgument,
                         "JWS header \"" + std::string(name) +
                             "\" is not accepted: keys are pinned per node, "
                             "never taken from the message, and the payload "
                             "must be plain base64url."))
        << name;
    // Even when signed by the pinned key.
    jws = SignRaw(h.dump(), kPayload, *key_.signer);
    EXPECT_EQ(Verify(jws).code(), StatusCode::kInvalidArgument) << name;
  }
}

TEST_F(JwsTest, CritHeaderRejected) {
  std::string jws = SignRaw(R"({"alg":"ES256","crit":["exp"],"exp":1})",
                            kPayload, *key_.signer);
  EXPECT_THAT(Verify(jws),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS header \"crit\" is not supported (no extensions "
                       "are understood)."));
}

TEST_F(JwsTest, UnencodedPayloadHeaderRejected) {
  std::string jws =
      SignRaw(R"({"alg":"ES256","b64":false})", kPayload, *key_.signer);
  EXPECT_THAT(Verify(jws), StatusHas(StatusCode::kInvalidArgument,
                                     "JWS header \"b64\" is not accepted"));
}

TEST_F(JwsTest, MalformedProtectedHeaderRejected) {
  struct Case {
    const char* header;
    const char* message;
  } cases[] = {
      {R"(["ES256"])", "JWS protected header must be a JSON object."},
      {R"({"kid":"a"})", "JWS header \"alg\" is missing."},
      {R"({"alg":256})", "JWS header \"alg\" must be a string."},
      {R"({"alg":"ES256","kid":1})", "JWS header \"kid\" must be a string."},
      {R"({"alg":"ES256","typ":null})", "JWS header \"typ\" must be a string."},
      {R"({"alg":"none","alg":"ES256"})",
       "JWS protected header has duplicate key \"alg\"."},
      {R"({"alg":"ES256"} )", nullptr},  // trailing space is valid JSON
      {R"({"alg":"ES256"}x)",
       "JWS protected header is not valid JSON "
       "(error at byte 16)."},
      {"{\"alg\":\"ES\xff\"}",
       "JWS protected header is not valid JSON "
       "(error at byte 11): a string is not valid UTF-8."},
  };
  for (const Case& c : cases) {
    std::string jws = SignRaw(c.header, kPayload, *key_.signer);
    if (c.message == nullptr) {
      EXPECT_TRUE(Verify(jws).ok()) << c.header;
    } else {
      EXPECT_THAT(Verify(jws),
                  StatusIs(StatusCode::kInvalidArgument, c.message))
          << c.header;
    }
  }
}

TEST_F(JwsTest, OversizeRejectedBeforeParsing) {
  std::string jws = Sign();
  EXPECT_THAT(Verify(jws, jws.size() - 1),
              StatusIs(StatusCode::kResourceExhausted,
                       "JWS of " + std::to_string(jws.size()) +
                           " bytes exceeds the limit of " +
                           std::to_string(jws.size() - 1) + " bytes."));
  EXPECT_TRUE(Verify(jws, jws.size()).ok());
  // Garbage over the limit is reported as oversize, not as malformed.
  EXPECT_EQ(Verify(std::string(100, '!'), 99).code(),
            StatusCode::kResourceExhausted);
}

TEST_F(JwsTest, OnlyEs256CanBePinned) {
  EXPECT_THAT(VerifyJws(Sign(), *key_.verifier, "ES384").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "pinned alg \"ES384\" is not supported; only ES256 "
                       "is."));
}

TEST_F(JwsTest, VerifierErrorsOtherThanBadSignaturePropagate) {
  FailingVerifier broken(InternalError("HSM unreachable."));
  EXPECT_THAT(VerifyJws(Sign(), broken).status(),
              StatusIs(StatusCode::kInternal,
                       "JWS signature check failed to run: HSM "
                       "unreachable."));
  FailingVerifier denied(UnauthenticatedError("nope."));
  EXPECT_THAT(VerifyJws(Sign(), denied).status(),
              StatusIs(StatusCode::kUnauthenticated,
                       "JWS signature does not verify with the pinned key."));
}

TEST_F(JwsTest, SignerFailuresAreReported) {
  FixedSigner short_sig(Bytes(10, 1));
  EXPECT_THAT(SignCompact(AsBytes(kPayload), short_sig, {}).status(),
              StatusIs(StatusCode::kInternal,
                       "ES256 signer returned 10 bytes, expected 64."));
  FixedSigner failing(UnavailableError("key store offline."));
  EXPECT_THAT(SignCompact(AsBytes(kPayload), failing, {}).status(),
              StatusIs(StatusCode::kUnavailable, "key store offline."));
  JwsHeader h;
  h.alg = "none";
  EXPECT_THAT(SignCompact(AsBytes(kPayload), *key_.signer, h).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWS alg \"none\" is not supported; only ES256 is."));
}

TEST_F(JwsTest, PayloadIsNotParsed) {
  // Arbitrary bytes, including invalid UTF-8, come back verbatim.
  std::string payload("\xff\x00not json", 10);
  auto jws = SignCompact(AsBytes(payload), *key_.signer, {});
  ASSERT_TRUE(jws.ok());
  auto v = VerifyJws(*jws, *key_.verifier);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(ToString(v->payload()), payload);
}

TEST_F(JwsTest, PeekUnverifiedHeaderDoesNotVerify) {
  std::string jws = SignRaw(R"({"alg":"ES256","kid":"node-7","typ":"JWT"})",
                            kPayload, *other_.signer);
  auto peek = PeekUnverifiedHeader(jws);
  ASSERT_TRUE(peek.ok()) << peek.status().ToString();
  EXPECT_EQ(peek->kid, "node-7");
  EXPECT_EQ(peek->alg, "ES256");
  EXPECT_EQ(peek->typ, "JWT");
  // It still rejects what VerifyJws would reject as malformed.
  EXPECT_THAT(PeekUnverifiedHeader("a.b").status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "compact JWS must have 3 segments, got 2."));
  EXPECT_THAT(PeekUnverifiedHeader(jws, 10).status(),
              StatusHas(StatusCode::kResourceExhausted, "exceeds the limit"));
  std::string jwk =
      SignRaw(R"({"alg":"ES256","jwk":{}})", kPayload, *other_.signer);
  EXPECT_EQ(PeekUnverifiedHeader(jwk).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(JwsTest, AcceptAllVerifierIsCalledExactlyOnceAfterChecks) {
  AcceptAllVerifier all;
  EXPECT_TRUE(VerifyJws(Sign(), all).ok());
  EXPECT_EQ(all.calls(), 1);
  std::string none = SignRaw(R"({"alg":"none"})", kPayload, *key_.signer);
  EXPECT_EQ(VerifyJws(none, all).status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(all.calls(), 1);  // the alg check came first
}

// ---------------------------------------------------------------- JWK

TEST(JwkTest, PublicJwkRoundTrip) {
  TestKey k = TestKey::New();
  json jwk = PublicJwk(k.public_key(), "kid-1");
  EXPECT_EQ(jwk["kty"], "EC");
  EXPECT_EQ(jwk["crv"], "P-256");
  EXPECT_EQ(jwk["alg"], "ES256");
  EXPECT_EQ(jwk["use"], "sig");
  EXPECT_EQ(jwk["kid"], "kid-1");
  EXPECT_EQ(jwk["x"], Base64UrlEncode(k.public_key().x()));
  EXPECT_EQ(jwk["y"], Base64UrlEncode(k.public_key().y()));
  EXPECT_EQ(jwk.size(), 7u);
  EXPECT_FALSE(jwk.contains("d"));
  auto parsed = ParsePublicJwk(jwk);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(*parsed == k.public_key());
  EXPECT_EQ(parsed->Thumbprint(), k.public_key().Thumbprint());
  // The minimal RFC 7517 form (what jose's exportJWK gives) parses too.
  json minimal = {
      {"kty", "EC"}, {"crv", "P-256"}, {"x", jwk["x"]}, {"y", jwk["y"]}};
  EXPECT_TRUE(ParsePublicJwk(minimal).ok());
}

TEST(JwkTest, StrictParsing) {
  TestKey k = TestKey::New();
  const json good = PublicJwk(k.public_key(), "kid-1");
  struct Case {
    std::function<void(json&)> mutate;
    const char* message;
  };
  std::vector<Case> cases = {
      {[](json& j) { j["d"] = "AAAA"; },
       "JWK contains a private key member \"d\"; only public keys are "
       "accepted."},
      {[](json& j) { j["kty"] = "RSA"; },
       "JWK.kty \"RSA\" is not supported; only \"EC\" is."},
      {[](json& j) { j["kty"] = "oct"; },
       "JWK.kty \"oct\" is not supported; only \"EC\" is."},
      {[](json& j) { j["crv"] = "P-384"; },
       "JWK.crv \"P-384\" is not supported; only \"P-256\" is."},
      {[](json& j) { j["alg"] = "ES384"; },
       "JWK.alg \"ES384\" is not \"ES256\"."},
      {[](json& j) { j["use"] = "enc"; }, "JWK.use \"enc\" is not \"sig\"."},
      {[](json& j) { j["x"] = Base64UrlEncode(Bytes(31, 1)); },
       "JWK.x must decode to 32 bytes, got 31."},
      {[](json& j) { j["y"] = "not base64url!"; },
       "JWK.y: base64url: invalid character at offset 3."},
      {[](json& j) { j.erase("x"); }, "JWK.x is missing."},
      {[](json& j) { j["kid"] = 3; },
       "JWK.kid must be a string, got an integer."},
      {[](json& j) { j["x5c"] = json::array(); },
       "JWK has unknown member \"x5c\"."},
      {[](json& j) { j = json::array(); },
       "JWK must be an object, got an array."},
  };
  for (const Case& c : cases) {
    json j = good;
    c.mutate(j);
    EXPECT_THAT(ParsePublicJwk(j).status(),
                StatusIs(StatusCode::kInvalidArgument, c.message))
        << j.dump();
  }
  // A point that is not on the curve.
  json off = good;
  Bytes y = k.public_key().y();
  y[31] ^= 1;
  off["y"] = Base64UrlEncode(y);
  EXPECT_THAT(ParsePublicJwk(off).status(),
              StatusHas(StatusCode::kInvalidArgument, "JWK: EC point"));
}

TEST(JwkTest, JwksRoundTripAndStrictness) {
  TestKey a = TestKey::New(), b = TestKey::New();
  json set = Jwks({{"a", a.public_key()}, {"b", b.public_key()}});
  ASSERT_EQ(set["keys"].size(), 2u);
  EXPECT_EQ(set["keys"][1]["kid"], "b");
  auto parsed = ParseJwks(set);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].kid, "a");
  EXPECT_TRUE((*parsed)[1].key == b.public_key());

  json dup = Jwks({{"a", a.public_key()}, {"a", b.public_key()}});
  EXPECT_THAT(ParseJwks(dup).status(),
              StatusIs(StatusCode::kInvalidArgument,
                       "JWKS.keys[1].kid \"a\" is not unique."));
  json nokid = Jwks({{"", a.public_key()}});
  EXPECT_THAT(ParseJwks(nokid).status(), StatusIs(StatusCode::kInvalidArgument,
                                                  "JWKS.keys[0] has no kid."));
  json priv = set;
  priv["keys"][0]["d"] = "AAAA";
  EXPECT_THAT(ParseJwks(priv).status(),
              StatusHas(StatusCode::kInvalidArgument,
                        "JWKS.keys[0]: JWK contains a private key member"));
  json extra = set;
  extra["x"] = 1;
  EXPECT_THAT(
      ParseJwks(extra).status(),
      StatusIs(StatusCode::kInvalidArgument, "JWKS has unknown member \"x\"."));
}

}  // namespace
}  // namespace dpuaudit::report
