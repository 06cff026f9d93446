// The BFB parser, builder and printers (bfb.h), and the layout's JSON form
// (bfb.h).
//
// One streaming pass: every byte of the input goes once through a single
// 1 MiB buffer (BoundedReader) and is fed to the CRC-32 and the three
// digests of the image it belongs to. Nothing grows with the input size.
// nlohmann exceptions are caught here and never leave this file.
#include "bluefield/bfb.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "common/digest.h"
#include "common/strict_json.h"

namespace dpuaudit::bluefield {
namespace {

using nlohmann::json;

// The one buffer of a parse. Reads never ask for more than this.
constexpr size_t kBufferBytes = 1 << 20;
constexpr std::string_view kLayoutFormat = "dpuaudit-bfb-layout/1";

// Header word 0 (mlx-mkbfb ImageHdr.get_bits):
//   63      56 55  52 51  48 47  44 43  40 39  36 35  32 31            0
//  +----------+------+------+------+------+------+------+---------------+
//  | image_id |hdr/8 | cur  | next | (0)  |minor |major | 0x13026642    |
//  +----------+------+------+------+------+------+------+---------------+
// Word 1: image_crc (63-32) | image_len (31-0). Word 2: following_images.
constexpr int kMajorShift = 32;
constexpr int kMinorShift = 36;
constexpr int kNextVerShift = 44;
constexpr int kCurVerShift = 48;
constexpr int kHeaderLenShift = 52;
constexpr int kImageIdShift = 56;
constexpr uint64_t kNibble = 0xF;

// ---- number formatting ----

uint64_t Le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t Le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

void PutLe64(uint64_t v, uint8_t* p) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t PaddedLength(uint64_t len) { return (len + 7) & ~uint64_t{7}; }

// "BFB image 3 at offset 0x1a08"
std::string Where(size_t index, uint64_t offset) {
  return "BFB image " + std::to_string(index) + " at offset " + HexNumber(offset);
}

// ---- header decoding ----

// Decodes 24 bytes already known to be that long; errors start with `where`.
StatusOr<BfbHeader> DecodeHeader(const uint8_t* p, const std::string& where) {
  const uint64_t w0 = Le64(p);
  const uint64_t w1 = Le64(p + 8);
  const uint64_t w2 = Le64(p + 16);
  BfbHeader h;
  h.magic = static_cast<uint32_t>(w0);
  h.major = static_cast<uint8_t>((w0 >> kMajorShift) & kNibble);
  h.minor = static_cast<uint8_t>((w0 >> kMinorShift) & kNibble);
  const uint8_t len_words =
      static_cast<uint8_t>((w0 >> kHeaderLenShift) & kNibble);
  h.header_len = static_cast<uint8_t>(len_words * 8);
  h.image_id = static_cast<uint8_t>(w0 >> kImageIdShift);
  h.image_len = static_cast<uint32_t>(w1);
  h.image_crc = static_cast<uint32_t>(w1 >> 32);
  h.following_images = w2;
  // mlx-mkbfb: "The next/cur image version fields were only added in minor 2".
  if (h.minor <= kBfbMaxMinor) {
    h.next_img_ver = static_cast<uint8_t>((w0 >> kNextVerShift) & kNibble);
    h.cur_img_ver = static_cast<uint8_t>((w0 >> kCurVerShift) & kNibble);
  }
  if (h.magic != kBfbMagic) {
    return InvalidArgumentError(where + ": bad magic " + Hex32(h.magic) +
                                " (expected " + Hex32(kBfbMagic) + ").");
  }
  if (h.major != kBfbMajor) {
    return InvalidArgumentError(where + ": major version " +
                                std::to_string(h.major) + " (expected " +
                                std::to_string(kBfbMajor) + ").");
  }
  if (h.minor > kBfbMaxMinor) {
    return InvalidArgumentError(where + ": minor version " +
                                std::to_string(h.minor) + " (at most " +
                                std::to_string(kBfbMaxMinor) + " supported).");
  }
  if (h.header_len != kBfbHeaderBytes) {
    return InvalidArgumentError(
        where + ": header length " + std::to_string(h.header_len) +
        " bytes (expected " + std::to_string(kBfbHeaderBytes) + ").");
  }
  return h;
}

// ---- digests ----

// SHA-256, SHA-384 and SHA-512 of one image's data, fed incrementally. The
// three contexts are allocated once per parse and restarted per image.
class ImageDigests {
 public:
  static StatusOr<ImageDigests> New() {
    DPA_ASSIGN_OR_RETURN(
        MultiDigest d,
        MultiDigest::New(
            {DigestAlg::kSha256, DigestAlg::kSha384, DigestAlg::kSha512},
            "preparing BFB image digests"));
    return ImageDigests(std::move(d));
  }
  Status Start() { return d_.Start("starting a BFB image digest"); }
  Status Update(const uint8_t* data, size_t n) {
    return d_.Update(ByteView(data, n), "updating a BFB image digest");
  }
  Status Finish(BfbImage& image) {
    DPA_ASSIGN_OR_RETURN(std::vector<Bytes> d,
                         d_.FinishAll("finishing a BFB image digest"));
    image.sha256 = HexEncode(d[0]);
    image.sha384 = HexEncode(d[1]);
    image.sha512 = HexEncode(d[2]);
    return OkStatus();
  }

 private:
  explicit ImageDigests(MultiDigest d) : d_(std::move(d)) {}
  MultiDigest d_;
};

uint32_t Crc32Update(uint32_t crc, const uint8_t* data, size_t n) {
  // n <= kBufferBytes, which fits zlib's uInt.
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(n)));
}

// ---- the bounded reader ----

// Sequential access to a ByteStream through one kBufferBytes buffer, with
// the absolute offset of the cursor. Peeking (Fill) keeps bytes in the
// buffer; Pass hands bytes to a sink without keeping them.
class BoundedReader {
 public:
  BoundedReader(ByteStream& in, uint64_t max_total)
      : in_(in), max_total_(max_total), buf_(kBufferBytes) {}

  uint64_t offset() const { return offset_; }
  size_t available() const { return end_ - pos_; }
  const uint8_t* data() const { return buf_.data() + pos_; }

  // Tries to make `n` (<= kBufferBytes) bytes available at the cursor;
  // returns how many are (fewer only at the end of the input).
  StatusOr<size_t> Fill(size_t n) {
    while (available() < n && !eof_) {
      DPA_ASSIGN_OR_RETURN(size_t got, ReadMore());
      (void)got;
    }
    return available();
  }

  // Passes up to `n` bytes to sink(const uint8_t*, size_t) -> Status, in
  // chunks of at most kBufferBytes; returns how many were passed (fewer
  // than `n` only at the end of the input).
  template <typename Sink>
  StatusOr<uint64_t> Pass(uint64_t n, Sink&& sink) {
    uint64_t passed = 0;
    while (passed < n) {
      if (available() == 0) {
        DPA_ASSIGN_OR_RETURN(size_t got, ReadMore());
        if (got == 0) break;
      }
      size_t chunk =
          static_cast<size_t>(std::min<uint64_t>(available(), n - passed));
      DPA_RETURN_IF_ERROR(sink(data(), chunk));
      Consume(chunk);
      passed += chunk;
    }
    return passed;
  }

  void Consume(size_t n) {
    pos_ += n;
    offset_ += n;
  }

 private:
  // One Read into the free end of the buffer (compacting first if the
  // buffer is full). Returns the bytes read; 0 marks the end of the input.
  StatusOr<size_t> ReadMore() {
    if (eof_) return size_t{0};
    if (pos_ == end_) {
      pos_ = end_ = 0;
    } else if (end_ == buf_.size()) {
      std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
      end_ -= pos_;
      pos_ = 0;
    }
    const size_t room = buf_.size() - end_;
    auto got = in_.Read(buf_.data() + end_, room);
    if (!got.ok()) {
      return got.status().WithPrefix("BFB read at offset " +
                                     HexNumber(offset_ + available()));
    }
    if (*got > room) {
      return InternalError(in_.Name() + " returned " + std::to_string(*got) +
                           " bytes for a read of at most " +
                           std::to_string(room) + ".");
    }
    if (*got == 0) {
      eof_ = true;
      return size_t{0};
    }
    end_ += *got;
    total_read_ += *got;
    if (total_read_ > max_total_) {
      return ResourceExhaustedError(in_.Name() + " is larger than " +
                                    std::to_string(max_total_) + " bytes.");
    }
    return *got;
  }

  ByteStream& in_;
  const uint64_t max_total_;
  Bytes buf_;
  size_t pos_ = 0;       // cursor in buf_
  size_t end_ = 0;       // end of valid bytes in buf_
  uint64_t offset_ = 0;  // absolute offset of the cursor
  uint64_t total_read_ = 0;
  bool eof_ = false;
};

// Reads one image (header already decoded at the cursor) and its padding.
Status ReadImage(BoundedReader& r, ImageDigests& digests, BfbImage& image,
                 BfbImageObserver* observer) {
  const std::string where = Where(image.index, image.offset);
  r.Consume(kBfbHeaderBytes);
  const uint64_t len = image.header.image_len;
  uint32_t crc = Crc32Update(0, nullptr, 0);
  DPA_RETURN_IF_ERROR(digests.Start());
  DPA_ASSIGN_OR_RETURN(uint64_t data_got,
                       r.Pass(len, [&](const uint8_t* p, size_t n) -> Status {
                         crc = Crc32Update(crc, p, n);
                         if (observer != nullptr) observer->ImageData(p, n);
                         return digests.Update(p, n);
                       }));
  uint64_t pad_got = 0;
  if (data_got == len) {
    DPA_ASSIGN_OR_RETURN(pad_got,
                         r.Pass(image.padded_length - len,
                                [&](const uint8_t* p, size_t n) -> Status {
                                  crc = Crc32Update(crc, p, n);
                                  return OkStatus();
                                }));
  }
  if (data_got + pad_got < image.padded_length) {
    std::string what = "length " + std::to_string(len);
    if (image.padded_length != len) {
      what += " (padded to " + std::to_string(image.padded_length) + ")";
    }
    return InvalidArgumentError(
        where + ": " + what + " runs past the end of the input (" +
        std::to_string(data_got + pad_got) + " bytes left).");
  }
  DPA_RETURN_IF_ERROR(digests.Finish(image));
  image.crc_computed = crc;
  image.crc_ok = crc == image.header.image_crc;
  return OkStatus();
}

bool FollowingConsistent(const std::vector<BfbImage>& images) {
  uint64_t after = 0;            // ids of the images after the current one
  bool unrepresentable = false;  // an id >= 64 follows
  for (size_t i = images.size(); i-- > 0;) {
    const BfbHeader& h = images[i].header;
    if (unrepresentable || h.following_images != after) return false;
    if (h.image_id >= 64) {
      unrepresentable = true;
    } else {
      after |= uint64_t{1} << h.image_id;
    }
  }
  return true;
}

bool AllCrcOk(const std::vector<BfbImage>& images) {
  return !images.empty() &&
         std::all_of(images.begin(), images.end(),
                     [](const BfbImage& i) { return i.crc_ok; });
}

// ---- strict JSON reading ----

Status JsonError(const std::string& path, const std::string& what) {
  return InvalidArgumentError(path + " " + what + ".");
}

// Exactly the members `known` (in key order, so "is required" names the
// first missing one alphabetically).
Status CheckMembers(const json& j, const std::string& path,
                    std::initializer_list<std::string_view> known) {
  DPA_RETURN_IF_ERROR(strict_json::RequireOnlyMembers(j, path, known));
  return strict_json::RequireMembers(j, path, known);
}

StatusOr<uint64_t> GetU64(const json& j, const std::string& path,
                          uint64_t max = UINT64_MAX) {
  uint64_t v = 0;
  if (j.is_number_unsigned()) {
    v = j.get<uint64_t>();
  } else if (j.is_number_integer() && j.get<int64_t>() >= 0) {
    v = static_cast<uint64_t>(j.get<int64_t>());
  } else {
    return JsonError(path, "must be a non-negative integer");
  }
  if (v > max) {
    return JsonError(path,
                     std::to_string(v) + " exceeds " + std::to_string(max));
  }
  return v;
}

StatusOr<bool> GetBool(const json& j, const std::string& path) {
  if (!j.is_boolean()) return JsonError(path, "must be a boolean");
  return j.get<bool>();
}

StatusOr<std::string> GetString(const json& j, const std::string& path) {
  if (!j.is_string()) return JsonError(path, "must be a string");
  return j.get<std::string>();
}

StatusOr<std::string> GetDigest(const json& j, const std::string& path,
                                size_t hex_digits) {
  DPA_ASSIGN_OR_RETURN(std::string s, GetString(j, path));
  if (s.size() != hex_digits || !IsLowerHex(s)) {
    return JsonError(path, "is not " + std::to_string(hex_digits) +
                               " lower-case hex digits");
  }
  return s;
}

StatusOr<uint64_t> GetBitmap(const json& j, const std::string& path) {
  DPA_ASSIGN_OR_RETURN(std::string s, GetString(j, path));
  if (s.size() != 18 || s.compare(0, 2, "0x") != 0 ||
      !IsLowerHex(std::string_view(s).substr(2))) {
    return JsonError(path, "is not \"0x\" and 16 lower-case hex digits");
  }
  return std::stoull(s.substr(2), nullptr, 16);
}

StatusOr<BfbImage> ImageFromJson(const json& j, const std::string& path,
                                 size_t index) {
  DPA_RETURN_IF_ERROR(CheckMembers(
      j, path,
      {"crc", "crc_computed", "crc_ok", "cur_img_ver", "following_images",
       "id", "index", "known", "length", "major", "minor", "name",
       "next_img_ver", "offset", "sha256", "sha384", "sha512"}));
  BfbImage image;
  DPA_ASSIGN_OR_RETURN(uint64_t idx, GetU64(j["index"], path + ".index"));
  if (idx != index) {
    return JsonError(path + ".index", std::to_string(idx) +
                                          " is not the image's position " +
                                          std::to_string(index));
  }
  image.index = index;
  DPA_ASSIGN_OR_RETURN(image.offset, GetU64(j["offset"], path + ".offset"));
  if (image.offset > UINT64_MAX - kBfbHeaderBytes) {
    return JsonError(path + ".offset", "is too large");
  }
  image.data_offset = image.offset + kBfbHeaderBytes;
  BfbHeader& h = image.header;
  DPA_ASSIGN_OR_RETURN(uint64_t id, GetU64(j["id"], path + ".id", 255));
  h.image_id = static_cast<uint8_t>(id);
  DPA_ASSIGN_OR_RETURN(uint64_t major, GetU64(j["major"], path + ".major", 15));
  if (major != kBfbMajor) {
    return JsonError(path + ".major", std::to_string(major) + " is not " +
                                          std::to_string(kBfbMajor));
  }
  h.major = kBfbMajor;
  DPA_ASSIGN_OR_RETURN(uint64_t minor,
                       GetU64(j["minor"], path + ".minor", kBfbMaxMinor));
  h.minor = static_cast<uint8_t>(minor);
  DPA_ASSIGN_OR_RETURN(uint64_t cur,
                       GetU64(j["cur_img_ver"], path + ".cur_img_ver", 15));
  h.cur_img_ver = static_cast<uint8_t>(cur);
  DPA_ASSIGN_OR_RETURN(uint64_t next,
                       GetU64(j["next_img_ver"], path + ".next_img_ver", 15));
  h.next_img_ver = static_cast<uint8_t>(next);
  DPA_ASSIGN_OR_RETURN(uint64_t len,
                       GetU64(j["length"], path + ".length", UINT32_MAX));
  h.image_len = static_cast<uint32_t>(len);
  DPA_ASSIGN_OR_RETURN(uint64_t crc,
                       GetU64(j["crc"], path + ".crc", UINT32_MAX));
  h.image_crc = static_cast<uint32_t>(crc);
  DPA_ASSIGN_OR_RETURN(
      h.following_images,
      GetBitmap(j["following_images"], path + ".following_images"));
  DPA_ASSIGN_OR_RETURN(
      uint64_t computed,
      GetU64(j["crc_computed"], path + ".crc_computed", UINT32_MAX));
  image.crc_computed = static_cast<uint32_t>(computed);
  DPA_ASSIGN_OR_RETURN(image.crc_ok, GetBool(j["crc_ok"], path + ".crc_ok"));
  if (image.crc_ok != (image.crc_computed == h.image_crc)) {
    return JsonError(path + ".crc_ok",
                     std::string("is ") + (image.crc_ok ? "true" : "false") +
                         " but crc and crc_computed " +
                         (image.crc_ok ? "differ" : "are equal"));
  }
  DPA_ASSIGN_OR_RETURN(std::string name, GetString(j["name"], path + ".name"));
  image.name = BfbImageName(h.image_id);
  if (name != image.name) {
    return JsonError(path + ".name", "\"" + name + "\" is not the name of id " +
                                         std::to_string(id) + " (\"" +
                                         image.name + "\")");
  }
  DPA_ASSIGN_OR_RETURN(image.known_id, GetBool(j["known"], path + ".known"));
  if (image.known_id != (FindBfbImageType(h.image_id) != nullptr)) {
    return JsonError(path + ".known", std::string("is ") +
                                          (image.known_id ? "true" : "false") +
                                          " for id " + std::to_string(id));
  }
  image.padded_length = PaddedLength(h.image_len);
  DPA_ASSIGN_OR_RETURN(image.sha256,
                       GetDigest(j["sha256"], path + ".sha256", 64));
  DPA_ASSIGN_OR_RETURN(image.sha384,
                       GetDigest(j["sha384"], path + ".sha384", 96));
  DPA_ASSIGN_OR_RETURN(image.sha512,
                       GetDigest(j["sha512"], path + ".sha512", 128));
  return image;
}

StatusOr<BfbLayout> LayoutFromJson(const json& j, const std::string& path) {
  DPA_RETURN_IF_ERROR(
      CheckMembers(j, path,
                   {"all_crc_ok", "end_offset", "following_consistent",
                    "format", "images", "total_bytes", "trailing"}));
  DPA_ASSIGN_OR_RETURN(std::string format,
                       GetString(j["format"], path + ".format"));
  if (format != kLayoutFormat) {
    return JsonError(path + ".format", "\"" + format + "\" is not \"" +
                                           std::string(kLayoutFormat) + "\"");
  }
  const json& images = j["images"];
  if (!images.is_array())
    return JsonError(path + ".images", "must be an array");
  if (images.empty()) {
    return JsonError(path + ".images", "must hold at least one image");
  }
  const size_t max_images = BfbLimits{}.max_images;
  if (images.size() > max_images) {
    return JsonError(
        path + ".images",
        "holds more than " + std::to_string(max_images) + " images");
  }
  BfbLayout layout;
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string at = path + ".images[" + std::to_string(i) + "]";
    DPA_ASSIGN_OR_RETURN(BfbImage image, ImageFromJson(images[i], at, i));
    if (image.offset != expected_offset) {
      return JsonError(at + ".offset",
                       std::to_string(image.offset) + " is not " +
                           std::to_string(expected_offset) +
                           (i == 0 ? "" : ", the end of the previous image"));
    }
    expected_offset = image.data_offset + image.padded_length;
    layout.images.push_back(std::move(image));
  }
  DPA_ASSIGN_OR_RETURN(layout.end_offset,
                       GetU64(j["end_offset"], path + ".end_offset"));
  if (layout.end_offset != expected_offset) {
    return JsonError(path + ".end_offset",
                     std::to_string(layout.end_offset) +
                         " is not the end of the last image (" +
                         std::to_string(expected_offset) + ")");
  }
  DPA_ASSIGN_OR_RETURN(layout.total_bytes,
                       GetU64(j["total_bytes"], path + ".total_bytes"));
  const std::string tpath = path + ".trailing";
  const json& t = j["trailing"];
  DPA_RETURN_IF_ERROR(CheckMembers(t, tpath, {"bytes", "kind", "offset"}));
  DPA_ASSIGN_OR_RETURN(std::string kind, GetString(t["kind"], tpath + ".kind"));
  if (kind == "none") {
    layout.trailing = BfbTrailing::kNone;
  } else if (kind == "padding") {
    layout.trailing = BfbTrailing::kPadding;
  } else if (kind == "garbage") {
    layout.trailing = BfbTrailing::kGarbage;
  } else {
    return JsonError(tpath + ".kind",
                     "\"" + kind + "\" is not none, padding or garbage");
  }
  DPA_ASSIGN_OR_RETURN(uint64_t toffset,
                       GetU64(t["offset"], tpath + ".offset"));
  if (toffset != layout.end_offset) {
    return JsonError(tpath + ".offset", std::to_string(toffset) +
                                            " is not end_offset " +
                                            std::to_string(layout.end_offset));
  }
  DPA_ASSIGN_OR_RETURN(layout.trailing_bytes,
                       GetU64(t["bytes"], tpath + ".bytes"));
  if ((layout.trailing_bytes == 0) != (layout.trailing == BfbTrailing::kNone)) {
    return JsonError(tpath + ".bytes", std::to_string(layout.trailing_bytes) +
                                           " contradicts kind \"" + kind +
                                           "\"");
  }
  if (layout.total_bytes < layout.end_offset ||
      layout.total_bytes - layout.end_offset != layout.trailing_bytes) {
    return JsonError(path + ".total_bytes",
                     std::to_string(layout.total_bytes) +
                         " is not end_offset + trailing.bytes");
  }
  DPA_ASSIGN_OR_RETURN(layout.all_crc_ok,
                       GetBool(j["all_crc_ok"], path + ".all_crc_ok"));
  if (layout.all_crc_ok != AllCrcOk(layout.images)) {
    return JsonError(path + ".all_crc_ok",
                     "contradicts the images' crc_ok values");
  }
  DPA_ASSIGN_OR_RETURN(
      layout.following_consistent,
      GetBool(j["following_consistent"], path + ".following_consistent"));
  if (layout.following_consistent != FollowingConsistent(layout.images)) {
    return JsonError(path + ".following_consistent",
                     "contradicts the images' following_images bitmaps");
  }
  return layout;
}

}  // namespace

// ---- image table ----

const std::vector<BfbImageType>& BfbImageTypes() {
  // rshim-user-space scripts/mlx-mkbfb `image_list`, in its order (the order
  // mlx-mkbfb writes images in). ATF ids match tbbr_img_def.h.
  static const std::vector<BfbImageType> kTypes = {
      {36, "psc-bl", "PSC bootloader image"},
      {37, "psc-fw", "PSC framework image"},
      {31, "bl2r-cert", "RIoT Core (BL2R) content certificate"},
      {30, "bl2r", "RIoT Core (BL2R) bin"},
      {42, "bl2r-auth-cert", "BL2R AUTHCERT DER-encoded certificate"},
      {6, "bl2-cert", "Trusted Boot Firmware BL2 certificate"},
      {1, "bl2", "Trusted Boot Firmware BL2 bin"},
      {29, "sys", "Running system's part number or PSID"},
      {43, "bl2-auth-cert", "BL2 AUTHCERT DER-encoded certificate"},
      {38, "ddr-cert", "DDR Images Content Certificate"},
      {32, "ddr_ini", "File From Which Will Load DDR (pseudo spd) Parameters"},
      {33, "snps_images", "Combined SNPS Images for all DIMM types"},
      {40, "ddr5_snps_images", "DDR5 Combined SNPS Images for all DIMM types"},
      {34, "ddr_ate_imem", "Analog Test Engine INSTRUCTIONS"},
      {35, "ddr_ate_dmem", "Analog Test Engine DATA"},
      {8, "bl30-key-cert", "SCP Firmware BL3-0 key certificate"},
      {12, "bl30-cert", "SCP Firmware BL3-0 certificate"},
      {2, "bl30", "SCP Firmware BL3-0"},
      {39, "psc-app", "PSC application image"},
      {53, "psc-certs", "PSC attestation certificates"},
      {7, "trusted-key-cert", "Trusted key certificate"},
      {9, "bl31-key-cert", "EL3 Runtime Firmware BL3-1 key certificate"},
      {13, "bl31-cert", "EL3 Runtime Firmware BL3-1 content certificate"},
      {3, "bl31", "EL3 Runtime Firmware BL3-1 bin"},
      {10, "bl32-key-cert",
       "Secure Payload BL3-2 (Trusted OS) key certificate"},
      {14, "bl32-cert",
       "Secure Payload BL3-2 (Trusted OS) content certificate"},
      {4, "bl32", "Secure Payload BL3-2 (Trusted OS) bin"},
      {11, "bl33-key-cert", "Non-Trusted Firmware BL3-3 key certificate"},
      {15, "bl33-cert", "Non-Trusted Firmware BL3-3 content certificate"},
      {5, "bl33", "Non-Trusted Firmware BL3-3 bin"},
      // Images for UEFI (ids defined by edk2 MlxPlatformPkg BfbFs).
      {52, "capsule", "UEFI capsule image"},
      {55, "boot-acpi", "Name of the ACPI table"},
      {56, "boot-dtb", "Name of the dtb file"},
      {57, "boot-desc", "Default boot menu item description"},
      {58, "boot-path", "Boot image path"},
      {59, "boot-args", "Arguments for boot image"},
      {60, "boot-timeout", "Boot menu timeout"},
      {61, "uefi-tests", "Specify what UEFI tests to run"},
      {41, "nicfw", "NIC Firmware image"},
      {54, "ramdisk", "RAM Disk image"},
      {50, "info", "BFB versioning information"},
      {62, "image", "Boot image"},
      {63, "initramfs", "In-memory filesystem"},
      {51, "upgrade-image", "Runtime upgrade image"},
  };
  return kTypes;
}

const BfbImageType* FindBfbImageType(uint8_t id) {
  for (const BfbImageType& t : BfbImageTypes()) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

std::string BfbImageName(uint8_t id) {
  const BfbImageType* t = FindBfbImageType(id);
  return t ? std::string(t->name) : "unknown-" + std::to_string(id);
}

std::optional<uint8_t> BfbImageIdByName(std::string_view name) {
  for (const BfbImageType& t : BfbImageTypes()) {
    if (t.name == name) return t.id;
  }
  return std::nullopt;
}

std::string_view BfbTrailingName(BfbTrailing t) {
  switch (t) {
    case BfbTrailing::kNone:
      return "none";
    case BfbTrailing::kPadding:
      return "padding";
    case BfbTrailing::kGarbage:
      return "garbage";
  }
  return "none";
}

// ---- headers ----

Bytes EncodeBfbHeader(const BfbHeader& h) {
  const uint64_t w0 = uint64_t{h.magic} | (h.major & kNibble) << kMajorShift |
                      (h.minor & kNibble) << kMinorShift |
                      (h.next_img_ver & kNibble) << kNextVerShift |
                      (h.cur_img_ver & kNibble) << kCurVerShift |
                      ((h.header_len / 8u) & kNibble) << kHeaderLenShift |
                      uint64_t{h.image_id} << kImageIdShift;
  const uint64_t w1 = uint64_t{h.image_len} | uint64_t{h.image_crc} << 32;
  Bytes out(kBfbHeaderBytes);
  PutLe64(w0, out.data());
  PutLe64(w1, out.data() + 8);
  PutLe64(h.following_images, out.data() + 16);
  return out;
}

StatusOr<BfbHeader> DecodeBfbHeader(ByteView bytes, uint64_t offset) {
  const std::string where = "BFB header at offset " + HexNumber(offset);
  if (bytes.size() != kBfbHeaderBytes) {
    return InvalidArgumentError(where + ": " + std::to_string(bytes.size()) +
                                " bytes (expected " +
                                std::to_string(kBfbHeaderBytes) + ").");
  }
  return DecodeHeader(bytes.data(), where);
}

// ---- parsing ----

StatusOr<BfbLayout> ParseBfb(ByteStream& in, const BfbLimits& limits,
                             BfbImageObserver* observer) {
  BoundedReader r(in, limits.max_total_bytes);
  DPA_ASSIGN_OR_RETURN(ImageDigests digests, ImageDigests::New());
  BfbLayout layout;
  for (size_t index = 0;; ++index) {
    const uint64_t offset = r.offset();
    const std::string where = Where(index, offset);
    DPA_ASSIGN_OR_RETURN(size_t have, r.Fill(kBfbHeaderBytes));
    have = std::min(have, kBfbHeaderBytes);
    const bool magic = have >= 4 && Le32(r.data()) == kBfbMagic;
    if (index == 0 && have == 0) {
      return InvalidArgumentError(where + ": the input is empty.");
    }
    if (index == 0 && have < 4) {
      return InvalidArgumentError(where + ": header cut short (" +
                                  std::to_string(have) + " of " +
                                  std::to_string(kBfbHeaderBytes) + " bytes).");
    }
    if (index == 0 && !magic) {
      return InvalidArgumentError(where + ": bad magic " +
                                  Hex32(Le32(r.data())) + " (expected " +
                                  Hex32(kBfbMagic) + ").");
    }
    if (!magic) break;  // the rest is trailing data
    if (have < kBfbHeaderBytes) {
      return InvalidArgumentError(where + ": header cut short (" +
                                  std::to_string(have) + " of " +
                                  std::to_string(kBfbHeaderBytes) + " bytes).");
    }
    if (index >= limits.max_images) {
      return InvalidArgumentError(where + ": more than " +
                                  std::to_string(limits.max_images) +
                                  " images.");
    }
    BfbImage image;
    image.index = index;
    image.offset = offset;
    image.data_offset = offset + kBfbHeaderBytes;
    DPA_ASSIGN_OR_RETURN(image.header, DecodeHeader(r.data(), where));
    image.name = BfbImageName(image.header.image_id);
    image.known_id = FindBfbImageType(image.header.image_id) != nullptr;
    image.padded_length = PaddedLength(image.header.image_len);
    if (observer != nullptr) observer->BeginImage(image);
    DPA_RETURN_IF_ERROR(ReadImage(r, digests, image, observer));
    layout.images.push_back(std::move(image));
  }

  // Trailing data: read to the end, classifying as we go.
  layout.end_offset = r.offset();
  bool all_zero = true;
  bool all_ff = true;
  DPA_ASSIGN_OR_RETURN(
      uint64_t trailing,
      r.Pass(UINT64_MAX, [&](const uint8_t* p, size_t n) -> Status {
        for (size_t i = 0; i < n && (all_zero || all_ff); ++i) {
          all_zero = all_zero && p[i] == 0x00;
          all_ff = all_ff && p[i] == 0xFF;
        }
        return OkStatus();
      }));
  layout.trailing_bytes = trailing;
  layout.total_bytes = layout.end_offset + trailing;
  if (trailing == 0) {
    layout.trailing = BfbTrailing::kNone;
  } else if (all_zero || all_ff) {
    layout.trailing = BfbTrailing::kPadding;
  } else {
    layout.trailing = BfbTrailing::kGarbage;
  }
  layout.all_crc_ok = AllCrcOk(layout.images);
  layout.following_consistent = FollowingConsistent(layout.images);
  return layout;
}

StatusOr<BfbLayout> ParseBfbBytes(ByteView data, const BfbLimits& limits) {
  // A view, not a copy: the fuzzer and tests pass large inputs.
  class ViewStream final : public ByteStream {
   public:
    explicit ViewStream(ByteView d) : d_(d) {}
    StatusOr<size_t> Read(uint8_t* out, size_t max) override {
      size_t n = std::min(max, d_.size() - pos_);
      if (n > 0) std::memcpy(out, d_.data() + pos_, n);
      pos_ += n;
      return n;
    }
    int64_t SizeHint() const override {
      return static_cast<int64_t>(d_.size());
    }
    std::string Name() const override { return "in-memory BFB"; }

   private:
    ByteView d_;
    size_t pos_ = 0;
  };
  ViewStream in(data);
  return ParseBfb(in, limits);
}

Bytes BuildBfb(const std::vector<std::pair<uint8_t, Bytes>>& images) {
  // following[i] = OR of the ids after image i (ids >= 64 get no bit).
  std::vector<uint64_t> following(images.size(), 0);
  uint64_t after = 0;
  for (size_t i = images.size(); i-- > 0;) {
    following[i] = after;
    if (images[i].first < 64) after |= uint64_t{1} << images[i].first;
  }
  Bytes out;
  for (size_t i = 0; i < images.size(); ++i) {
    const Bytes& data = images[i].second;
    const size_t pad = PaddedLength(data.size()) - data.size();
    const uint8_t zeros[8] = {};
    uint32_t crc = Crc32Update(0, nullptr, 0);
    // zlib's crc32 takes a uInt length: feed large images in pieces.
    for (size_t at = 0; at < data.size(); at += kBufferBytes) {
      crc = Crc32Update(crc, data.data() + at,
                        std::min(kBufferBytes, data.size() - at));
    }
    crc = Crc32Update(crc, zeros, pad);
    BfbHeader h;  // magic, major 1, minor 2, versions 0, 24-byte header
    h.image_id = images[i].first;
    h.image_len = static_cast<uint32_t>(data.size());
    h.image_crc = crc;
    h.following_images = following[i];
    Bytes header = EncodeBfbHeader(h);
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), data.begin(), data.end());
    out.insert(out.end(), pad, 0);
  }
  return out;
}

// ---- printing ----

std::string FormatBfbTable(const BfbLayout& layout) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "%4s  %-12s %4s  %-16s %3s  %10s  %-4s  %s\n", "#", "offset",
                "id", "name", "ver", "length", "crc", "sha384");
  out += line;
  for (const BfbImage& i : layout.images) {
    std::snprintf(
        line, sizeof line, "%4zu  %-12s %4u  %-16s %3u  %10u  %-4s  %s\n",
        i.index, HexNumber(i.offset).c_str(), unsigned{i.header.image_id},
        i.name.c_str(), unsigned{i.header.cur_img_ver}, i.header.image_len,
        i.crc_ok ? "ok" : "BAD", i.sha384.c_str());
    out += line;
  }
  out += "end offset " + HexNumber(layout.end_offset) + " (" +
         std::to_string(layout.end_offset) + " bytes); trailing: ";
  switch (layout.trailing) {
    case BfbTrailing::kNone:
      out += "none";
      break;
    case BfbTrailing::kPadding:
    case BfbTrailing::kGarbage:
      out += std::string(BfbTrailingName(layout.trailing)) + ", " +
             std::to_string(layout.trailing_bytes) + " bytes at offset " +
             HexNumber(layout.end_offset);
      break;
  }
  out += "; total " + std::to_string(layout.total_bytes) + " bytes\n";
  out += std::string("following_images bitmaps: ") +
         (layout.following_consistent ? "consistent" : "INCONSISTENT") + "\n";
  return out;
}

std::string BfbLayoutJson(const BfbLayout& layout) {
  return BfbLayoutToJson(layout).dump(2);
}

nlohmann::json BfbLayoutToJson(const BfbLayout& layout) {
  json images = json::array();
  for (const BfbImage& i : layout.images) {
    const BfbHeader& h = i.header;
    images.push_back(json{{"index", i.index},
                          {"offset", i.offset},
                          {"id", h.image_id},
                          {"name", i.name},
                          {"known", i.known_id},
                          {"major", h.major},
                          {"minor", h.minor},
                          {"cur_img_ver", h.cur_img_ver},
                          {"next_img_ver", h.next_img_ver},
                          {"length", h.image_len},
                          {"crc", h.image_crc},
                          {"crc_computed", i.crc_computed},
                          {"crc_ok", i.crc_ok},
                          {"following_images", HexNumber(h.following_images, 16)},
                          {"sha256", i.sha256},
                          {"sha384", i.sha384},
                          {"sha512", i.sha512}});
  }
  return json{{"format", std::string(kLayoutFormat)},
              {"images", std::move(images)},
              {"end_offset", layout.end_offset},
              {"total_bytes", layout.total_bytes},
              {"trailing",
               {{"kind", std::string(BfbTrailingName(layout.trailing))},
                {"offset", layout.end_offset},
                {"bytes", layout.trailing_bytes}}},
              {"all_crc_ok", layout.all_crc_ok},
              {"following_consistent", layout.following_consistent}};
}

StatusOr<BfbLayout> BfbLayoutFromJson(const nlohmann::json& j,
                                      std::string_view path) {
  try {
    return LayoutFromJson(j, std::string(path));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string(path) + " could not be read (" +
                                e.what() + ").");
  }
}

}  // namespace dpuaudit::bluefield
