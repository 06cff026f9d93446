#!/usr/bin/env bash
# Checks the rooms of src/ (docs/architecture.md#rooms): every
# `#include "..."` in src/**/*.{h,cc} must name a file that exists under
# src/ and belong to a room the including file's room may depend on.
#
# Usage: dependency_check.sh SRC_ROOT   (SRC_ROOT = the project root)
#
# The room of a path is its first component under src/, except that
# attest/tpm/... is the room attest/tpm and verifier/store/... belongs to
# verifier. A room may always include itself; apps may include anything;
# only attest/tpm (and apps) may include attest/tpm. Prints one line per
# violation, `file:line: room X may not include Y (allowed: ...)`, and
# exits 1 if there is any; otherwise prints a one-line summary.
set -euo pipefail

root=${1:?usage: dependency_check.sh SRC_ROOT}
cd "$root"
[ -d src ] || { echo "dependency_check: no src/ under $root" >&2; exit 2; }

# The allowed table, one line per room: room, then the rooms it may
# include (besides itself). "*" means any room.
rooms='
common
device      common
uefi        common
bluefield   common
attest      common uefi
attest/tpm  common uefi attest
firmware    common device bluefield uefi
isolation   common device bluefield uefi firmware
report      common device
spdm        common
redfish     common
bmc         common redfish spdm
verifier    common device uefi bluefield attest firmware isolation report spdm redfish bmc
apps        *
'


{
  # Stream 1: the allowed table.
  printf '%s\n' "$rooms" | awk 'NF { printf "R\t%s", $1; for (i = 2; i <= NF; i++) printf "\t%s", $i; print "" }'
  # Stream 2: every file under src/ (for the existence check) and every
  # source file (for the count).
  find src -type f -printf 'F\t%P\n'
  # Stream 3: every quoted include, as file:line:text.
  grep -rnE --include='*.h' --include='*.cc' \
    '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src || true
} | awk -F'\t' '
function room_of(path,    n, parts) {
  n = split(path, parts, "/")
  if (n >= 3 && parts[1] == "attest" && parts[2] == "tpm") return "attest/tpm"
  return parts[1]
}
$1 == "R" {
  room = $2
  known[room] = 1
  list = ""
  for (i = 3; i <= NF; i++) {
    allowed[room, $i] = 1
    list = list (list == "" ? "" : ", ") $i
  }
  shown[room] = (list == "" ? "nothing" : list)
  next
}
$1 == "F" {
  exists[$2] = 1
  if ($2 ~ /\.(h|cc)$/) files++
  next
}
{
  # file:line:#include "path"
  line = $0
  i = index(line, ":"); file = substr(line, 1, i - 1); line = substr(line, i + 1)
  i = index(line, ":"); lineno = substr(line, 1, i - 1); text = substr(line, i + 1)
  q = index(text, "\""); rest = substr(text, q + 1)
  inc = substr(rest, 1, index(rest, "\"") - 1)
  includes++
  from = room_of(substr(file, 5))  # strip "src/"
  if (!(inc in exists)) {
    printf "%s:%s: include \"%s\" names no file under src/\n", file, lineno, inc
    bad++
    next
  }
  to = room_of(inc)
  if (!(from in known)) {
    printf "%s:%s: room %s is not in the rooms table (it may include nothing)\n", file, lineno, from
    bad++
    next
  }
  if (from == to || allowed[from, "*"] || allowed[from, to]) next
  printf "%s:%s: room %s may not include %s (allowed: %s)\n", file, lineno, from, inc, shown[from]
  bad++
}
END {
  if (bad) {
    printf "dependency_check: %d violation(s) in %d includes of %d files\n", bad, includes, files
    exit 1
  }
  printf "dependency_check: %d files, %d includes checked, every include allowed\n", files, includes
}'
