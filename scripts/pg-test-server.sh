#!/usr/bin/env bash
# A throw-away PostgreSQL server for the tests (tests/CMakeLists.txt, the
# "pg." copies of the store suites and PgReplicaTest).
#
#   scripts/pg-test-server.sh start DIR   initdb DIR/data, start on a free
#                                         loopback port (unix socket in DIR),
#                                         create role and database, write the
#                                         connection URL to DIR/url and print it
#   scripts/pg-test-server.sh stop DIR    stop it (fast shutdown) and delete DIR/data
#   scripts/pg-test-server.sh url DIR     print DIR/url
#
# Guarantees: fsync and synchronous_commit stay on (the tests check
# durability); the server listens on 127.0.0.1 only, with password (scram)
# authentication on TCP and peer/trust only on the socket in DIR (mode 0700);
# as root it runs as the `postgres` system user (postgres refuses root).
# The URL names the role "dpuaudit" (not a superuser; CREATEDB, as each test
# fixture makes its own database) and its database "dpuaudit", with the
# role's password (random, for tests only; DIR/url is 0600).
# Exit codes: 0 done; 2 usage; 3 PostgreSQL binaries not found (PG_BIN if
# set, else the newest /usr/lib/postgresql/*/bin); 1 anything else (the server log is printed).
set -euo pipefail

usage() {
  echo "usage: $0 start DIR | stop DIR | url DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
cmd=$1
dir=$2

# PG_BIN, when set, is the only place looked at.
find_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pg_ctl" ] || return 1
    echo "$PG_BIN"
    return 0
  fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

# Runs a command as the server's owner: postgres when we are root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

start() {
  local bin
  if ! bin=$(find_bin); then
    echo "pg-test-server: PostgreSQL server binaries not found (install Debian's" \
         "postgresql package, or set PG_BIN)" >&2
    exit 3
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -f "$dir/data/postmaster.pid" ]; then
    echo "pg-test-server: a server is already running in $dir (stop it first)" >&2
    exit 1
  fi
  rm -rf "$dir/data" "$dir/url"
  chmod 0700 "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$dir"
    # postgres must reach DIR through its parents (a build tree under /root
    # or /work is often 0700): give it search (x) permission only where
    # "others" lack it, one ACL entry per parent.
    local p=$dir
    while p=$(dirname "$p") && [ "$p" != "/" ]; do
      if ! runuser -u postgres -- test -x "$p"; then
        if command -v setfacl >/dev/null 2>&1; then
          setfacl -m u:postgres:x "$p"
        else
          chmod o+x "$p"
        fi
      fi
    done
  fi
  local password
  password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 24)
  printf '%s\n' "$password" > "$dir/pwfile"
  chmod 0600 "$dir/pwfile"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/pwfile"
  as_owner "$bin/initdb" -D "$dir/data" -U dpuaudit_admin --pwfile="$dir/pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
    >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
  rm -f "$dir/pwfile"
  local port
  port=$(free_port)
  cat >>"$dir/data/postgresql.conf" <<EOF
# pg-test-server.sh
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
unix_socket_permissions = 0700
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 200
shared_buffers = 32MB
log_min_messages = warning
EOF
  if ! as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
       >/dev/null 2>&1; then
    echo "pg-test-server: the server did not start; its log:" >&2
    cat "$dir/server.log" >&2 || true
    exit 1
  fi
  # The role the tests use: not a superuser, allowed to create databases
  # (one per test fixture), owning the database "dpuaudit".
  local role_password
  role_password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 24)
  if ! as_owner "$bin/psql" -h "$dir" -p "$port" -U dpuaudit_admin -d postgres -qAt \
       -v ON_ERROR_STOP=1 >"$dir/psql.err" 2>&1 <<EOF
CREATE ROLE dpuaudit LOGIN CREATEDB PASSWORD '$role_password';
CREATE DATABASE dpuaudit OWNER dpuaudit;
EOF
  then
    echo "pg-test-server: cannot create the role and database:" >&2
    cat "$dir/psql.err" >&2 || true
    exit 1
  fi
  local url="postgresql://dpuaudit:$role_password@127.0.0.1:$port/dpuaudit"
  # The tests connect over TCP with the password; a quick check that it works.
  if ! PGCONNECT_TIMEOUT=10 "$bin/psql" "$url" -qAtc 'SELECT 1' >/dev/null 2>"$dir/psql.err"; then
    echo "pg-test-server: cannot connect to the new server:" >&2
    cat "$dir/psql.err" "$dir/server.log" >&2 || true
    exit 1
  fi
  printf '%s\n' "$url" > "$dir/url"
  chmod 0600 "$dir/url"
  echo "$url"
}

stop() {
  local bin
  if [ ! -d "$dir/data" ]; then
    return 0  # never started (or already stopped)
  fi
  if bin=$(find_bin) && [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir/data" "$dir/url"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  url)
    if [ ! -s "$dir/url" ]; then
      echo "pg-test-server: no server in $dir (run: $0 start $dir)" >&2
      exit 1
    fi
    cat "$dir/url"
    ;;
  *) usage ;;
esac
