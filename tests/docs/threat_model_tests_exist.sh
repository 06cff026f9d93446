#!/usr/bin/env bash
# docs/threat-model.md names the test behind every defence. This checks that
# each named test exists: a GoogleTest `Suite.Test` (or `Suite.*`) must be
# defined under tests/, a `fuzz_smoke.<target>` / `fuzz_replay.<target>` must
# have tests/fuzz/<target>_fuzz.cc, and a `fuzz_regression.<target>.<input>`
# must have tests/fuzz/regressions/<target>/<input>. Fails listing the names
# that do not.
set -euo pipefail
root=${1:?usage: threat_model_tests_exist.sh SOURCE_DIR}
doc=$root/docs/threat-model.md
missing=0
checked=0
while read -r name; do
  checked=$((checked + 1))
  case $name in
    fuzz_smoke.\*|fuzz_replay.\*|fuzz_regression.\*) continue ;;
    fuzz_regression.*)
      rest=${name#fuzz_regression.}
      target=${rest%%.*}
      input=${rest#*.}
      [ -f "$root/tests/fuzz/regressions/$target/$input" ] && continue ;;
    fuzz_smoke.*|fuzz_replay.*)
      target=${name#*.}
      [ -f "$root/tests/fuzz/${target}_fuzz.cc" ] && continue ;;
    *)
      suite=${name%%.*}
      test=${name#*.}
      if [ "$test" = "*" ]; then
        grep -rqE "TEST(_F|_P)?\\($suite," "$root/tests" && continue
      else
        grep -rqE "TEST(_F|_P)?\\($suite, *$test\\)" "$root/tests" && continue
      fi ;;
  esac
  echo "docs/threat-model.md names $name, which no test defines"
  missing=$((missing + 1))
done < <(grep -oE '`(fuzz_(smoke|replay|regression)\.[A-Za-z0-9_.*-]+|[A-Z][A-Za-z0-9]+\.[A-Za-z0-9*]+)`' "$doc" |
           tr -d '`' | grep -v '^Suite\.Test$' | sort -u)
if [ "$checked" -lt 20 ]; then
  echo "only $checked test names found in $doc; the pattern no longer matches the document"
  exit 1
fi
echo "$checked test names in docs/threat-model.md, $missing missing"
[ "$missing" -eq 0 ]
