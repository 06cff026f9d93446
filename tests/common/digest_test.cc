#include "common/digest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <openssl/sha.h>

#include <algorithm>
#include <string>

#include "common/crypto.h"

namespace dpuaudit {
namespace {

std::string HexOf(const StatusOr<Bytes>& d) {
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? HexEncode(*d) : "";
}

TEST(DigestTest, KnownVectors) {
  // FIPS 180-2 "abc".
  EXPECT_EQ(HexOf(Digest(DigestAlg::kSha1, AsBytes("abc"), "t")),
            "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(HexOf(Digest(DigestAlg::kSha256, AsBytes("abc"), "t")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HexOf(Digest(DigestAlg::kSha384, AsBytes("abc"), "t")),
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
            "8086072ba1e7cc2358baeca134c825a7");
  EXPECT_EQ(HexOf(Digest(DigestAlg::kSha512, AsBytes("abc"), "t")),
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_EQ(HexOf(Digest(DigestAlg::kSha256, {}, "t")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(DigestTest, NamesAndSizes) {
  for (DigestAlg a : {DigestAlg::kSha1, DigestAlg::kSha256, DigestAlg::kSha384,
                      DigestAlg::kSha512}) {
    ASSERT_NE(DigestMd(a), nullptr) << DigestAlgName(a);
    EXPECT_EQ(static_cast<size_t>(EVP_MD_get_size(DigestMd(a))), DigestSize(a));
    EXPECT_EQ(Digest(a, AsBytes("x"), "t")->size(), DigestSize(a));
  }
  EXPECT_EQ(DigestAlgName(DigestAlg::kSha384), "SHA-384");
  EXPECT_EQ(DigestMd(DigestAlg::kSha256), DigestMd(DigestAlg::kSha256));
}

// Streaming in uneven chunks, under three algorithms at once, equals
// OpenSSL's one-shot functions over the whole input; a restart reuses the
// contexts for a new input.
TEST(MultiDigestTest, StreamingMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data.push_back(static_cast<char>(i * 7));
  auto d = MultiDigest::New(
      {DigestAlg::kSha256, DigestAlg::kSha384, DigestAlg::kSha512}, "t");
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ(d->alg(1), DigestAlg::kSha384);
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(d->Start("t").ok());
    size_t at = 0, step = 1;
    while (at < data.size()) {
      size_t n = std::min(step, data.size() - at);
      ASSERT_TRUE(d->Update(AsBytes(data).subspan(at, n), "t").ok());
      at += n;
      step = step * 3 + 1;
    }
    ASSERT_TRUE(d->Update({}, "t").ok());
    auto out = d->FinishAll("t");
    ASSERT_TRUE(out.ok());
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    Bytes s256(SHA256_DIGEST_LENGTH), s384(SHA384_DIGEST_LENGTH),
        s512(SHA512_DIGEST_LENGTH);
    SHA256(p, data.size(), s256.data());
    SHA384(p, data.size(), s384.data());
    SHA512(p, data.size(), s512.data());
    EXPECT_EQ((*out)[0], s256);
    EXPECT_EQ((*out)[1], s384);
    EXPECT_EQ((*out)[2], s512);
    EXPECT_EQ(HexEncode((*out)[0]), Sha256Hex(AsBytes(data)));
    data.resize(data.size() / 2);  // the second round hashes another input
  }
}

TEST(MultiDigestTest, FinishOneAtATimeAndMisuse) {
  auto d = MultiDigest::New({DigestAlg::kSha1, DigestAlg::kSha256}, "t");
  ASSERT_TRUE(d.ok());
  // Not started: every use is refused.
  EXPECT_EQ(d->Update(AsBytes("abc"), "t").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(d->Finish(0, "t").status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(d->Start("t").ok());
  ASSERT_TRUE(d->Update(AsBytes("abc"), "t").ok());
  EXPECT_EQ(HexOf(d->Finish(1, "t")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // One finished digest stops further updates of the set.
  EXPECT_EQ(d->Update(AsBytes("x"), "t").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(HexOf(d->Finish(0, "t")),
            "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(d->Finish(0, "t").status().message(),
            "SHA-1 digest is not started.");
  EXPECT_EQ(d->Finish(2, "t").status().code(), StatusCode::kInvalidArgument);
  // An empty set hashes nothing and finishes to nothing.
  auto none = MultiDigest::New({}, "t");
  ASSERT_TRUE(none.ok());
  ASSERT_TRUE(none->Start("t").ok());
  ASSERT_TRUE(none->Update(AsBytes("abc"), "t").ok());
  EXPECT_TRUE(none->FinishAll("t")->empty());
}

}  // namespace
}  // namespace dpuaudit
