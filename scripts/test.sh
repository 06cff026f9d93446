#!/usr/bin/env bash
# The README's test command: installs missing Debian packages (as root),
# builds, and runs the whole test suite with ctest (unit, integration over
# real loopback HTTP and HTTPS, fuzz-corpus replays).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
ensure_packages "${DPUAUDIT_BUILD_PACKAGES[@]}"

build=${DPUAUDIT_BUILD_DIR:-$here/build}
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
DPUAUDIT_BUILD_DIR=$build scripts/build.sh -DDPUAUDIT_WERROR=$werror
if [ ! -d "$here/../shared/fixtures" ]; then
  echo "note: ../shared/fixtures is absent; tests that use the public samples will be skipped (they say so)."
fi
cd "$build"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 600
