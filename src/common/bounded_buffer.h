// A string that stops growing at a limit: the body sink of the HTTP clients
// (libcurl write callbacks).
//
// Guarantees: Write appends while the total stays within `limit` and
// returns the bytes taken; past the limit it appends nothing, sets
// `overflow` and returns 0, which makes libcurl abort the transfer. So a
// response never holds more than `limit` bytes.
// Does not: depend on libcurl (the callback signature is plain C).
#ifndef DPUAUDIT_COMMON_BOUNDED_BUFFER_H_
#define DPUAUDIT_COMMON_BOUNDED_BUFFER_H_

#include <cstddef>
#include <string>

namespace dpuaudit {

struct BoundedBuffer {
  std::string* out;
  size_t limit;
  bool overflow = false;

  // A libcurl CURLOPT_WRITEFUNCTION; `self` is the BoundedBuffer.
  static size_t Write(char* data, size_t size, size_t n, void* self) {
    auto* b = static_cast<BoundedBuffer*>(self);
    const size_t bytes = size * n;
    if (b->out->size() + bytes > b->limit) {
      b->overflow = true;
      return 0;
    }
    b->out->append(data, bytes);
    return bytes;
  }
};

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_BOUNDED_BUFFER_H_
