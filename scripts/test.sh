#!/usr/bin/env bash
# The README's test command: installs missing Debian packages (as root),
# builds, and runs the whole test suite with ctest (unit, integration over
# real loopback HTTP and HTTPS, fuzz-corpus replays).
#   scripts/test.sh              GCC build in build/ (the README's command)
#   scripts/test.sh --sanitize   clang build in build-sanitize/ with
#                                AddressSanitizer + UndefinedBehaviorSanitizer
#                                (+ LeakSanitizer) on every target, the whole
#                                suite under them, and a coverage-guided
#                                libFuzzer smoke run of every fuzz target
#                                (DPUAUDIT_FUZZ_SMOKE_SECONDS each, default 20).
#                                .ci/run runs both.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
ensure_packages "${DPUAUDIT_BUILD_PACKAGES[@]}"
ensure_node

if [ "${1:-}" = "--sanitize" ]; then
  ensure_packages "${DPUAUDIT_SANITIZE_PACKAGES[@]}"
  build=${DPUAUDIT_SANITIZE_BUILD_DIR:-$here/build-sanitize}
  # -O1 with line tables only: every sanitizer report still names file and
  # line, and the build takes far less time than -O2 -g.
  CC=clang CXX=clang++ DPUAUDIT_BUILD_DIR=$build scripts/build.sh \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    -DDPUAUDIT_SANITIZE=address,undefined -DDPUAUDIT_FUZZ=ON -DDPUAUDIT_BENCH=OFF \
    -DDPUAUDIT_FUZZ_SMOKE_SECONDS="${DPUAUDIT_FUZZ_SMOKE_SECONDS:-20}"
  # Any sanitizer report aborts the test that caused it.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  cd "$build"
  ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 900
  exit 0
fi

build=${DPUAUDIT_BUILD_DIR:-$here/build}
werror=OFF
ci_flags=()
if [ "${CI:-}" = "true" ]; then
  werror=ON
  # CI reads no core dumps: line tables are enough for its stack traces.
  ci_flags=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
fi
DPUAUDIT_BUILD_DIR=$build scripts/build.sh -DDPUAUDIT_WERROR=$werror "${ci_flags[@]}"
if [ ! -d "$here/../shared/fixtures" ]; then
  echo "note: ../shared/fixtures is absent; tests that use the public samples will be skipped (they say so)."
fi
cd "$build"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 600
