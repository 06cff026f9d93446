#!/usr/bin/env bash
# Generates a throw-away CA and a server certificate for 127.0.0.1/localhost
# into OUT_DIR (keys 0600). Used by tests and the demo; nothing is committed.
# Usage: certs/make-test-certs.sh OUT_DIR
set -euo pipefail
out=${1:?usage: make-test-certs.sh OUT_DIR}
mkdir -p "$out"
umask 077
openssl ecparam -name prime256v1 -genkey -noout -out "$out/ca.key" 2>/dev/null
openssl req -x509 -new -key "$out/ca.key" -sha256 -days 2 -subj "/CN=dpuaudit test CA" \
  -out "$out/ca.pem" 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out "$out/server.key" 2>/dev/null
openssl req -new -key "$out/server.key" -subj "/CN=localhost" -out "$out/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' > "$out/ext.cnf"
openssl x509 -req -in "$out/server.csr" -CA "$out/ca.pem" -CAkey "$out/ca.key" \
  -CAcreateserial -days 2 -sha256 -extfile "$out/ext.cnf" -out "$out/server.pem" 2>/dev/null
chmod 644 "$out/ca.pem" "$out/server.pem"
rm -f "$out/server.csr" "$out/ext.cnf"
