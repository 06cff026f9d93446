#!/usr/bin/env bash
# Debian packages of dpuaudit (issue 18): builds the three binaries in
# build-package/ (RelWithDebInfo, stripped when packed) and runs CPack:
#   dpuaudit-agent_<v>_<arch>.deb  dpuaudit-verifier_<v>_<arch>.deb  dpuaudit_<v>_<arch>.deb
# then lintian on them when it is installed (its findings are overridden
# only with a reason: packaging/debian/lintian/). Prints each package's size.
#   scripts/package.sh [BUILD_DIR]      (default build-package/)
# Exit 0 when the packages are made (and lintian, if run, is clean), 1 when
# lintian reports something, 2 on a build error.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
ensure_packages "${DPUAUDIT_BUILD_PACKAGES[@]}" dpkg-dev
build=${1:-$here/build-package}
DPUAUDIT_BUILD_DIR=$build scripts/build.sh -DCMAKE_INSTALL_PREFIX=/usr -DDPUAUDIT_BENCH=OFF -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
  -- dpuaudit-agent dpuaudit-verifier dpuaudit > "$build.log" 2>&1 \
  || { tail -40 "$build.log" >&2; exit 2; }
rm -f "$build"/*.deb
(cd "$build" && cpack -G DEB > "$build/cpack.log" 2>&1) || { cat "$build/cpack.log" >&2; exit 2; }
status=0
for deb in "$build"/*.deb; do
  printf '%-46s %6.2f MiB\n' "$(basename "$deb")" \
    "$(awk -v b="$(stat -c %s "$deb")" 'BEGIN{print b/1048576}')"
  echo "Depends: $(dpkg-deb -f "$deb" Depends)" | fold -s -w 96 | sed 's/^/  /'
done
if command -v lintian > /dev/null; then
  if lintian --tag-display-limit 0 "$build"/*.deb 2>&1 | grep -v 'running with root privileges' | grep .; then
    status=1
  else
    echo "lintian: clean"
  fi
else
  echo "lintian: not installed (apt-get install lintian), not run"
fi
exit "$status"
