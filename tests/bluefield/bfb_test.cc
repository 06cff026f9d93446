// The BFB parser (attest/bfb.h) over boot streams built here, field by
// field, independently of the code under test: headers are packed by hand
// (Put below), CRCs come from zlib and digests from OpenSSL one-shot calls.
#include "bluefield/bfb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "firmware/boot_partitions.h"
#include "common/byte_stream.h"
#include "testing/temp_dir.h"

namespace dpuaudit::bluefield {
namespace {

using ::testing::HasSubstr;

constexpr size_t kOneMiB = 1 << 20;  // the parser's one buffer (bfb.h)

// The fields of one 24-byte image header (docs/bluefield.md#bfb;
// rshim-user-space scripts/mlx-mkbfb ImageHdr.get_bits), packed by Put() with
// shifts written out here, not with EncodeBfbHeader.
struct Hdr {
  uint64_t magic = 0x13026642;  // w0 bits 0-31: "Bf^B^S"
  uint64_t major = 1;           // w0 bits 32-35
  uint64_t minor = 2;           // w0 bits 36-39
  uint64_t next_ver = 0;        // w0 bits 44-47: next_img_ver
  uint64_t cur_ver = 0;         // w0 bits 48-51: cur_img_ver
  uint64_t len_words = 3;       // w0 bits 52-55: header length / 8 (24 bytes)
  uint64_t id = 0;              // w0 bits 56-63: image id
  uint64_t len = 0;             // w1 bits 0-31: data length, padding excluded
  uint64_t crc = 0;             // w1 bits 32-63: CRC-32 of data + padding
  uint64_t following = 0;       // w2: bitmap of the ids of later images
};

void PutLe64(Bytes& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void Put(Bytes& out, const Hdr& h) {
  PutLe64(out, h.magic | h.major << 32 | h.minor << 36 | h.next_ver << 44 |
                   h.cur_ver << 48 | h.len_words << 52 | h.id << 56);
  PutLe64(out, h.len | h.crc << 32);
  PutLe64(out, h.following);
}

size_t Pad(size_t n) { return ((n + 7) & ~size_t{7}) - n; }

// Image data followed by its zero padding to a multiple of 8.
void PutData(Bytes& out, std::string_view data) {
  out.insert(out.end(), data.begin(), data.end());
  out.insert(out.end(), Pad(data.size()), 0);
}

uint32_t Crc(ByteView data, uint32_t crc = 0) {
  return static_cast<uint32_t>(
      crc32(crc, data.data(), static_cast<uInt>(data.size())));
}

// zlib CRC-32 of the data and its zero padding, as mlx-mkbfb computes it.
uint32_t PaddedCrc(std::string_view data) {
  Bytes padded = ToBytes(data);
  padded.insert(padded.end(), Pad(data.size()), 0);
  return Crc(padded);
}

uint64_t Bit(unsigned id) { return uint64_t{1} << id; }

std::string Digest(const char* name, ByteView data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(data.data(), data.size(), md, &len,
                       EVP_get_digestbyname(name), nullptr),
            1);
  return HexEncode(ByteView(md, len));
}

StatusOr<BfbLayout> Parse(const Bytes& b, const BfbLimits& limits = {}) {
  return ParseBfbBytes(b, limits);
}

void ExpectError(const StatusOr<BfbLayout>& got, const std::string& message) {
  ASSERT_FALSE(got.ok()) << "expected: " << message;
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(), message);
}

// bl2-cert, bl2 and bl31, as mlx-mkbfb orders them.
Bytes ThreeImages() {
  Bytes b;
  Put(b, {.id = 6,   // bl2-cert
          .len = 5,  // "cert!" + 3 padding bytes
          .crc = PaddedCrc("cert!"),
          .following = Bit(1) | Bit(3)});  // bl2 and bl31 follow
  PutData(b, "cert!");
  Put(b, {.id = 1,   // bl2
          .len = 8,  // no padding needed
          .crc = PaddedCrc("bl2-bin!"),
          .following = Bit(3)});  // bl31 follows
  PutData(b, "bl2-bin!");
  Put(b, {.id = 3,    // bl31
          .len = 13,  // + 3 padding bytes
          .crc = PaddedCrc("EL3 runtime.."),
          .following = 0});  // last image
  PutData(b, "EL3 runtime..");
  return b;
}

TEST(BfbImageTableTest, MatchesMlxMkbfb) {
  const auto& types = BfbImageTypes();
  ASSERT_EQ(types.size(), 44u);
  EXPECT_EQ(types.front().name, "psc-bl");
  EXPECT_EQ(types.front().id, 36);
  EXPECT_EQ(types.back().name, "upgrade-image");
  EXPECT_EQ(types.back().id, 51);
  std::set<uint8_t> ids;
  std::set<std::string_view> names;
  for (const BfbImageType& t : types) {
    EXPECT_TRUE(ids.insert(t.id).second) << "id " << int{t.id};
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_FALSE(t.description.empty()) << t.name;
    EXPECT_LT(t.id, 64) << t.name;  // every id fits the following bitmap
  }
  ASSERT_NE(FindBfbImageType(3), nullptr);
  EXPECT_EQ(FindBfbImageType(3)->name, "bl31");
  EXPECT_EQ(FindBfbImageType(3)->description, "EL3 Runtime Firmware BL3-1 bin");
  EXPECT_EQ(FindBfbImageType(0), nullptr);
  EXPECT_EQ(BfbImageName(53), "psc-certs");
  EXPECT_EQ(BfbImageName(200), "unknown-200");
  EXPECT_EQ(BfbImageIdByName("bl31"), std::optional<uint8_t>(3));
  EXPECT_EQ(BfbImageIdByName("bl2r"), std::optional<uint8_t>(30));
  EXPECT_EQ(BfbImageIdByName("ddr5_snps_images"), std::optional<uint8_t>(40));
  EXPECT_EQ(BfbImageIdByName("unknown-200"), std::nullopt);
  EXPECT_EQ(BfbImageIdByName(""), std::nullopt);
}

TEST(BfbHeaderTest, EncodesAsMlxMkbfbAndBfverFindsIt) {
  BfbHeader h;
  h.image_id = 5;  // bl33
  h.image_len = 0x1234;
  h.image_crc = 0xdeadbeef;
  h.following_images = Bit(52);
  Bytes got = EncodeBfbHeader(h);
  Bytes want;
  Put(want, {.id = 5,                 // bl33
             .len = 0x1234,           // data length
             .crc = 0xdeadbeef,       // any CRC: not checked here
             .following = Bit(52)});  // capsule follows
  EXPECT_EQ(got, want);
  // bfscripts bfver finds the UEFI (bl33) header by this hex pattern.
  EXPECT_EQ(HexEncode(ByteView(got).first(8)), "4266021321003005");

  auto back = DecodeBfbHeader(got, 0);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, h);

  BfbHeader versions = h;
  versions.minor = 1;
  versions.cur_img_ver = 15;
  versions.next_img_ver = 7;
  auto v = DecodeBfbHeader(EncodeBfbHeader(versions), 0);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, versions);
}

TEST(BfbHeaderTest, DecodeRejects) {
  struct Case {
    Hdr hdr;
    std::string message;
  };
  const Case cases[] = {
      {{.magic = 0x13026643},
       "BFB header at offset 0x40: bad magic 0x13026643 (expected "
       "0x13026642)."},
      {{.major = 2},
       "BFB header at offset 0x40: major version 2 (expected 1)."},
      {{.major = 0},
       "BFB header at offset 0x40: major version 0 (expected 1)."},
      {{.minor = 3},
       "BFB header at offset 0x40: minor version 3 (at most 2 supported)."},
      {{.len_words = 4},
       "BFB header at offset 0x40: header length 32 bytes (expected 24)."},
      {{.len_words = 0},
       "BFB header at offset 0x40: header length 0 bytes (expected 24)."},
  };
  for (const Case& c : cases) {
    Bytes b;
    Put(b, c.hdr);
    auto got = DecodeBfbHeader(b, 0x40);
    ASSERT_FALSE(got.ok()) << c.message;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(), c.message);
  }
  Bytes short_header(23, 0);
  auto got = DecodeBfbHeader(short_header, 0);
  EXPECT_EQ(got.status().message(),
            "BFB header at offset 0x0: 23 bytes (expected 24).");
}

TEST(ParseBfbTest, ValidMultiImage) {
  const Bytes b = ThreeImages();
  auto got = Parse(b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const BfbLayout& l = *got;
  ASSERT_EQ(l.images.size(), 3u);
  struct Want {
    uint64_t offset;
    uint8_t id;
    std::string name;
    std::string data;
  };
  const Want want[] = {{0, 6, "bl2-cert", "cert!"},
                       {24 + 8, 1, "bl2", "bl2-bin!"},
                       {24 + 8 + 24 + 8, 3, "bl31", "EL3 runtime.."}};
  for (size_t i = 0; i < 3; ++i) {
    const BfbImage& img = l.images[i];
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(img.index, i);
    EXPECT_EQ(img.offset, want[i].offset);
    EXPECT_EQ(img.data_offset, want[i].offset + 24);
    EXPECT_EQ(img.header.image_id, want[i].id);
    EXPECT_EQ(img.header.major, 1);
    EXPECT_EQ(img.header.minor, 2);
    EXPECT_EQ(img.header.header_len, 24);
    EXPECT_EQ(img.header.image_len, want[i].data.size());
    EXPECT_EQ(img.name, want[i].name);
    EXPECT_TRUE(img.known_id);
    EXPECT_EQ(img.padded_length, (want[i].data.size() + 7) / 8 * 8);
    EXPECT_EQ(img.crc_computed, PaddedCrc(want[i].data));
    EXPECT_TRUE(img.crc_ok);
    const ByteView data = AsBytes(want[i].data);
    EXPECT_EQ(img.sha256, Digest("SHA256", data));
    EXPECT_EQ(img.sha384, Digest("SHA384", data));
    EXPECT_EQ(img.sha512, Digest("SHA512", data));
  }
  EXPECT_EQ(l.end_offset, b.size());
  EXPECT_EQ(l.total_bytes, b.size());
  EXPECT_EQ(l.trailing, BfbTrailing::kNone);
  EXPECT_EQ(l.trailing_bytes, 0u);
  EXPECT_TRUE(l.all_crc_ok);
  EXPECT_TRUE(l.following_consistent);
}

TEST(ParseBfbTest, DigestsExcludePaddingAndCrcIncludesIt) {
  // FIPS 180-2 test vectors for "abc" (3 bytes, so 5 bytes of padding).
  Bytes b;
  Put(b, {.id = 59,                 // boot-args
          .len = 3,                 // "abc"
          .crc = PaddedCrc("abc"),  // over "abc" + 5 zero bytes
          .following = 0});
  PutData(b, "abc");
  auto got = Parse(b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const BfbImage& img = got->images[0];
  EXPECT_EQ(img.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(img.sha384,
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
            "8086072ba1e7cc2358baeca134c825a7");
  EXPECT_EQ(img.sha512,
            "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
            "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
  EXPECT_NE(PaddedCrc("abc"), Crc(AsBytes("abc")));
  EXPECT_TRUE(img.crc_ok);

  // A non-zero padding byte: same digests, CRC no longer matches.
  Bytes dirty = b;
  dirty.back() = 0x01;
  auto d = Parse(dirty);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->images[0].sha384, img.sha384);
  EXPECT_FALSE(d->images[0].crc_ok);
}

TEST(ParseBfbTest, BuildBfbWritesWhatMlxMkbfbWrites) {
  std::vector<std::pair<uint8_t, Bytes>> images = {
      {6, ToBytes("cert!")},
      {1, ToBytes("bl2-bin!")},
      {3, ToBytes("EL3 runtime..")}};
  EXPECT_EQ(BuildBfb(images), ThreeImages());
  EXPECT_TRUE(BuildBfb({}).empty());

  // A repeated id: its earlier copy names it as following (as mlx-mkbfb
  // writes image versions), and the result parses as consistent.
  Bytes twice = BuildBfb({{5, ToBytes("uefi-a")}, {5, ToBytes("uefi-b")}});
  Bytes want;
  Put(want, {.id = 5,
             .len = 6,
             .crc = PaddedCrc("uefi-a"),
             .following = Bit(5)});  // another bl33 follows
  PutData(want, "uefi-a");
  Put(want, {.id = 5,   // bl33 again
             .len = 6,  // "uefi-b" + 2 padding bytes
             .crc = PaddedCrc("uefi-b"),
             .following = 0});  // last image
  PutData(want, "uefi-b");
  EXPECT_EQ(twice, want);
}

TEST(ParseBfbTest, TruncatedHeader) {
  // At offset 0: 10 bytes that begin with the magic.
  Bytes b;
  Put(b, {.id = 1,     // bl2
          .len = 8});  // (cut before it matters)
  b.resize(10);
  ExpectError(Parse(b),
              "BFB image 0 at offset 0x0: header cut short (10 of 24 bytes).");
  b.resize(3);  // not even the magic
  ExpectError(Parse(b),
              "BFB image 0 at offset 0x0: header cut short (3 of 24 bytes).");

  // After one image: 20 bytes that begin with the magic.
  Bytes two = ThreeImages();
  const size_t third = 24 + 8 + 24 + 8;  // offset of bl31's header
  two.resize(third + 20);
  ExpectError(Parse(two),
              "BFB image 2 at offset 0x40: header cut short (20 of 24 bytes).");

  // After one image, 20 bytes WITHOUT the magic are trailing data.
  two.resize(third);
  two.insert(two.end(), 20, 0x5a);
  auto got = Parse(two);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->images.size(), 2u);
  EXPECT_EQ(got->trailing, BfbTrailing::kGarbage);
  EXPECT_EQ(got->trailing_bytes, 20u);
}

TEST(ParseBfbTest, LengthPastTheEnd) {
  Bytes b;
  Put(b, {.id = 3,         // bl31
          .len = 1048576,  // 1 MiB announced...
          .crc = 0});
  b.insert(b.end(), 4096, 0xab);  // ...4096 bytes present
  ExpectError(Parse(b),
              "BFB image 0 at offset 0x0: length 1048576 runs past the end of "
              "the input (4096 bytes left).");

  // The second image, and the padding is missing (not the data).
  Bytes c = ThreeImages();
  c.resize(24 + 8 + 24 + 8);                        // keep bl2-cert and bl2
  Put(c, {.id = 5,                                  // bl33
          .len = 5,                                 // "uefi!" + 3 padding bytes
          .crc = PaddedCrc("uefi!")});              // following 0: last image
  c.insert(c.end(), {'u', 'e', 'f', 'i', '!', 0});  // 1 of 3 padding bytes
  ExpectError(Parse(c),
              "BFB image 2 at offset 0x40: length 5 (padded to 8) runs past "
              "the end of the input (6 bytes left).");
}

TEST(ParseBfbTest, BadCrcIsReportedNotAnError) {
  Bytes b = ThreeImages();
  // Flip one data bit of bl2 (offset 32 + 24 = 56).
  b[56] ^= 0x01;
  auto got = Parse(b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(got->images[0].crc_ok);
  EXPECT_FALSE(got->images[1].crc_ok);
  EXPECT_EQ(got->images[1].header.image_crc, PaddedCrc("bl2-bin!"));
  EXPECT_EQ(got->images[1].crc_computed, PaddedCrc("cl2-bin!"));
  EXPECT_EQ(got->images[1].sha384, Digest("SHA384", AsBytes("cl2-bin!")));
  EXPECT_TRUE(got->images[2].crc_ok);
  EXPECT_FALSE(got->all_crc_ok);
}

TEST(ParseBfbTest, UnknownImageId) {
  Bytes b;
  Put(b, {.id = 200,  // not in mlx-mkbfb's table
          .len = 4,
          .crc = PaddedCrc("what"),
          .following = Bit(3)});
  PutData(b, "what");
  Put(b, {.id = 3,   // bl31
          .len = 4,  // "bl31" + 4 padding bytes
          .crc = PaddedCrc("bl31"),
          .following = 0});  // last image
  PutData(b, "bl31");
  auto got = Parse(b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->images[0].name, "unknown-200");
  EXPECT_FALSE(got->images[0].known_id);
  EXPECT_TRUE(got->images[0].crc_ok);
  EXPECT_TRUE(got->images[1].known_id);
  EXPECT_TRUE(got->following_consistent);
}

TEST(ParseBfbTest, ZeroImages) {
  ExpectError(Parse({}), "BFB image 0 at offset 0x0: the input is empty.");
  ExpectError(Parse(Bytes(4096, 0x00)),
              "BFB image 0 at offset 0x0: bad magic 0x00000000 (expected "
              "0x13026642).");
  ExpectError(Parse(Bytes(4096, 0xff)),
              "BFB image 0 at offset 0x0: bad magic 0xffffffff (expected "
              "0x13026642).");
}

TEST(ParseBfbTest, TrailingPadding) {
  struct Case {
    Bytes tail;
    BfbTrailing kind;
  };
  const Case cases[] = {
      {Bytes(4096, 0x00), BfbTrailing::kPadding},  // erased eMMC reads 0...
      {Bytes(100, 0xff), BfbTrailing::kPadding},   // ...or 0xFF
      {Bytes(3, 0x00), BfbTrailing::kPadding},     // shorter than a magic
      {Bytes(24, 0x00), BfbTrailing::kPadding},    // a header's worth
  };
  for (const Case& c : cases) {
    Bytes b = ThreeImages();
    const uint64_t end = b.size();
    b.insert(b.end(), c.tail.begin(), c.tail.end());
    auto got = Parse(b);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->images.size(), 3u);
    EXPECT_EQ(got->trailing, c.kind);
    EXPECT_EQ(got->end_offset, end);
    EXPECT_EQ(got->trailing_bytes, c.tail.size());
    EXPECT_EQ(got->total_bytes, b.size());
  }
}

TEST(ParseBfbTest, TrailingGarbage) {
  const Bytes tails[] = {
      ToBytes("hello, world"),
      [] {  // zeros, then 0xFF: not one fill value
        Bytes t(16, 0x00);
        t.insert(t.end(), 16, 0xff);
        return t;
      }(),
      [] {  // a fill with one stray byte far from its start
        Bytes t(3 * kOneMiB, 0xff);
        t[2 * kOneMiB + 17] = 0x00;
        return t;
      }(),
  };
  for (const Bytes& tail : tails) {
    Bytes b = ThreeImages();
    b.insert(b.end(), tail.begin(), tail.end());
    auto got = Parse(b);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->trailing, BfbTrailing::kGarbage) << tail.size();
    EXPECT_EQ(got->trailing_bytes, tail.size());
    EXPECT_EQ(got->total_bytes, b.size());
  }
}

TEST(ParseBfbTest, MagicWithBadVersionIsAnError) {
  struct Case {
    Hdr hdr;
    std::string message;
  };
  const Case cases[] = {
      {{.major = 2, .id = 5},
       "BFB image 1 at offset 0x20: major version 2 (expected 1)."},
      {{.minor = 3, .id = 5},
       "BFB image 1 at offset 0x20: minor version 3 (at most 2 supported)."},
      {{.len_words = 4, .id = 5},
       "BFB image 1 at offset 0x20: header length 32 bytes (expected 24)."},
  };
  for (const Case& c : cases) {
    Bytes b;
    Put(b, {.id = 6,   // bl2-cert
            .len = 5,  // "cert!" + 3 padding bytes
            .crc = PaddedCrc("cert!"),
            .following = Bit(5)});  // bl33 follows (header below)
    PutData(b, "cert!");
    Put(b, c.hdr);
    ExpectError(Parse(b), c.message);
  }
  // At offset 0 as well.
  Bytes b;
  Put(b, {.major = 15});  // the magic, then major 15; all else valid
  ExpectError(Parse(b),
              "BFB image 0 at offset 0x0: major version 15 (expected 1).");
}

TEST(ParseBfbTest, RepeatedIdsAreImageVersions) {
  Bytes b;
  Put(b, {.next_ver = 1,  // the next image is version 1
          .cur_ver = 0,   // this is bl33 version 0
          .id = 5,        // bl33
          .len = 6,
          .crc = PaddedCrc("uefi-0"),
          .following = Bit(5)});  // another bl33 follows
  PutData(b, "uefi-0");
  Put(b, {.next_ver = 0,  // last image
          .cur_ver = 1,   // bl33 version 1
          .id = 5,
          .len = 6,
          .crc = PaddedCrc("uefi-1"),
          .following = 0});
  PutData(b, "uefi-1");
  auto got = Parse(b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->images.size(), 2u);
  EXPECT_EQ(got->images[0].name, "bl33");
  EXPECT_EQ(got->images[1].name, "bl33");
  EXPECT_EQ(got->images[0].header.cur_img_ver, 0);
  EXPECT_EQ(got->images[0].header.next_img_ver, 1);
  EXPECT_EQ(got->images[1].header.cur_img_ver, 1);
  EXPECT_NE(got->images[0].sha384, got->images[1].sha384);
  EXPECT_TRUE(got->following_consistent);
  EXPECT_TRUE(got->all_crc_ok);
}

TEST(ParseBfbTest, FollowingBitmapConsistency) {
  // Wrong bitmap on the first image: reported, not an error.
  Bytes b = ThreeImages();
  b[16] = 0x0b;  // first image's w2 low byte: bits 0, 1, 3 (bit 0 extra)
  auto got = Parse(b);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->following_consistent);
  EXPECT_TRUE(got->all_crc_ok);  // the bitmap is not under the CRC

  // An id >= 64 first: nothing before it needs a bit for it.
  Bytes first;
  Put(first, {.id = 70,  // not in the table, >= 64
              .len = 1,  // "x" + 7 padding bytes
              .crc = PaddedCrc("x"),
              .following = Bit(1)});  // bl2 follows
  PutData(first, "x");
  Put(first, {.id = 1,   // bl2
              .len = 1,  // "y" + 7 padding bytes
              .crc = PaddedCrc("y"),
              .following = 0});  // last image
  PutData(first, "y");
  auto f = Parse(first);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->images[0].name, "unknown-70");
  EXPECT_TRUE(f->following_consistent);

  // An id >= 64 after an image: the bitmap cannot name it.
  Bytes after;
  Put(after, {.id = 1,   // bl2
              .len = 1,  // "y" + 7 padding bytes
              .crc = PaddedCrc("y"),
              .following = 0});  // would need bit 70: impossible
  PutData(after, "y");
  Put(after, {.id = 70,  // not in the table, >= 64
              .len = 1,  // "x" + 7 padding bytes
              .crc = PaddedCrc("x"),
              .following = 0});  // last image
  PutData(after, "x");
  auto a = Parse(after);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->following_consistent);
}

TEST(ParseBfbTest, Limits) {
  BfbLimits two_images;
  two_images.max_images = 2;
  ExpectError(Parse(ThreeImages(), two_images),
              "BFB image 2 at offset 0x40: more than 2 images.");
  EXPECT_TRUE(Parse(ThreeImages(), BfbLimits{.max_images = 3}).ok());

  BfbLimits small;
  small.max_total_bytes = 110;
  Bytes b = ThreeImages();  // 104 bytes
  EXPECT_TRUE(Parse(b, small).ok());
  b.insert(b.end(), 7, 0);  // 111 bytes
  auto got = Parse(b, small);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(got.status().message(), "in-memory BFB is larger than 110 bytes.");
}

// Serves `data`, then fails.
class FailingStream final : public ByteStream {
 public:
  explicit FailingStream(Bytes data) : data_(std::move(data)) {}
  StatusOr<size_t> Read(uint8_t* out, size_t max) override {
    if (pos_ == data_.size()) return UnavailableError("read /dev/x: EIO");
    size_t n = std::min(max, data_.size() - pos_);
    std::memcpy(out, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  std::string Name() const override { return "/dev/x"; }

 private:
  Bytes data_;
  size_t pos_ = 0;
};

TEST(ParseBfbTest, ReadErrorIsUnavailable) {
  Bytes b = ThreeImages();
  b.resize(40);  // inside bl2's header
  FailingStream in(b);
  auto got = ParseBfb(in);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(got.status().message(),
            "BFB read at offset 0x28: read /dev/x: EIO");
}

// Synthesises a BFB holding one 64 MiB + 3 bytes bl33 image and 4 KiB of
// 0xFF fill, computing every byte on the fly; never holds more than the
// current read. Fails the test if a Read asks for more than 1 MiB.
class SyntheticBfbStream final : public ByteStream {
 public:
  static constexpr uint64_t kDataBytes = (64ull << 20) + 3;
  static constexpr uint64_t kFillBytes = 4096;

  static uint8_t DataByte(uint64_t i) {
    return static_cast<uint8_t>((i * 131) ^ (i >> 11) ^ (i >> 23));
  }

  explicit SyntheticBfbStream(uint32_t crc) {
    Put(header_, {.id = 5,            // bl33
                  .len = kDataBytes,  // 64 MiB + 3
                  .crc = crc,         // computed by the test
                  .following = 0});
  }

  uint64_t total() const { return 24 + kDataBytes + 5 + kFillBytes; }

  StatusOr<size_t> Read(uint8_t* out, size_t max) override {
    EXPECT_LE(max, kOneMiB) << "a read larger than the parser's buffer";
    largest_request_ = std::max(largest_request_, max);
    size_t n = static_cast<size_t>(std::min<uint64_t>(max, total() - pos_));
    for (size_t k = 0; k < n; ++k) out[k] = ByteAt(pos_ + k);
    pos_ += n;
    return n;
  }
  std::string Name() const override { return "synthetic"; }
  uint64_t position() const { return pos_; }
  size_t largest_request() const { return largest_request_; }

 private:
  uint8_t ByteAt(uint64_t at) const {
    if (at < 24) return header_[at];
    at -= 24;
    if (at < kDataBytes) return DataByte(at);
    at -= kDataBytes;
    if (at < 5) return 0x00;  // image padding
    return 0xff;              // fill
  }
  Bytes header_;
  uint64_t pos_ = 0;
  size_t largest_request_ = 0;
};

TEST(ParseBfbTest, SixtyFourMiBImageStreamsWithBoundedMemory) {
  // Expected values, computed incrementally in 64 KiB pieces.
  using Md = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;
  Md sha384(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  ASSERT_EQ(EVP_DigestInit_ex(sha384.get(), EVP_sha384(), nullptr), 1);
  uint32_t crc = Crc({});
  std::vector<uint8_t> piece(64 * 1024);
  for (uint64_t at = 0; at < SyntheticBfbStream::kDataBytes;) {
    size_t n = static_cast<size_t>(
        std::min<uint64_t>(piece.size(), SyntheticBfbStream::kDataBytes - at));
    for (size_t k = 0; k < n; ++k) {
      piece[k] = SyntheticBfbStream::DataByte(at + k);
    }
    ASSERT_EQ(EVP_DigestUpdate(sha384.get(), piece.data(), n), 1);
    crc = Crc(ByteView(piece.data(), n), crc);
    at += n;
  }
  const uint8_t zeros[5] = {};
  crc = Crc(ByteView(zeros, 5), crc);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  ASSERT_EQ(EVP_DigestFinal_ex(sha384.get(), md, &len), 1);
  const std::string want_sha384 = HexEncode(ByteView(md, len));

  SyntheticBfbStream in(crc);
  auto got = ParseBfb(in);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->images.size(), 1u);
  EXPECT_EQ(got->images[0].header.image_len, SyntheticBfbStream::kDataBytes);
  EXPECT_EQ(got->images[0].sha384, want_sha384);
  EXPECT_TRUE(got->images[0].crc_ok);
  EXPECT_EQ(got->trailing, BfbTrailing::kPadding);
  EXPECT_EQ(got->trailing_bytes, SyntheticBfbStream::kFillBytes);
  EXPECT_EQ(got->total_bytes, in.total());
  EXPECT_EQ(in.position(), in.total());  // read to the end
  EXPECT_GT(in.largest_request(), 0u);
  EXPECT_LE(in.largest_request(), kOneMiB);
}

// Runs the real sha384sum on `path`; "" if it could not run.
std::string Sha384sum(const std::string& path) {
  std::string cmd = "sha384sum '" + path + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "";
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, p);
  ::pclose(p);
  std::string out(buf, n);
  return out.substr(0, out.find(' '));
}

void WriteBytes(const std::string& path, ByteView data) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size()));
  ASSERT_TRUE(out.good()) << path;
}

Bytes ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
}

TEST(ParseBfbTest, FileDigestsMatchSha384sumOfExtractedImages) {
  if (Sha384sum("/dev/null").size() != 96) {
    GTEST_SKIP() << "sha384sum (coreutils) is not available";
  }
  testing::TempDir dir;
  // Three image files, as one would pass to mlx-mkbfb --bl2 ... --bl31 ...
  struct Image {
    uint8_t id;
    std::string file;
    Bytes data;
  };
  std::vector<Image> images = {
      {1, "bl2.bin", {}}, {3, "bl31.bin", {}}, {59, "boot-args.txt", {}}};
  for (size_t k = 0; k < 1001; ++k) {
    images[0].data.push_back(static_cast<uint8_t>(k * 7 + 1));
  }
  images[1].data.assign(3 * kOneMiB + 5, 0);  // crosses the 1 MiB buffer
  for (size_t k = 0; k < images[1].data.size(); ++k) {
    images[1].data[k] = static_cast<uint8_t>(k ^ (k >> 9));
  }
  images[2].data = ToBytes("console=hvc0 console=ttyAMA0 earlycon=pl011\n");
  std::vector<std::pair<uint8_t, Bytes>> parts;
  for (const Image& i : images) {
    WriteBytes(dir / i.file, i.data);
    parts.emplace_back(i.id, ReadBytes(dir / i.file));
  }
  const std::string bfb_path = dir / "test.bfb";
  WriteBytes(bfb_path, BuildBfb(parts));

  auto in = OpenFileByteStream(bfb_path);
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  auto got = ParseBfb(**in);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->images.size(), 3u);
  EXPECT_TRUE(got->all_crc_ok);
  EXPECT_TRUE(got->following_consistent);

  // Extract as `mlx-mkbfb -x` does (data without padding), then hash.
  const Bytes bfb = ReadBytes(bfb_path);
  for (size_t k = 0; k < images.size(); ++k) {
    const BfbImage& img = got->images[k];
    const std::string dump = dir / ("dump-" + img.name + "-v0");
    WriteBytes(dump,
               ByteView(bfb).subspan(img.data_offset, img.header.image_len));
    const std::string want = Sha384sum(dump);
    ASSERT_EQ(want.size(), 96u) << dump;
    EXPECT_EQ(img.sha384, want) << img.name;
    EXPECT_EQ(Sha384sum(dir / images[k].file), want) << images[k].file;
  }
}

TEST(FormatBfbTableTest, RowsAndTrailingLine) {
  Bytes b;
  Put(b, {.id = 59,                 // boot-args
          .len = 3,                 // "abc" + 5 padding bytes
          .crc = PaddedCrc("abc"),  // correct: ok
          .following = 0});         // cannot name id 200: inconsistent
  PutData(b, "abc");
  Put(b, {.cur_ver = 1,      // image version 1
          .id = 200,         // not in the table
          .len = 3,          // "abc" + 5 padding bytes
          .crc = 0x1234,     // wrong on purpose: BAD
          .following = 0});  // last image
  PutData(b, "abc");
  b.insert(b.end(), 16, 0xff);
  auto got = Parse(b);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const std::string abc384 =
      "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
      "8086072ba1e7cc2358baeca134c825a7";
  const std::string want =
      "   #  offset         id  name             ver      length  crc   "
      "sha384\n"
      "   0  0x0            59  boot-args          0           3  ok    " +
      abc384 + "\n" +
      "   1  0x20          200  unknown-200        1           3  BAD   " +
      abc384 + "\n" +
      "end offset 0x40 (64 bytes); trailing: padding, 16 bytes at offset "
      "0x40; total 80 bytes\n"
      "following_images bitmaps: INCONSISTENT\n";
  EXPECT_EQ(FormatBfbTable(*got), want);

  auto clean = Parse(ThreeImages());
  ASSERT_TRUE(clean.ok());
  const std::string table = FormatBfbTable(*clean);
  EXPECT_THAT(
      table,
      HasSubstr(
          "end offset 0x68 (104 bytes); trailing: none; total 104 bytes\n"));
  EXPECT_THAT(table, HasSubstr("following_images bitmaps: consistent\n"));
}

TEST(BfbLayoutJsonTest, DocumentedShapeAndRoundTrip) {
  Bytes b = ThreeImages();
  b.insert(b.end(), 8, 0);
  auto got = Parse(b);
  ASSERT_TRUE(got.ok());
  const nlohmann::json j = nlohmann::json::parse(BfbLayoutJson(*got));
  EXPECT_EQ(j, bluefield::BfbLayoutToJson(*got));
  EXPECT_EQ(j["format"], "dpuaudit-bfb-layout/1");
  EXPECT_EQ(j["end_offset"], 104);
  EXPECT_EQ(j["total_bytes"], 112);
  EXPECT_EQ(
      j["trailing"],
      (nlohmann::json{{"kind", "padding"}, {"offset", 104}, {"bytes", 8}}));
  EXPECT_EQ(j["all_crc_ok"], true);
  EXPECT_EQ(j["following_consistent"], true);
  const nlohmann::json& i1 = j["images"][1];
  EXPECT_EQ(i1["index"], 1);
  EXPECT_EQ(i1["offset"], 32);
  EXPECT_EQ(i1["id"], 1);
  EXPECT_EQ(i1["name"], "bl2");
  EXPECT_EQ(i1["known"], true);
  EXPECT_EQ(i1["major"], 1);
  EXPECT_EQ(i1["minor"], 2);
  EXPECT_EQ(i1["cur_img_ver"], 0);
  EXPECT_EQ(i1["next_img_ver"], 0);
  EXPECT_EQ(i1["length"], 8);
  EXPECT_EQ(i1["crc"], PaddedCrc("bl2-bin!"));
  EXPECT_EQ(i1["crc_computed"], PaddedCrc("bl2-bin!"));
  EXPECT_EQ(i1["crc_ok"], true);
  EXPECT_EQ(i1["following_images"], "0x0000000000000008");
  EXPECT_EQ(i1["sha384"], Digest("SHA384", AsBytes("bl2-bin!")));
  EXPECT_EQ(i1.size(), 17u);

  auto back = bluefield::BfbLayoutFromJson(j, "layout");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *got);
}

}  // namespace
}  // namespace dpuaudit::bluefield
