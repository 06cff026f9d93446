#!/usr/bin/env bash
# Install test (issue 18): the .deb packages on a clean Debian 12 root, run
# as their systemd units would run them, and one attestation end to end.
#   scripts/install-test.sh [DEB_DIR]    (default: build-package/, made by
#                                         scripts/package.sh if empty)
# As root. Steps:
#  1. a minimal Debian 12 root with debootstrap (kept in
#     /var/tmp/dpuaudit-install-base and copied for each run);
#  2. `apt-get install ./dpuaudit-verifier_*.deb ./dpuaudit-agent_*.deb
#     ./dpuaudit_*.deb` inside it: the declared dependencies come from the
#     Debian mirror, the maintainer scripts run (system user, 0700 state
#     directory);
#  3. checks what the packages installed: users, modes, conffiles, units;
#  4. systemd cannot run in a chroot, so each service is started the way its
#     unit starts it: the unit's ExecStart (read from the installed unit),
#     its User=, UMask= and WorkingDirectory=, NoNewPrivileges (setpriv);
#  5. the verifier serves /etc/dpuaudit/verifier.toml (an admin token file
#     added, as an operator does); the operator CLI imports reference values
#     and issues an enrollment token; the agent enrolls and runs one round
#     of its unit's `run` against the recorded BlueField-3 device
#     (tests/fixtures/devices/bf3-zero-trust: there is no DPU in the root,
#     so --device-root is added, and the unit's --tpm is dropped: that
#     device has no TPM), and `dpuaudit admit` must say admit (exit 0).
# Exit 0 when all of it holds, 1 when a check fails, 2 on a set-up error.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$here"
[ "$(id -u)" = 0 ] || { echo "install-test: run as root (debootstrap, chroot)" >&2; exit 2; }
debs=${1:-$here/build-package}
if ! ls "$debs"/dpuaudit-verifier_*.deb > /dev/null 2>&1; then
  bash scripts/package.sh "$debs" || [ $? = 1 ] || exit 2
fi
base=${DPUAUDIT_INSTALL_BASE:-/var/tmp/dpuaudit-install-base}
if [ ! -x "$base/bin/bash" ]; then
  command -v debootstrap > /dev/null || apt-get install -y debootstrap > /dev/null
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  rm -rf "$base.tmp"
  debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" > /tmp/dpuaudit-debootstrap.log 2>&1 \
    || { tail -20 /tmp/dpuaudit-debootstrap.log >&2; exit 2; }
  mv "$base.tmp" "$base"
fi
run=$(mktemp -d /var/tmp/dpuaudit-install-run.XXXXXX)
root=$run/root
cleanup() {
  chroot "$root" /bin/sh -c 'kill $(cat /tmp/verifier.pid 2>/dev/null) 2>/dev/null' || true
  for m in dev/pts dev proc sys; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf "$run"
}
trap cleanup EXIT
cp -a "$base" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
if [ -s /etc/apt/sources.list.d/debian.sources ]; then
  cp -a /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
fi
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mkdir -p "$root/srv/debs" "$root/srv/fixtures"
cp "$debs"/*.deb "$root/srv/debs/"
cp -a tests/fixtures/devices/bf3-zero-trust "$root/srv/fixtures/"
cp tests/fixtures/refvals/bf3-releases.json "$root/srv/fixtures/"
in_root() { chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
fail() { echo "install-test: FAIL: $*" >&2; exit 1; }

echo "== install (apt-get, declared dependencies from the mirror)"
in_root apt-get update -q > "$run/apt.log" 2>&1 || { tail "$run/apt.log" >&2; exit 2; }
t0=$(date +%s)
in_root sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q /srv/debs/dpuaudit-verifier_*.deb /srv/debs/dpuaudit-agent_*.deb /srv/debs/dpuaudit_*.deb' \
  >> "$run/apt.log" 2>&1 || { tail -30 "$run/apt.log" >&2; fail "apt-get install"; }
echo "   installed in $(( $(date +%s) - t0 )) s: $(in_root dpkg-query -W -f='${Package} ${Version} ${Installed-Size}K; ' 'dpuaudit*')"

echo "== what the packages put in place"
in_root getent passwd dpuaudit > /dev/null || fail "no dpuaudit system user"
shell=$(in_root getent passwd dpuaudit | cut -d: -f7)
case "$shell" in */nologin|*/false) ;; *) fail "dpuaudit has a login shell: $shell";; esac
mode=$(in_root stat -c '%a %U' /var/lib/dpuaudit-verifier)
[ "$mode" = "700 dpuaudit" ] || fail "/var/lib/dpuaudit-verifier is $mode, expected 700 dpuaudit"
mode=$(in_root stat -c '%a %U' /var/lib/dpuaudit)
[ "$mode" = "700 root" ] || fail "/var/lib/dpuaudit (the agent's) is $mode, expected 700 root"
for f in /usr/bin/dpuaudit-agent /usr/bin/dpuaudit-verifier /usr/bin/dpuaudit \
         /lib/systemd/system/dpuaudit-agent.service /lib/systemd/system/dpuaudit-verifier.service \
         /usr/lib/sysusers.d/dpuaudit.conf /etc/dpuaudit/verifier.toml /etc/dpuaudit/agent.env \
         /etc/dpuaudit/policies/zero-trust.json; do
  [ -e "$root$f" ] || fail "$f is missing"
done
in_root dpkg-query -W -f='${Conffiles}\n' dpuaudit-verifier | grep -q /etc/dpuaudit/verifier.toml \
  || fail "verifier.toml is not a conffile"
for b in dpuaudit-agent dpuaudit-verifier dpuaudit; do
  in_root "/usr/bin/$b" --help > /dev/null || fail "$b --help"
done
echo "   user dpuaudit (no login shell), /var/lib/dpuaudit-verifier 0700, the agent's /var/lib/dpuaudit 0700 root, units, conffiles, every --help runs"

# The unit's ExecStart / User / UMask / WorkingDirectory (no systemd here).
unit_value() { sed -n "s/^$2=//p" "$root/lib/systemd/system/$1" | tail -1; }
echo "== dpuaudit-verifier, as its unit runs it"
(umask 077; head -c 24 /dev/urandom | base64 | tr -d '\n' > "$root/etc/dpuaudit/admin.token")
in_root chown dpuaudit:dpuaudit /etc/dpuaudit/admin.token
sed -i 's|^# admin-token-file = .*|admin-token-file = "/etc/dpuaudit/admin.token"|' "$root/etc/dpuaudit/verifier.toml"
printf 'ready-file = "/var/lib/dpuaudit-verifier/ready"\nlisten = "127.0.0.1:0"\n' >> "$root/etc/dpuaudit/verifier.toml"
exec_start=$(unit_value dpuaudit-verifier.service ExecStart)
user=$(unit_value dpuaudit-verifier.service User)
umask_v=$(unit_value dpuaudit-verifier.service UMask)
wd=$(unit_value dpuaudit-verifier.service WorkingDirectory)
[ "$user" = dpuaudit ] || fail "verifier unit User=$user"
echo "   $exec_start (User=$user UMask=$umask_v WorkingDirectory=$wd)"
in_root sh -c "cd $wd && umask $umask_v && exec setpriv --reuid dpuaudit --regid dpuaudit --init-groups --no-new-privs --inh-caps=-all $exec_start > /tmp/verifier.log 2>&1 & echo \$! > /tmp/verifier.pid"
for _ in $(seq 1 100); do [ -s "$root/var/lib/dpuaudit-verifier/ready" ] && break; sleep 0.1; done
[ -s "$root/var/lib/dpuaudit-verifier/ready" ] || { cat "$root/tmp/verifier.log" >&2; fail "the verifier did not start"; }
url=$(head -1 "$root/var/lib/dpuaudit-verifier/ready")
owner=$(in_root stat -c '%U %a' /var/lib/dpuaudit-verifier/verifier.db)
[ "$owner" = "dpuaudit 600" ] || fail "the store is $owner, expected dpuaudit 600"
keymode=$(in_root stat -c '%U %a' /var/lib/dpuaudit-verifier/verifier.key)
[ "$keymode" = "dpuaudit 600" ] || fail "the EAR signing key is $keymode, expected dpuaudit 600"
echo "   serving $url; store and signing key 0600, owned by dpuaudit"

echo "== operator: reference values and an enrollment token (dpuaudit CLI)"
admin=(--verifier "$url" --admin-token-file /etc/dpuaudit/admin.token)
in_root dpuaudit refvals import /srv/fixtures/bf3-releases.json "${admin[@]}" > "$run/cli.log" 2>&1 \
  || { cat "$run/cli.log" >&2; fail "refvals import"; }
node=bf3-zero-trust
serial=$(cat "$root/srv/fixtures/bf3-zero-trust/fs/sys/bus/platform/devices/MLNXBF04:00/sn" 2>/dev/null || true)
in_root dpuaudit tokens issue "$node" ${serial:+--serial "$serial"} --ttl 1h --by install-test \
  --out /root/enroll.token "${admin[@]}" >> "$run/cli.log" 2>&1 || { cat "$run/cli.log" >&2; fail "tokens issue"; }

echo "== dpuaudit-agent: enroll, then one round of its unit's run"
sed -i "s|^DPUAUDIT_VERIFIER=.*|DPUAUDIT_VERIFIER=$url|; s|^DPUAUDIT_NODE_ID=.*|DPUAUDIT_NODE_ID=$node|" \
  "$root/etc/dpuaudit/agent.env"
in_root dpuaudit-agent enroll --verifier "$url" --node-id "$node" --key /var/lib/dpuaudit/agent.key \
  --token-file /root/enroll.token --device-root /srv/fixtures/bf3-zero-trust > "$run/agent.log" 2>&1 \
  || { cat "$run/agent.log" >&2; fail "agent enroll"; }
[ "$(in_root stat -c '%a' /var/lib/dpuaudit/agent.key)" = 600 ] || fail "agent.key is not 0600"
agent_exec=$(unit_value dpuaudit-agent.service ExecStart)
# EnvironmentFile= substitution, then the two changes this root needs.
set -a; . "$root/etc/dpuaudit/agent.env"; set +a
agent_exec=${agent_exec//\$\{DPUAUDIT_VERIFIER\}/$DPUAUDIT_VERIFIER}
agent_exec=${agent_exec//\$\{DPUAUDIT_NODE_ID\}/$DPUAUDIT_NODE_ID}
agent_exec=${agent_exec/ --tpm device:\/dev\/tpmrm0/}
agent_exec=${agent_exec/ --cacert \/etc\/dpuaudit\/verifier-ca.pem/}   # plain HTTP on loopback here
agent_exec="$agent_exec --count 1 --device-root /srv/fixtures/bf3-zero-trust --ear-out /var/lib/dpuaudit/ear.jwt"
echo "   $agent_exec"
in_root sh -c "umask 077 && exec setpriv --no-new-privs $agent_exec" >> "$run/agent.log" 2>&1 \
  || { cat "$run/agent.log" >&2; fail "agent run"; }
[ -s "$root/var/lib/dpuaudit/ear.jwt" ] || fail "no EAR written"

echo "== the node is admitted"
set +e
# The relying party pins the verifier's key out of band: its JWKS from the key.
in_root sh -c 'dpuaudit-verifier jwks --key /var/lib/dpuaudit-verifier/verifier.key > /root/verifier-jwks.json'
in_root dpuaudit admit --verifier "$url" --node "$node" --token-file /etc/dpuaudit/admin.token \
  --jwks /root/verifier-jwks.json > "$run/admit.log" 2>&1
rc=$?
set -e
sed 's/^/   /' "$run/admit.log" | head -5
[ "$rc" = 0 ] || fail "dpuaudit admit exited $rc (expected 0: admit)"
echo "install-test: PASS (packages installed, services started as their units, one attestation admitted)"
