// Fuzz target: dpuaudit::bluefield::ParseBfbBytes (docs/bluefield.md#bfb), then the
// layout's JSON round trip (BfbLayoutToJson -> BfbLayoutFromJson must give the
// same layout) and the table printer. Aborts on any broken invariant.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "bluefield/bfb.h"
#include "firmware/boot_partitions.h"

namespace {

using dpuaudit::bluefield::BfbImage;
using dpuaudit::bluefield::BfbLayout;
using dpuaudit::bluefield::BfbTrailing;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckLayout(const BfbLayout& l, size_t size) {
  Check(!l.images.empty());
  Check(l.total_bytes == size);
  Check(l.end_offset + l.trailing_bytes == l.total_bytes);
  Check((l.trailing == BfbTrailing::kNone) == (l.trailing_bytes == 0));
  uint64_t offset = 0;
  bool all_ok = true;
  for (size_t i = 0; i < l.images.size(); ++i) {
    const BfbImage& img = l.images[i];
    Check(img.index == i && img.offset == offset);
    Check(img.data_offset == img.offset + dpuaudit::bluefield::kBfbHeaderBytes);
    Check(img.padded_length % 8 == 0 &&
          img.padded_length >= img.header.image_len &&
          img.padded_length - img.header.image_len < 8);
    Check(img.header.magic == dpuaudit::bluefield::kBfbMagic);
    Check(img.header.major == 1 && img.header.minor <= 2);
    Check(img.name == dpuaudit::bluefield::BfbImageName(img.header.image_id));
    Check(img.crc_ok == (img.crc_computed == img.header.image_crc));
    Check(img.sha256.size() == 64 && img.sha384.size() == 96 &&
          img.sha512.size() == 128);
    all_ok = all_ok && img.crc_ok;
    offset = img.data_offset + img.padded_length;
  }
  Check(offset == l.end_offset);
  Check(l.all_crc_ok == all_ok);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dpuaudit::ByteView bytes(data, data == nullptr ? 0 : size);
  auto layout = dpuaudit::bluefield::ParseBfbBytes(bytes);
  if (!layout.ok()) {
    Check(!layout.status().message().empty());
    Check(layout.status().code() == dpuaudit::StatusCode::kInvalidArgument);
    return 0;
  }
  CheckLayout(*layout, bytes.size());
  auto back = dpuaudit::bluefield::BfbLayoutFromJson(
      dpuaudit::bluefield::BfbLayoutToJson(*layout), "layout");
  Check(back.ok());
  Check(*back == *layout);
  Check(!dpuaudit::bluefield::FormatBfbTable(*layout).empty());
  Check(!dpuaudit::bluefield::BfbLayoutJson(*layout).empty());
  return 0;
}
