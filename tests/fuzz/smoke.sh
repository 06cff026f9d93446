#!/usr/bin/env bash
# One coverage-guided libFuzzer smoke run (ctest fuzz_smoke.<name>):
#   smoke.sh FUZZER SEED_DIR SECONDS WORK_DIR
# Mutates into WORK_DIR/corpus (the seed folder is only read), so a run never
# edits committed files. Any crash, leak, timeout or sanitizer report fails the
# test; the input is left in WORK_DIR/artifacts for a regression test.
set -euo pipefail
fuzzer=$1 seeds=$2 seconds=$3 work=$4
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/artifacts"
if [ -z "$(ls -A "$seeds" 2>/dev/null)" ]; then
  echo "no seed files in $seeds" >&2
  exit 2
fi
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  \
  -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds"
