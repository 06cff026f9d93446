// Fuzz target: the text decoders of common/bytes.h (Base64Decode,
// Base64UrlDecode, HexDecode), strict_json::DecodeBase64Bounded, and
// ByteReader. Every base64 / hex member of a request, report or TPM claim
// goes through one of these.
// Invariants:
//  - decoding is canonical: whatever decodes re-encodes to the same text
//    (hex: to its lower-case form), and the decoded size follows from the
//    text length; every encoding decodes back to the input;
//  - DecodeBase64Bounded agrees with Base64Decode and fails with
//    RESOURCE_EXHAUSTED only when the result would exceed the bound;
//  - ConstantTimeEquals is equality;
//  - a ByteReader read succeeds iff enough bytes remain, advances by exactly
//    its size, and a failed read leaves the offset unchanged (OUT_OF_RANGE
//    naming the offset);
//  - errors have a message.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/strict_json.h"

namespace {

using namespace dpuaudit;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckError(const Status& s) { Check(!s.ok() && !s.message().empty()); }

void Base64Properties(std::string_view text, ByteView raw) {
  auto b64 = Base64Decode(text);
  if (b64.ok()) {
    Check(Base64Encode(*b64) == text);
    Check(text.size() % 4 == 0);
    Check(b64->size() <= text.size() / 4 * 3);
  } else {
    CheckError(b64.status());
  }
  auto url = Base64UrlDecode(text);
  if (url.ok()) {
    Check(Base64UrlEncode(*url) == text);
    Check(text.find('=') == std::string_view::npos);
  } else {
    CheckError(url.status());
  }
  // Encoders: any bytes round-trip.
  auto back = Base64Decode(Base64Encode(raw));
  Check(back.ok() && *back == Bytes(raw.begin(), raw.end()));
  auto url_back = Base64UrlDecode(Base64UrlEncode(raw));
  Check(url_back.ok() && *url_back == Bytes(raw.begin(), raw.end()));

  // The bounded decoder of the report and claims parsers, at a few bounds.
  for (size_t max :
       {size_t{0}, size_t{1}, size_t{32}, raw.size(), size_t{1} << 20}) {
    auto bounded =
        strict_json::DecodeBase64Bounded(std::string(text), max, "x");
    if (bounded.ok()) {
      Check(b64.ok() && *bounded == *b64 && bounded->size() <= max);
    } else if (b64.ok() && b64->size() <= max) {
      std::abort();  // refused what is valid and within the bound
    } else {
      CheckError(bounded.status());
      if (bounded.status().code() == StatusCode::kResourceExhausted) {
        Check(!b64.ok() || b64->size() > max || text.size() / 4 * 3 > max + 2);
      } else {
        Check(bounded.status().code() == StatusCode::kInvalidArgument);
      }
    }
  }
}

void HexProperties(std::string_view text, ByteView raw) {
  auto hex = HexDecode(text);
  if (hex.ok()) {
    std::string lower(text);
    for (char& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    Check(HexEncode(*hex) == lower);
    Check(hex->size() * 2 == text.size());
    Check(IsLowerHex(HexEncode(*hex)));
  } else {
    CheckError(hex.status());
  }
  auto back = HexDecode(HexEncode(raw));
  Check(back.ok() && *back == Bytes(raw.begin(), raw.end()));
}

void ConstantTimeProperties(ByteView raw) {
  ByteView a = raw.subspan(0, raw.size() / 2);
  ByteView b = raw.subspan(raw.size() / 2, raw.size() / 2);
  bool equal =
      a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  Check(ConstantTimeEquals(a, b) == equal);
  Check(ConstantTimeEquals(a, a));
}

// Reads the input with a ByteReader, each read's kind and size taken from
// the input itself (a byte of op, then the read).
void ReaderProperties(ByteView raw) {
  ByteReader ops(raw);
  ByteReader r(raw);
  for (int step = 0; step < 64 && !ops.empty(); ++step) {
    uint8_t op = *ops.U8("op");
    size_t before = r.offset();
    size_t left = r.remaining();
    size_t want = 0;
    Status s;
    switch (op % 9) {
      case 0:
        want = 1;
        s = r.U8("u8").status();
        break;
      case 1:
        want = 2;
        s = r.U16Le("u16le").status();
        break;
      case 2:
        want = 4;
        s = r.U32Le("u32le").status();
        break;
      case 3:
        want = 8;
        s = r.U64Le("u64le").status();
        break;
      case 4:
        want = 2;
        s = r.U16Be("u16be").status();
        break;
      case 5:
        want = 4;
        s = r.U32Be("u32be").status();
        break;
      case 6: {
        want = op / 9;
        auto v = r.Take(want, "take");
        s = v.status();
        if (v.ok()) Check(v->size() == want);
        break;
      }
      case 7:
        want = op / 9;
        s = r.Skip(want, "skip");
        break;
      default: {
        want = ~size_t{0} - op;  // an absurd length field
        s = r.Skip(want, "huge");
        break;
      }
    }
    if (want <= left) {
      Check(s.ok() && r.offset() == before + want);
    } else {
      Check(!s.ok() && s.code() == StatusCode::kOutOfRange &&
            r.offset() == before &&
            s.message().find("offset 0x") != std::string::npos);
    }
    Check(r.offset() + r.remaining() == raw.size());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteView raw(data, data == nullptr ? 0 : size);
  std::string_view text(reinterpret_cast<const char*>(raw.data()), raw.size());
  Base64Properties(text, raw);
  HexProperties(text, raw);
  ConstantTimeProperties(raw);
  ReaderProperties(raw);
  return 0;
}
