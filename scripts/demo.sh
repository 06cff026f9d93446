#!/usr/bin/env bash
# The README's demo command: installs missing Debian packages (as root),
# builds, then runs the attestation spine end to end on recorded
# BlueField-3 devices:
#   verifier (loopback HTTP, fresh SQLite file, admin API)
#   <- a firmware release staged as pending reference values (import-bfb)
#   <- a canary attests (denied: pending) -> the release is promoted
#   <- agents enroll + attest -> signed reports + signed EARs
#   -> firmware and boot-stream digests per node
#   <- a fourth node backed by a software TPM (swtpm with EK certificates):
#      credential activation at enrollment, a hardware-signed quote and a
#      replayed boot event log decide its admission
#   -> summary -> admit gate
#   <- the BMC path: a second verifier pulls two simulated BMCs (HTTPS
#      Redfish + SPDM); one node is corroborated and hardware-rooted, the
#      other's agent claims RESTRICTED while its BMC says PRIVILEGED: denied.
#   <- continuous attestation: `dpuaudit-agent run` every 2 s against a third
#      verifier (HTTPS, --stale-after 6s, webhooks); the agent stops, the node
#      goes stale and is denied, and a webhook receiver prints the signed
#      events it verified (node.approved, node.admitted, node.stale).
# Leaves the reports and EARs on disk and prints their paths; stops what it
# started; exits 0 when the demo ran (whatever the decisions are).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
# shellcheck source=scripts/deps.sh
source scripts/deps.sh
ensure_packages "${DPUAUDIT_BUILD_PACKAGES[@]}"
ensure_packages python3  # scripts/webhook-receiver.py

build=${DPUAUDIT_BUILD_DIR:-$here/build}
echo "== building (first build takes a few minutes)"
DPUAUDIT_BUILD_DIR=$build scripts/build.sh -- dpuaudit-agent dpuaudit-verifier dpuaudit dpuaudit-bmc-sim \
  > /tmp/dpuaudit-demo-build.log 2>&1 || { tail -50 /tmp/dpuaudit-demo-build.log >&2; exit 1; }
bin=$build/bin

out=$(mktemp -d /tmp/dpuaudit-demo.XXXXXX)
chmod 700 "$out"
verifier_pid=""
bmc_pids=()
cleanup() {
  if [ -n "$verifier_pid" ] && kill -0 "$verifier_pid" 2>/dev/null; then
    kill "$verifier_pid" 2>/dev/null || true
    wait "$verifier_pid" 2>/dev/null || true
  fi
  for p in "${bmc_pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ -d "$out/swtpm" ] && scripts/swtpm.sh stop "$out/swtpm" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The admin token guards the admin API: reference values (refvals
# import/promote/...), per-node enrollment tokens and node revocation. No
# shared fleet token: each demo node enrolls with its own single-use token.
(umask 077; head -c 24 /dev/urandom | base64 | tr -d '\n' > "$out/admin.token")
# The reader token lets relying parties read node state and admission.
(umask 077; head -c 24 /dev/urandom | base64 | tr -d '\n' > "$out/reader.token")

echo "== manufacturing a software TPM (swtpm, EK certificate from its own local CA)"
tcti=$(scripts/swtpm.sh start "$out/swtpm")
echo "   $tcti; EK CA certificates in $out/swtpm/ek-ca (the verifier trusts them)"

echo "== starting dpuaudit-verifier (SQLite: $out/verifier.db)"
"$bin/dpuaudit-verifier" serve --listen 127.0.0.1:0 --ready-file "$out/verifier.url" \
  --db "$out/verifier.db" --policy policies/zero-trust.json --key "$out/verifier.key" \
  --admin-token-file "$out/admin.token" \
  --reader-token-file "$out/reader.token" --verifier-id demo-verifier \
  --ek-ca-dir "$out/swtpm/ek-ca" 2> "$out/verifier.log" &
verifier_pid=$!
for _ in $(seq 1 100); do
  [ -s "$out/verifier.url" ] && break
  kill -0 "$verifier_pid" 2>/dev/null || { cat "$out/verifier.log" >&2; exit 1; }
  sleep 0.1
done
[ -s "$out/verifier.url" ] || { echo "verifier did not start" >&2; cat "$out/verifier.log" >&2; exit 1; }
url=$(cat "$out/verifier.url")
echo "   listening on $url"

release=bf-bundle-2.9.1-40
bfb=tests/fixtures/bfb/$release.bfb
admin=(--verifier "$url" --admin-token-file "$out/admin.token")

echo
echo "== release engineering: dpuaudit bfb inspect $bfb"
"$bin/dpuaudit" bfb inspect "$bfb" | sed 's/^/   /'

echo
echo "== stage $release as PENDING reference values (every image digest + its versions)"
"$bin/dpuaudit" refvals import-bfb "$bfb" --model BF3 --state pending \
  --version "atf=v2.2(release):4.9.1-21-gfc25b08d9" --version "uefi=4.9.1-36-g0c3239837a" \
  --version "bsp=4.9.1.13442" --version "os=bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod" \
  --version "nic-fw=32.43.2402" --by demo-operator --reason "Q4 firmware rollout" "${admin[@]}"

echo
echo "== import the OS boot artefacts (kernel, initrd, shim, GRUB) from a manifest"
"$bin/dpuaudit" refvals import tests/fixtures/refvals/bf3-os-boot.json "${admin[@]}"

attest() {  # node [agent flags...] -> report.jws / ear.jwt in $out/<node>/
  local node=$1
  shift
  mkdir -p "$out/$node"
  if [ ! -f "$out/$node/agent.key" ]; then
    # The admin issues this node's single-use token (bound to its id and
    # the serial of its recorded device); the DPU enrolls with it.
    serial=$(cat "tests/fixtures/devices/$node/fs/sys/bus/platform/devices/MLNXBF04:00/sn" \
      2>/dev/null || true)
    "$bin/dpuaudit" tokens issue "$node" ${serial:+--serial "$serial"} --ttl 1h \
      --by demo-admin --out "$out/$node/enroll.token" "${admin[@]}" | sed 's/^/   /'
    "$bin/dpuaudit-agent" enroll --verifier "$url" --node-id "$node" \
      --key "$out/$node/agent.key" --token-file "$out/$node/enroll.token" \
      --device-root "tests/fixtures/devices/$node" "$@"
    "$bin/dpuaudit-agent" pubkey --key "$out/$node/agent.key" > "$out/$node/agent.pub.pem"
  fi
  "$bin/dpuaudit-agent" attest --verifier "$url" --node-id "$node" \
    --key "$out/$node/agent.key" --device-root "tests/fixtures/devices/$node" \
    --report-out "$out/$node/report.jws" --ear-out "$out/$node/ear.jwt" "$@"
}

# The relying party pins the verifier's key out of band (never from the
# server it checks): exported offline from the key file, then trusted.
"$bin/dpuaudit-verifier" jwks --key "$out/verifier.key" > "$out/verifier-jwks.json"
export DPUAUDIT_TRUST_FILE=$out/trust.json
"$bin/dpuaudit" trust add --jwks "$out/verifier-jwks.json" | sed 's/^/   /'

echo
echo "== canary bf3-zero-trust attests against the pending release"
attest bf3-zero-trust
"$bin/dpuaudit" result summary --jwks "$out/verifier-jwks.json" "$out/bf3-zero-trust/ear.jwt"
cp "$out/bf3-zero-trust/ear.jwt" "$out/bf3-zero-trust/ear-canary.jwt"

echo
echo "== the canary matches the staged release exactly: promote it"
"$bin/dpuaudit" refvals promote "$release" --by demo-operator \
  --reason "canary bf3-zero-trust matched every digest" "${admin[@]}"

nodes=(bf3-zero-trust bf3-privileged-host bf3-fw-outdated)
for node in "${nodes[@]}"; do
  echo
  echo "== $node: enroll and attest (recorded device tests/fixtures/devices/$node)"
  attest "$node"
  "$bin/dpuaudit" report firmware --pubkey "$out/$node/agent.pub.pem" "$out/$node/report.jws" \
    | sed 's/^/   /'
done

echo
echo "== bf3-ftpm: a node whose decision rests on a TPM quote"
echo "   firmware measures the boot into the TPM (simulated: the recorded event log is played into swtpm)"
"$bin/dpuaudit-agent" simulate-boot --tpm "$tcti" \
  --eventlog tests/fixtures/devices/bf3-ftpm/fs/sys/kernel/security/tpm0/binary_bios_measurements \
  | sed 's/^/   /'
"$bin/dpuaudit" eventlog tests/fixtures/eventlogs/bf3-ftpm-boot.bin | sed -n "/^ *sha256:/,\$p" | sed "s/^/   /"
echo "   golden measurements as reference values: sha256 PCRs 0-7, shim and GRUB digests"
"$bin/dpuaudit" refvals import tests/fixtures/refvals/bf3-ftpm.json "${admin[@]}"
echo "   enroll (EK certificate checked, AK bound by credential activation) and attest with a quote"
attest bf3-ftpm --tpm "$tcti"
"$bin/dpuaudit" result show --jwks "$out/verifier-jwks.json" "$out/bf3-ftpm/ear.jwt" \
  | grep -E "tpm|decision" | sed 's/^/   /'
echo "   an auditor re-checks the quote with tpm2-tools, independently of dpuaudit:"
"$bin/dpuaudit" report export-quote "$out/bf3-ftpm/report.jws" --out "$out/bf3-ftpm/quote" \
  --verifier "$url" --token-file "$out/reader.token" | sed 's/^/   /'
q=$out/bf3-ftpm/quote
tpm2_checkquote -u "$q/ak.pub.pem" -m "$q/quote.msg" -s "$q/quote.sig" -f "$q/quote.pcrs" \
  -g sha256 -q "$(cat "$q/qualifying.hex")" > "$q/checkquote.out" 2>&1 \
  && echo "   tpm2_checkquote: signature, nonce and PCR digest OK" \
  || { echo "   tpm2_checkquote FAILED:"; sed 's/^/   /' "$q/checkquote.out"; }
echo "   something extends PCR 4 outside the logged boot: the next quote no longer replays"
tpm2_pcrextend -T "$tcti" "4:sha256=$(printf '%064d' 1)" 2>/dev/null \
  || echo "   (tpm2_pcrextend failed; skipping the tamper step)"
cp "$out/bf3-ftpm/ear.jwt" "$out/bf3-ftpm/ear-booted.jwt"
attest bf3-ftpm --tpm "$tcti"
nodes+=(bf3-ftpm)

echo
echo "== reference values now held by the verifier"
"$bin/dpuaudit" refvals list "${admin[@]}" | sed 's/^/   /'

echo
echo "== summary (each EAR's signature checked against the pinned verifier key)"
ears=()
for node in "${nodes[@]}"; do ears+=("$out/$node/ear.jwt"); done
ears=("$out/bf3-ftpm/ear-booted.jwt" "${ears[@]}")
echo "   (bf3-ftpm twice: as booted, then after the unlogged PCR 4 extend)"
"$bin/dpuaudit" result summary --jwks "$out/verifier-jwks.json" "${ears[@]}"

echo
echo "== provisioning gate: dpuaudit admit (exit 0 admit, 1 deny, 2 error; pinned key, reader token)"
for node in "${nodes[@]}"; do
  set +e
  "$bin/dpuaudit" admit --verifier "$url" --node "$node" --verifier-id demo-verifier \
    --token-file "$out/reader.token"
  rc=$?
  set -e
  echo "   dpuaudit admit --node $node -> exit $rc"
done

echo
echo "== a squatter enrolls an unused id first, without a token: it waits, pending"
mkdir -p "$out/squatter" "$out/bf3-nic-mode"
"$bin/dpuaudit-agent" enroll --verifier "$url" --node-id bf3-nic-mode \
  --key "$out/squatter/agent.key" | sed 's/^/   /'
echo "   the operator approves by id and the real device's key: refused, the stored key is shown"
"$bin/dpuaudit-verifier" approve bf3-nic-mode --thumbprint not-the-squatters-key \
  --db "$out/verifier.db" 2>&1 | sed 's/^/   /' || true
echo "   the real device enrolls with its per-node token and takes the id over"
attest bf3-nic-mode >/dev/null || true
"$bin/dpuaudit-verifier" nodes show bf3-nic-mode --db "$out/verifier.db" | sed 's/^/   /'

echo
echo "== bf3-privileged-host is sent for repair: revoke it (admission is deny at once)"
"$bin/dpuaudit" nodes revoke bf3-privileged-host --by demo-admin --reason "sent for repair" \
  "${admin[@]}" | sed 's/^/   /'
set +e
"$bin/dpuaudit" admit --verifier "$url" --node bf3-privileged-host --verifier-id demo-verifier \
  --token-file "$out/reader.token"
echo "   dpuaudit admit --node bf3-privileged-host -> exit $?"
set -e

echo
echo "== the BMC path: a second verifier pulls each DPU's own BMC (Redfish + SPDM, docs/bmc-config-schema.md)"
echo "   two simulated BlueField-3 BMCs over HTTPS: bmc-a honest; bmc-b reports the host PRIVILEGED"
b=$out/bmc
mkdir -p "$b"
(umask 077; printf '{"username":"root","password":"%s"}' "$(head -c 18 /dev/urandom | base64)" > "$b/creds.json")
start_sim() {  # name [faults...]
  local name=$1
  shift
  local faults=()
  for f in "$@"; do faults+=(--fault "$f"); done
  "$bin/dpuaudit-bmc-sim" --profile tests/fixtures/bmc/bf3-zero-trust.json --spdm \
    --keys-dir "$b/$name-keys" --anchor-out "$b/$name-anchor.pem" --credentials "$b/creds.json" \
    --ready-file "$b/$name.ready" "${faults[@]}" > "$b/$name.log" 2>&1 &
  bmc_pids+=($!)
  for _ in $(seq 1 100); do [ -s "$b/$name.ready" ] && break; sleep 0.1; done
  [ -s "$b/$name.ready" ] || { cat "$b/$name.log" >&2; exit 1; }
}
start_sim bmc-a
start_sim bmc-b host-privileged
ready_field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\).*/\1/p" "$b/$1.ready"; }
cat > "$b/bmc-config.json" <<JSON
{"schema": "dpuaudit-bmc-config/1",
 "trust_anchors": ["bmc-a-anchor.pem", "bmc-b-anchor.pem"],
 "interval_seconds": 60,
 "nodes": {
  "bf3-bmc-honest": {"url": "$(ready_field bmc-a url)", "pin_sha256": "$(ready_field bmc-a tls_spki_sha256)",
                     "auth": "basic", "credentials_file": "creds.json"},
  "bf3-bmc-liar":   {"url": "$(ready_field bmc-b url)", "pin_sha256": "$(ready_field bmc-b tls_spki_sha256)",
                     "auth": "basic", "credentials_file": "creds.json"}}}
JSON
(umask 077; head -c 24 /dev/urandom | base64 | tr -d '\n' > "$b/bootstrap.token")
start_bmc_verifier() {
  rm -f "$b/verifier.url"
  "$bin/dpuaudit-verifier" serve --listen 127.0.0.1:0 --ready-file "$b/verifier.url" \
    --db "$b/verifier.db" --policy policies/zero-trust-bmc.json --key "$b/verifier.key" \
    --admin-token-file "$out/admin.token" --reader-token-file "$out/reader.token" \
    --bootstrap-token-file "$b/bootstrap.token" --bmc-config "$b/bmc-config.json" \
    --verifier-id demo-bmc-verifier 2>> "$b/verifier.log" &
  bmc_verifier_pid=$!
  bmc_pids+=($bmc_verifier_pid)
  for _ in $(seq 1 300); do [ -s "$b/verifier.url" ] && break; sleep 0.1; done
  [ -s "$b/verifier.url" ] || { cat "$b/verifier.log" >&2; exit 1; }
  burl=$(cat "$b/verifier.url")
}
start_bmc_verifier
"$bin/dpuaudit" refvals import tests/fixtures/refvals/bf3-releases.json --verifier "$burl" \
  --admin-token-file "$out/admin.token" | sed 's/^/   /'
for node in bf3-bmc-honest bf3-bmc-liar; do
  "$bin/dpuaudit-agent" enroll --verifier "$burl" --node-id "$node" --key "$b/$node.key" \
    --bootstrap-token-file "$b/bootstrap.token" | sed 's/^/   /'
done
echo "   restart: the verifier pulls every enrolled node's BMC before it is ready"
kill "$bmc_verifier_pid"; wait "$bmc_verifier_pid" 2>/dev/null || true
start_bmc_verifier
"$bin/dpuaudit-verifier" jwks --key "$b/verifier.key" > "$b/verifier-jwks.json"
for node in bf3-bmc-honest bf3-bmc-liar; do
  echo "   $node: its agent attests the recorded bf3-zero-trust device (it claims RESTRICTED)"
  "$bin/dpuaudit-agent" attest --verifier "$burl" --node-id "$node" --key "$b/$node.key" \
    --device-root tests/fixtures/devices/bf3-zero-trust --ear-out "$b/$node.ear.jwt" \
    --report-out "$b/$node.report.jws" | sed 's/^/   /'
  "$bin/dpuaudit" result show --jwks "$b/verifier-jwks.json" "$b/$node.ear.jwt" \
    | grep -E "^ *(submod|irot|erot|bmc|arm-agent|posture)|host.privilege_level|bmc.host|irot.measurements|irot.identity|require\.|decision" \
    | head -24 | sed 's/^/   /' || true
  set +e
  "$bin/dpuaudit" admit --verifier "$burl" --node "$node" --jwks "$b/verifier-jwks.json" \
    --token-file "$out/reader.token"
  echo "   dpuaudit admit --node $node -> exit $?"
  set -e
done

echo
echo "== continuous attestation: an agent attests every 2 s; it stops; the node goes stale"
echo "   a third verifier over HTTPS with --stale-after 6s delivers every decision event to a"
echo "   webhook receiver (scripts/webhook-receiver.py) that checks each HMAC-SHA256 signature"
c=$out/continuous
mkdir -p "$c"
bash certs/make-test-certs.sh "$c/certs" > /dev/null
(umask 077; head -c 32 /dev/urandom | base64 | tr -d '\n' > "$c/hook.secret")
(umask 077; head -c 24 /dev/urandom | base64 | tr -d '\n' > "$c/bootstrap.token")
python3 scripts/webhook-receiver.py --listen 127.0.0.1:0 --port-file "$c/receiver.port" \
  --secret-file "$c/hook.secret" --cert "$c/certs/server.pem" --key "$c/certs/server.key" \
  --log "$c/events.jsonl" > "$c/receiver.out" 2>&1 &
bmc_pids+=($!)
for _ in $(seq 1 100); do [ -s "$c/receiver.port" ] && break; sleep 0.1; done
[ -s "$c/receiver.port" ] || { cat "$c/receiver.out" >&2; exit 1; }
cat > "$c/webhooks.json" <<JSON
{"schema": "dpuaudit-webhooks/1",
 "endpoints": [{"name": "netctl", "url": "https://127.0.0.1:$(cat "$c/receiver.port")/hook",
                "secret_file": "$c/hook.secret", "ca_file": "$c/certs/ca.pem"}]}
JSON
"$bin/dpuaudit-verifier" serve --listen 127.0.0.1:0 --ready-file "$c/verifier.url" \
  --db "$c/verifier.db" --policy policies/zero-trust.json --key "$c/verifier.key" \
  --tls-cert "$c/certs/server.pem" --tls-key "$c/certs/server.key" \
  --admin-token-file "$out/admin.token" --reader-token-file "$out/reader.token" \
  --bootstrap-token-file "$c/bootstrap.token" --verifier-id demo-continuous \
  --stale-after 6s --webhooks "$c/webhooks.json" 2> "$c/verifier.log" &
bmc_pids+=($!)
for _ in $(seq 1 300); do [ -s "$c/verifier.url" ] && break; sleep 0.1; done
[ -s "$c/verifier.url" ] || { cat "$c/verifier.log" >&2; exit 1; }
curl_=$(cat "$c/verifier.url")
tls=(--cacert "$c/certs/ca.pem")
"$bin/dpuaudit" refvals import tests/fixtures/refvals/bf3-releases.json --verifier "$curl_" \
  --admin-token-file "$out/admin.token" "${tls[@]}" > /dev/null
"$bin/dpuaudit-verifier" jwks --key "$c/verifier.key" > "$c/verifier-jwks.json"
"$bin/dpuaudit-agent" enroll --verifier "$curl_" --node-id bf3-live --key "$c/bf3-live.key" \
  --bootstrap-token-file "$c/bootstrap.token" "${tls[@]}" | sed 's/^/   /'
"$bin/dpuaudit-agent" run --interval 2s --verifier "$curl_" --node-id bf3-live \
  --key "$c/bf3-live.key" --device-root tests/fixtures/devices/bf3-zero-trust "${tls[@]}" \
  > "$c/agent.log" 2>&1 &
agent_pid=$!
gate() {
  "$bin/dpuaudit" admit --verifier "$curl_" --node bf3-live --jwks "$c/verifier-jwks.json" \
    --token-file "$out/reader.token" "${tls[@]}" "$@"
}
for _ in $(seq 1 100); do gate --quiet && break; sleep 0.2; done
set +e
gate | sed 's/^/   /'
echo "   agent running (pid $agent_pid): $(grep -c . "$c/agent.log") log lines so far; now it stops"
kill "$agent_pid"; wait "$agent_pid" 2>/dev/null
for _ in $(seq 1 100); do gate --quiet || break; sleep 0.2; done
gate | sed 's/^/   /'
echo "   dpuaudit admit -> exit ${PIPESTATUS[0]}"
set -e
for _ in $(seq 1 50); do grep -q node.stale "$c/events.jsonl" 2>/dev/null && break; sleep 0.2; done
echo "   the webhook receiver got (each signature verified, de-duplicated by event id):"
sed 's/^/     /' "$c/receiver.out"
"$bin/dpuaudit" webhooks status --verifier "$curl_" --admin-token-file "$out/admin.token" \
  "${tls[@]}" | sed 's/^/   /' || true

echo
echo "== for auditors: export bf3-zero-trust's audit bundle and verify it offline (docs/audit.md)"
"$bin/dpuaudit" bundle export --node bf3-zero-trust --out "$out/bf3-zero-trust.bundle.json" \
  --verifier "$url" --token-file "$out/reader.token" | sed 's/^/   /'
echo "   no server from here on: only the bundle and the pinned verifier key"
"$bin/dpuaudit" bundle verify "$out/bf3-zero-trust.bundle.json" \
  --trust "$out/verifier-jwks.json" | sed 's/^/   /'
echo "   a copy in which one result's decision was changed:"
python3 - "$out/bf3-zero-trust.bundle.json" "$out/tampered.bundle.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
r = b["results"][-1]
r["decision"] = "deny" if r["decision"] == "admit" else "admit"
json.dump(b, open(sys.argv[2], "w"))
PY
set +e
"$bin/dpuaudit" bundle verify "$out/tampered.bundle.json" \
  --trust "$out/verifier-jwks.json" | sed 's/^/   /'
echo "   dpuaudit bundle verify -> exit ${PIPESTATUS[0]}"
set -e
echo "   the store's whole hash chain and its signed checkpoints:"
"$bin/dpuaudit-verifier" audit verify --db "$out/verifier.db" \
  --trust "$out/verifier-jwks.json" | sed 's/^/   /'

echo
echo "== files left on disk"
for node in "${nodes[@]}"; do
  echo "   $node report: $out/$node/report.jws"
  echo "   $node EAR:    $out/$node/ear.jwt"
done
echo "   verifier log: $out/verifier.log   database: $out/verifier.db"
echo "   inspect: $bin/dpuaudit report show --pubkey $out/bf3-privileged-host/agent.pub.pem $out/bf3-privileged-host/report.jws"
echo "            $bin/dpuaudit result show --trust-file $out/trust.json $out/bf3-fw-outdated/ear.jwt"
