// Parser for `flint -d <mst> q full` (docs/bluefield.md#flint): NIC firmware
// identity and security attributes.
//
// Accepted layout: one `Key:   value` per line, keys at column 0, e.g.
//   FW Version:            32.41.1000
//   Rom Info:              type=UEFI Virtio net version=21.4.13 cpu=...
//                          type=PXE version=3.7.400 cpu=AMD64
//   Description:           UID                GuidsNumber
//   Base MAC:              946dae4f296a            38
// `Rom Info` continuation lines may be indented or start at column 0 (as in
// the BF2 Carbide fixture); an indented line continues any previous field.
//
// Guarantees: fields are kept in output order, duplicates included; Find()
// returns the FIRST match (the second `Description:` is the GUID table
// header, not the product description); a line that is neither a field nor
// a continuation is INVALID_ARGUMENT naming the line; empty output is an
// error.
// Does NOT check: which keys are present (callers treat a missing key as
// unreadable), nor the format of any value.
#ifndef DPUAUDIT_BLUEFIELD_FLINT_H_
#define DPUAUDIT_BLUEFIELD_FLINT_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit::bluefield {

struct FlintField {
  std::string key;    // "FW Version"
  std::string value;  // trimmed; continuation lines joined with "\n"
  int line = 0;       // 1-based line of the key
};

struct FlintQuery {
  std::vector<FlintField> fields;     // in output order
  std::vector<std::string> rom_info;  // one entry per `Rom Info` line

  // First field with exactly this key; nullptr when absent.
  const FlintField* Find(std::string_view key) const;
  // Find(key)->value, or "" when absent.
  std::string Value(std::string_view key) const;
};

StatusOr<FlintQuery> ParseFlintQuery(std::string_view text);

// First whitespace-separated token of a value ("b83fd2909694" from
// "b83fd2909694            16"); "" for an empty value.
std::string FirstToken(std::string_view value);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_FLINT_H_
