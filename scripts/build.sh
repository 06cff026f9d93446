#!/usr/bin/env bash
# Configures and builds dpuaudit into build/ (executables in build/bin/).
# Usage: scripts/build.sh [-DCMAKE_OPTION=...]... [-- TARGET...]
# Honours DPUAUDIT_BUILD_DIR (default build/) and JOBS (default nproc).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUAUDIT_BUILD_DIR:-$here/build}
jobs=${JOBS:-$(nproc)}
cmake_args=()
targets=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then shift; targets=("$@"); break; fi
  cmake_args+=("$1"); shift
done
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_args[@]}" >/dev/null
if [ ${#targets[@]} -gt 0 ]; then
  cmake --build "$build" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "$build" -j "$jobs"
fi
