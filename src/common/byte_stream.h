// ByteStream: sequential reads of a possibly large input (a BFB release file,
// a boot partition, a kernel image) with bounded memory.
//
// Guarantees: Read returns at most `max` bytes; 0 bytes means end of stream;
// an I/O error is UNAVAILABLE naming the input. Streams are move-only and
// own their file descriptor (closed on destruction).
// Does not: seek, or guarantee that a file is not modified while read.
#ifndef DPUAUDIT_COMMON_BYTE_STREAM_H_
#define DPUAUDIT_COMMON_BYTE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to `max` bytes into `out`; returns how many (0 at the end).
  virtual StatusOr<size_t> Read(uint8_t* out, size_t max) = 0;
  // Size in bytes when known up front (regular files, memory), else -1.
  virtual int64_t SizeHint() const { return -1; }
  // What the stream reads, for messages ("/dev/mmcblk0boot0").
  virtual std::string Name() const = 0;
};

// A stream over bytes it owns.
std::unique_ptr<ByteStream> NewMemoryByteStream(Bytes data, std::string name);

// A stream over a file opened read-only (O_CLOEXEC). NOT_FOUND if absent,
// PERMISSION_DENIED / UNAVAILABLE otherwise, each naming the path.
StatusOr<std::unique_ptr<ByteStream>> OpenFileByteStream(
    const std::string& path);

// Reads the whole stream, at most `max_bytes` (RESOURCE_EXHAUSTED beyond).
StatusOr<Bytes> ReadAllBounded(ByteStream& stream, size_t max_bytes);

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_BYTE_STREAM_H_
