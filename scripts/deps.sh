#!/usr/bin/env bash
# Installs the Debian 12 packages dpuaudit needs to build, test and demo.
# As root: apt-get installs whatever is missing. Otherwise: prints the exact
# apt-get line and exits 2. Sourced by scripts/demo.sh and scripts/test.sh.
set -euo pipefail

# Why each package is here: see README.md, "Dependencies".
DPUAUDIT_BUILD_PACKAGES=(
  g++ cmake ninja-build pkg-config git ca-certificates
  lld                   # LLVM's linker: links the ~80 test, fuzz and bench binaries 5-10x faster
  libssl-dev            # OpenSSL 3: ECDSA P-256, SHA-256, TLS
  libtss2-dev           # tpm2-tss: TPM structures and ESAPI
  libcurl4-openssl-dev  # agent's HTTP(S) client
  nlohmann-json3-dev    # JSON
  libspdlog-dev         # logging in the mains
  libgtest-dev libgmock-dev libbenchmark-dev
  libmicrohttpd-dev     # verifier's HTTP(S) server: event-driven, connection and memory limits
  libgnutls28-dev       # verifier: TLS certificate handed to each handshake (SIGHUP swaps it)
  libcli11-dev          # command lines
  libsqlite3-dev        # embedded store
  libpq-dev             # libpq: the PostgreSQL store backend (serve --db postgresql://...)
  postgresql            # PostgreSQL 15 server: a throw-away one for the pg. tests (scripts/pg-test-server.sh)
  zlib1g-dev            # CRC-32 of BFB images (the checksum mlx-mkbfb writes)
  libpugixml-dev        # mlxfwmanager --query-format XML
  openssl               # test certificates
  curl                  # demo and integration checks
  swtpm swtpm-tools     # software TPM 2.0 with EK certificates (tests, demo)
  tpm2-tools            # independent checks: tpm2_checkquote, *_credential
  faketime              # libfaketime: a verifier whose clock stepped back (tests)
  python3-prometheus-client  # an independent parser of GET /metrics (tests)
  python3-jsonschema    # validates every --json output against docs/schemas (tests)
  python3-cryptography  # the independent audit-chain and checkpoint check (tests)
  chromium              # headless browser: renders the fleet HTML report, checks its console (tests)
)
# Node.js and npm (independent JOSE interop checks with npm's jose, under
# tests/report/interop) are checked by command, not by package: a machine
# with NodeSource's nodejs has npm inside that package, and Debian's npm
# package conflicts with it. See ensure_node below.

# Only for the sanitizer + libFuzzer build (scripts/test.sh --sanitize,
# scripts/fuzz.sh): clang with its sanitizer and libFuzzer runtimes.
DPUAUDIT_SANITIZE_PACKAGES=(
  clang libclang-rt-14-dev
)

missing_packages() {
  local missing=()
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  echo "${missing[@]:-}"
}

ensure_packages() {
  local missing
  missing=$(missing_packages "$@")
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "dpuaudit: missing Debian packages. Run as root:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends $missing" >&2
    exit 2
  fi
  echo "dpuaudit: installing: $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
}

# Installs Debian's nodejs and npm only where the commands are missing, so a
# Node.js from another source (which bundles npm) is kept as it is.
ensure_node() {
  if ! command -v node >/dev/null 2>&1; then
    ensure_packages nodejs
  fi
  if ! command -v npm >/dev/null 2>&1; then
    ensure_packages npm
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  ensure_packages "${DPUAUDIT_BUILD_PACKAGES[@]}"
  ensure_node
fi
