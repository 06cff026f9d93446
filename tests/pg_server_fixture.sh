#!/usr/bin/env bash
# The ctest fixture of the "pg." tests (tests/CMakeLists.txt): starts or
# stops the PostgreSQL test server (scripts/pg-test-server.sh) in DIR.
#   start DIR: a leftover server of an interrupted run is stopped first. No
#              PostgreSQL binaries: says so and exits 0, so the pg. tests run
#              and skip with that reason (tests/verifier/store/test_store.h);
#              with CI=true that is a failure (exit 1).
#   stop DIR:  stops the server, deletes its data.
set -u
[ $# -eq 2 ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
script="$(cd "$(dirname "$0")/.." && pwd)/scripts/pg-test-server.sh"
dir=$2
case $1 in
  start)
    bash "$script" stop "$dir" >/dev/null 2>&1
    url=$(bash "$script" start "$dir")
    rc=$?
    if [ $rc -eq 3 ]; then
      if [ "${CI:-}" = "true" ]; then
        echo "CI=true: PostgreSQL is required for the pg. tests, and its binaries are missing" \
             "(scripts/deps.sh installs postgresql)" >&2
        exit 1
      fi
      echo "no PostgreSQL binaries (Debian: apt-get install postgresql): the pg. tests will skip"
      exit 0
    fi
    [ $rc -eq 0 ] || exit $rc
    echo "PostgreSQL test server: $(printf '%s' "$url" | sed -E 's#(://[^:/@]+):[^@]*@#\1:REDACTED@#')"
    ;;
  stop)
    bash "$script" stop "$dir"
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
