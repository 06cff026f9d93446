// The BlueField boot stream (BFB) format (docs/bluefield.md#bfb; source of
// truth: rshim-user-space scripts/mlx-mkbfb, `class ImageHdr`, `image_list`).
//
// A BFB is a concatenation of images. Each image is a 24-byte little-endian
// header of three u64 words, then `image_len` bytes of data, then zero
// padding to a multiple of 8 bytes:
//   w0 = magic 0x13026642 (bits 0-31) | major (32-35) | minor (36-39)
//        | next_img_ver (44-47) | cur_img_ver (48-51) | hdr_len/8 (52-55)
//        | image_id (56-63)
//   w1 = image_len (bits 0-31) | image_crc (32-63)
//   w2 = following_images (bitmap of the image ids that follow)
// image_crc is the zlib CRC-32 of the data AND its padding. major must be 1,
// minor <= 2, hdr_len 24; the version fields exist only for minor <= 2.
//
// Guarantees (ParseBfb):
//  - streams: memory stays bounded (one 1 MiB buffer) whatever the input
//    size; each image's SHA-256, SHA-384 and SHA-512 are over its data
//    WITHOUT padding (what `mlx-mkbfb -x` extracts, so `sha384sum` of an
//    extracted image matches), the CRC over data and padding;
//  - a CRC mismatch or an unknown image id is reported per image, never an
//    error; an image id not in the table is named "unknown-<id>";
//  - parsing stops safely at the first 24 bytes that do not begin with the
//    magic after at least one image: the rest is "trailing" data, classified
//    as padding (all 0x00 or all 0xFF, e.g. the unused end of a boot
//    partition) or garbage, with its offset and length;
//  - errors (INVALID_ARGUMENT, message naming the byte offset and image
//    index): no image at offset 0 (empty input, bad magic), a header cut
//    short, a magic followed by a bad major/minor/header length, an image
//    whose length runs past the end of the input, more than
//    BfbLimits::max_images images. UNAVAILABLE for read errors (the
//    stream's own status, prefixed with the offset); RESOURCE_EXHAUSTED for
//    an input longer than BfbLimits::max_total_bytes.
//  - "a header cut short": fewer than 24 bytes left that begin with the
//    magic. Fewer than 24 bytes left WITHOUT the magic, after at least one
//    image, are trailing data like any other bytes without the magic.
//  - an image needs its data AND its padding to be present; "runs past the
//    end" names how many bytes were left after its header;
//  - following_consistent: image i's bitmap equals the OR of (1 << id) over
//    the images after it (a repeated id is set in the bitmap of its earlier
//    copies, as mlx-mkbfb writes image versions). An id >= 64 (not in the
//    table; mlx-mkbfb cannot write it) cannot be named in a 64-bit bitmap:
//    it makes every image BEFORE it inconsistent, and is harmless first.
//  - on success the input has been read to its end (total_bytes), so a
//    wrapper stream sees every byte exactly once.
// Does not: verify signatures or certificates inside the images (that is
// the boot ROM's and bfsbverify's job), decompress images, or check that the
// following_images bitmaps are consistent (reported, not enforced).
#ifndef DPUAUDIT_BLUEFIELD_BFB_H_
#define DPUAUDIT_BLUEFIELD_BFB_H_

#include <cstdint>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/byte_stream.h"
#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::bluefield {

inline constexpr uint32_t kBfbMagic = 0x13026642;
inline constexpr size_t kBfbHeaderBytes = 24;
inline constexpr uint8_t kBfbMajor = 1;
inline constexpr uint8_t kBfbMaxMinor = 2;

struct BfbImageType {
  uint8_t id;
  std::string_view name;         // mlx-mkbfb option name: "bl31", "psc-fw"
  std::string_view description;  // "EL3 Runtime Firmware BL3-1 bin"
};

// The whole mlx-mkbfb image_list, in its order.
const std::vector<BfbImageType>& BfbImageTypes();
// nullptr when the id is not in the table.
const BfbImageType* FindBfbImageType(uint8_t id);
// "bl31", or "unknown-<id>" for an id not in the table.
std::string BfbImageName(uint8_t id);
// The id for a name from the table ("bl31" -> 3); nullopt otherwise.
std::optional<uint8_t> BfbImageIdByName(std::string_view name);

struct BfbHeader {
  uint32_t magic = kBfbMagic;
  uint8_t major = kBfbMajor;
  uint8_t minor = kBfbMaxMinor;
  uint8_t next_img_ver = 0;
  uint8_t cur_img_ver = 0;
  uint8_t header_len = kBfbHeaderBytes;  // bytes (field holds /8)
  uint8_t image_id = 0;
  uint32_t image_len = 0;
  uint32_t image_crc = 0;
  uint64_t following_images = 0;
  bool operator==(const BfbHeader&) const = default;
};

// Exactly 24 bytes, as mlx-mkbfb ImageHdr.get_bits() writes them.
Bytes EncodeBfbHeader(const BfbHeader& h);
// Strict decode of 24 bytes found at `offset` (used in messages).
StatusOr<BfbHeader> DecodeBfbHeader(ByteView bytes, uint64_t offset);

struct BfbImage {
  size_t index = 0;          // 0-based position in the stream
  uint64_t offset = 0;       // of the header
  uint64_t data_offset = 0;  // offset + 24
  BfbHeader header;
  std::string name;          // BfbImageName(header.image_id)
  bool known_id = false;     // the id is in the table
  uint64_t padded_length = 0;  // image_len rounded up to 8
  uint32_t crc_computed = 0;
  bool crc_ok = false;
  std::string sha256, sha384, sha512;  // lower-case hex, data w/o padding
  bool operator==(const BfbImage&) const = default;
};

enum class BfbTrailing { kNone, kPadding, kGarbage };
std::string_view BfbTrailingName(BfbTrailing t);  // "none"|"padding"|"garbage"

struct BfbLayout {
  std::vector<BfbImage> images;
  uint64_t end_offset = 0;       // first byte after the last image
  uint64_t total_bytes = 0;      // bytes read from the input
  BfbTrailing trailing = BfbTrailing::kNone;
  uint64_t trailing_bytes = 0;   // total_bytes - end_offset
  bool all_crc_ok = false;
  bool following_consistent = false;  // every bitmap names exactly the ids after it
  bool operator==(const BfbLayout&) const = default;
};

struct BfbLimits {
  size_t max_images = 4096;
  uint64_t max_total_bytes = 16ull << 30;  // 16 GiB
};

// Sees each image's data (without padding) as ParseBfb streams it, in
// chunks, so a caller can look inside images without a second pass or a
// copy of the file (bluefield/bfb_info.h reads the version strings this
// way). BeginImage comes after the header is decoded; ImageData chunks
// follow in order and add up to image_len unless the input is cut short
// (ParseBfb then fails).
class BfbImageObserver {
 public:
  virtual ~BfbImageObserver() = default;
  virtual void BeginImage(const BfbImage& image) = 0;
  virtual void ImageData(const uint8_t* data, size_t n) = 0;
};

StatusOr<BfbLayout> ParseBfb(ByteStream& in, const BfbLimits& limits = {},
                             BfbImageObserver* observer = nullptr);
// Convenience for in-memory data (tests, fuzzing).
StatusOr<BfbLayout> ParseBfbBytes(ByteView data, const BfbLimits& limits = {});

// Builds a BFB from (image id, data) pairs exactly as mlx-mkbfb does:
// headers with major 1 / minor 2, CRC-32 over data + zero padding, and each
// following_images bitmap naming the ids after it. For tests and fixtures.
// Images are written in the given order (mlx-mkbfb's --expert order); an id
// >= 64 gets no bit in the bitmaps (mlx-mkbfb would refuse it). Each image
// must be shorter than 4 GiB (the length field is 32 bits).
Bytes BuildBfb(const std::vector<std::pair<uint8_t, Bytes>>& images);

// For `dpuaudit bfb inspect`: a table (id, name, versions, offset, length,
// CRC ok, SHA-384) and a trailing-data line; and the same as JSON text:
// {"format":"dpuaudit-bfb-layout/1","images":[{"index","offset","id","name",
//  "known","major","minor","cur_img_ver","next_img_ver","length","crc",
//  "crc_computed","crc_ok","following_images","sha256","sha384","sha512"}],
//  "end_offset","total_bytes","trailing":{"kind","offset","bytes"},
//  "all_crc_ok","following_consistent"}
// "crc_computed" (what the data hashed to) and "following_images" (the
// bitmap, "0x" + 16 lower-case hex digits: a u64 does not survive every JSON
// reader as a number) make the JSON a lossless image of BfbLayout, so
// bluefield::BfbLayoutFromJson(bluefield::BfbLayoutToJson(l)) == l. The table: one row per image
// (# offset id name ver=cur_img_ver length crc=ok|BAD sha384), then the
// trailing-data / end-offset line and a following_images line.
std::string FormatBfbTable(const BfbLayout& layout);
std::string BfbLayoutJson(const BfbLayout& layout);
// JSON <-> BfbLayout (the object BfbLayoutJson prints); strict: unknown
// members and wrong types are INVALID_ARGUMENT naming `path`.
nlohmann::json BfbLayoutToJson(const BfbLayout& layout);
StatusOr<BfbLayout> BfbLayoutFromJson(const nlohmann::json& j, std::string_view path);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_BFB_H_
