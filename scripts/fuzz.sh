#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/*_fuzz.cc) for SECONDS each
# (default 60), one after another, with ASan + UBSan, on a persistent working
# corpus seeded from tests/fuzz/corpus/<name>/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 eventlog jws
#   scripts/fuzz.sh --summary                 total fuzzing time per target
#   scripts/fuzz.sh --top-up TOTAL [TARGET...] runs each target just long
#       enough that its crash-free runs in runs.tsv add up to TOTAL seconds
# DPUAUDIT_FUZZ_JOBS=N runs N targets at a time (default 1). A crashing
# target stops only itself; the others run on, and the script exits 1 at
# the end naming every target that crashed.
# Installs clang + libclang-rt-14-dev if missing (as root), builds into
# build-sanitize/ (the same build scripts/test.sh --sanitize uses). Working
# corpora and crash artifacts go to fuzz-work/<target>/ (not committed); every
# run appends "date target seconds execs result" to fuzz-work/runs.tsv.
# A crash stops with exit 1 and prints how to turn the input into a
# regression test (tests/fuzz/regressions/<target>/<input>, replayed by ctest).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
work=${DPUAUDIT_FUZZ_WORK:-$here/fuzz-work}
mkdir -p "$work"
log=$work/runs.tsv

if [ "${1:-}" = "--summary" ]; then
  [ -f "$log" ] || { echo "no runs recorded in $log"; exit 0; }
  awk -F'\t' '{ s[$2] += $3; e[$2] += $4; if ($5 != "ok") bad[$2]++ }
    END { for (t in s) printf "%-22s %8.1f min %14d execs %s\n", t, s[t]/60, e[t],
            (bad[t] ? bad[t] " failed run(s)" : "");
          for (t in s) tot += s[t]; printf "%-22s %8.2f h\n", "total", tot/3600 }' "$log" | sort
  exit 0
fi

topup=
if [ "${1:-}" = "--top-up" ]; then
  topup=${2:?--top-up needs a total in seconds}
  shift 2
  seconds=0
else
  seconds=${1:-60}
  shift || true
fi
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
ensure_packages "${DPUAUDIT_BUILD_PACKAGES[@]}" "${DPUAUDIT_SANITIZE_PACKAGES[@]}"
build=${DPUAUDIT_SANITIZE_BUILD_DIR:-$here/build-sanitize}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*_fuzz.cc; do
    n=$(basename "$f" _fuzz.cc)
    targets+=("$n")
  done
fi
# Only the fuzz targets (and the libraries they link) are built.
CC=clang CXX=clang++ DPUAUDIT_BUILD_DIR=$build scripts/build.sh \
  -DDPUAUDIT_SANITIZE=address,undefined -DDPUAUDIT_FUZZ=ON -DDPUAUDIT_BENCH=OFF \
  -- "${targets[@]/%/_fuzz}" >/dev/null
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in "${targets[@]}"; do
  [ -x "$build/fuzz/${t}_fuzz" ] || { echo "no fuzz target $t ($build/fuzz/${t}_fuzz)" >&2; exit 2; }
done

# Runs one target for $2 seconds (default: $seconds); non-zero on a crash.
fuzz_one() {
  local t=$1 secs=${2:-$seconds} bin=$build/fuzz/${1}_fuzz start took execs result rc
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  echo "== $t: ${secs}s"
  start=$(date +%s)
  set +e
  "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$t/artifacts/" "$work/$t/corpus" "tests/fuzz/corpus/$t" \
    >"$work/$t/last.log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$t/last.log" | grep -o '[0-9]*$' || echo 0)
  result=ok
  [ $rc -ne 0 ] && result="crash(rc=$rc)"
  printf '%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$took" "${execs:-0}" "$result" >>"$log"
  echo "   $t: $took s, ${execs:-0} execs, $result"
  if [ $rc -ne 0 ]; then
    tail -40 "$work/$t/last.log"
    echo
    echo "Crash input(s) in $work/$t/artifacts/. To keep one as a regression test:"
    echo "  mkdir -p tests/fuzz/regressions/$t && cp <input> tests/fuzz/regressions/$t/<what-it-is>"
    return 1
  fi
}

jobs=${DPUAUDIT_FUZZ_JOBS:-1}
crashed=$work/.crashed.$$
: >"$crashed"
# Each lane gets a list of "target seconds". Plain runs deal targets out in
# turn; --top-up gives each target what it lacks of TOTAL (crash runs do
# not count) and deals the longest first to the least loaded lane.
declare -a plan load
for ((lane = 0; lane < jobs; lane++)); do plan[lane]=""; load[lane]=0; done
if [ -n "$topup" ]; then
  while read -r need t; do
    best=0
    for ((lane = 1; lane < jobs; lane++)); do
      [ "${load[lane]}" -lt "${load[best]}" ] && best=$lane
    done
    plan[best]+="$t $need "
    load[best]=$(( load[best] + need ))
  done < <(for t in "${targets[@]}"; do
             done_s=$(awk -F'\t' -v t="$t" '$2 == t && $5 == "ok" { s += $3 } END { print s + 0 }' \
                      "$log" 2>/dev/null || echo 0)
             need=$(( topup - done_s ))
             [ "$need" -gt 0 ] && echo "$need $t"
           done | sort -rn)
  for ((lane = 0; lane < jobs; lane++)); do
    echo "lane $lane: ${load[lane]} s: ${plan[lane]}"
  done
else
  for ((i = 0; i < ${#targets[@]}; i++)); do
    plan[i % jobs]+="${targets[$i]} $seconds "
  done
fi
for ((lane = 0; lane < jobs; lane++)); do
  (
    set -- ${plan[lane]}
    while [ $# -ge 2 ]; do
      fuzz_one "$1" "$2" || echo "$1" >>"$crashed"
      shift 2
    done
  ) &
done
wait
if [ -s "$crashed" ]; then
  echo "crashed: $(tr '\n' ' ' <"$crashed")"
  rm -f "$crashed"
  exit 1
fi
rm -f "$crashed"
