#!/usr/bin/env bash
# Configures and builds dpuaudit into build/ (executables in build/bin/).
# Usage: scripts/build.sh [extra cmake args]. Honours DPUAUDIT_BUILD_DIR, JOBS.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUAUDIT_BUILD_DIR:-$here/build}
jobs=${JOBS:-$(nproc)}
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build" -j "$jobs"
