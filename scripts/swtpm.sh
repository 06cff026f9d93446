#!/usr/bin/env bash
# A software TPM 2.0 (swtpm) with EK certificates, for the tests and the
# demo. One implementation: tests/tpm/swtpm_harness.h runs this script.
#
#   scripts/swtpm.sh start [--ecc] STATE_DIR
#       Creates the TPM state in STATE_DIR if it is absent, starts swtpm on
#       127.0.0.1 and prints its TCTI string (also in STATE_DIR/tcti).
#   scripts/swtpm.sh stop STATE_DIR
#       Stops the swtpm started for STATE_DIR (no-op when none is running).
#
# What `start` guarantees:
#  - Everything lives in STATE_DIR (absolute or relative; created if
#    missing): the TPM state (tpm/), a private swtpm_localca CA (ca/), the
#    swtpm_setup / swtpm_localca configuration files, logs, the pid file and
#    swtpm_setup's temporary files (TMPDIR=STATE_DIR/tmp). Nothing under
#    /etc, /var/lib or $HOME is read or written, so it works as root and as
#    any other user, and several instances can run at once, one per
#    STATE_DIR.
#  - The state is manufactured by `swtpm_setup --tpm2 --create-ek-cert
#    --create-platform-cert --pcr-banks sha256,sha1`. swtpm_setup 0.7.1
#    activates only sha256 by default (its built-in default and the
#    packaged /etc/swtpm_setup.conf), so the banks are passed explicitly.
#    It creates an RSA 2048 EK (TCG template L-1, persisted at 0x81010001)
#    with its certificate in NV 0x01c00002, an ECC NIST P-384 EK
#    (0x81010016, certificate in NV 0x01c00016: note, not the P-256 index
#    0x01c0000a) and a platform certificate in NV 0x01c08000.
#  - With --ecc (first start only; recorded in STATE_DIR/ek-type), the EK
#    is ECC P-256 instead: an EK from the TCG template L-2 (tpm2_createek
#    -G ecc) is certified by the same local CA and its certificate written
#    to NV 0x01c0000a with swtpm_setup's NV attributes, and the RSA EK
#    certificate index 0x01c00002 is undefined. This step needs tpm2-tools.
#  - The CA certificates (root and the intermediate that signs the EK
#    certificates) are copied to STATE_DIR/ek-ca/{root,issuer}.pem.
#  - swtpm runs daemonized (`swtpm socket --tpm2 --flags
#    not-need-init,startup-clear`, TPM2_Startup(CLEAR) done), server port P
#    and control port P+1 on 127.0.0.1 (the swtpm TCTI always uses P+1),
#    pid in STATE_DIR/swtpm.pid, log in STATE_DIR/swtpm.log. Ports are
#    picked at random below the Linux ephemeral range and re-picked when a
#    bind fails (another process, another instance). `start` returns only
#    once the control channel answers.
#  - STATE_DIR/tcti holds "swtpm:host=127.0.0.1,port=P" (no newline).
# swtpm serves one client connection at a time: a second client (another
# ESYS context, a tpm2_* tool) waits until the first one disconnects.
# Exit status: 0 on success; 1 with a message on stderr otherwise; 2 on
# usage errors.
set -euo pipefail
umask 077  # STATE_DIR holds the CA's private keys

die() { echo "swtpm.sh: $*" >&2; exit 1; }
usage() {
  echo "usage: $0 start [--ecc] STATE_DIR | $0 stop STATE_DIR" >&2
  exit 2
}

# Lowest ephemeral port (ip_local_port_range): chosen ports stay below it so
# outgoing connections do not take them.
port_ceiling() {
  local lo
  lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$lo" -gt 12000 ] 2>/dev/null || lo=32768
  echo "$lo"
}

random_port() {  # an even port in [10000, ceiling - 2)
  local ceiling=$1 r
  r=$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')
  echo $(( (10000 + r % (ceiling - 10002)) & ~1 ))
}

pid_alive() {  # pid_alive PID STATE_DIR: a swtpm of this STATE_DIR runs as PID
  local pid=$1 dir=$2
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "dir=$dir/tpm " || return 1
}

write_configs() {  # write_configs STATE_DIR
  local dir=$1
  cat > "$dir/swtpm-localca.conf" <<EOF
statedir = $dir/ca
signingkey = $dir/ca/signkey.pem
issuercert = $dir/ca/issuercert.pem
certserial = $dir/ca/certserial
EOF
  cat > "$dir/swtpm-localca.options" <<EOF
--platform-manufacturer dpuaudit
--platform-version 2.1
--platform-model swtpm
EOF
  cat > "$dir/swtpm_setup.conf" <<EOF
create_certs_tool = $(command -v swtpm_localca)
create_certs_tool_config = $dir/swtpm-localca.conf
create_certs_tool_options = $dir/swtpm-localca.options
active_pcr_banks = sha256,sha1
EOF
}

manufacture() {  # manufacture STATE_DIR
  local dir=$1
  mkdir -p "$dir/tpm" "$dir/ca" "$dir/tmp" "$dir/ek-ca"
  write_configs "$dir"
  # HOME and XDG_CONFIG_HOME point into STATE_DIR so that no per-user
  # configuration (~/.config/swtpm_setup.conf, ...) is read.
  if ! env TMPDIR="$dir/tmp" HOME="$dir" XDG_CONFIG_HOME="$dir/tmp" \
      swtpm_setup --tpm2 --tpmstate "$dir/tpm" \
        --create-ek-cert --create-platform-cert \
        --pcr-banks sha256,sha1 \
        --config "$dir/swtpm_setup.conf" \
        --logfile "$dir/setup.log" --not-overwrite \
        > "$dir/setup.out" 2>&1; then
    cat "$dir/setup.out" "$dir/setup.log" >&2 2>/dev/null || true
    die "swtpm_setup failed for $dir (log: $dir/setup.log)"
  fi
  [ -s "$dir/tpm/tpm2-00.permall" ] || die "swtpm_setup wrote no TPM state in $dir/tpm"
  cp "$dir/ca/swtpm-localca-rootca-cert.pem" "$dir/ek-ca/root.pem"
  cp "$dir/ca/issuercert.pem" "$dir/ek-ca/issuer.pem"
}

# The spec/manufacturer options swtpm_setup passed to swtpm_localca, so the
# P-256 EK certificate says the same as the others.
localca_tpm_options() {  # localca_tpm_options STATE_DIR
  local line
  line=$(grep -m1 -o -- '--tpm-spec-family .* --tpm2' "$1/setup.log" 2>/dev/null || true)
  if [ -n "$line" ]; then
    echo "${line% --tpm2}"
  else
    echo "--tpm-spec-family 2.0 --tpm-spec-level 0 --tpm-spec-revision 164" \
         "--tpm-manufacturer id:00001014 --tpm-model swtpm --tpm-version id:20191023"
  fi
}

provision_ecc_p256() {  # provision_ecc_p256 STATE_DIR TCTI
  local dir=$1 tcti=$2 x y opts
  for t in tpm2_createek tpm2_print tpm2_flushcontext tpm2_nvdefine tpm2_nvwrite tpm2_nvundefine; do
    command -v "$t" > /dev/null || die "--ecc needs $t (tpm2-tools)"
  done
  export TPM2TOOLS_TCTI=$tcti
  local work=$dir/tmp/ecc
  rm -rf "$work" && mkdir -p "$work"
  {
    tpm2_createek -G ecc -c "$work/ek.ctx" -u "$work/ek.pub" &&
    tpm2_flushcontext -t
  } > "$work/log" 2>&1 || { cat "$work/log" >&2; die "tpm2_createek -G ecc failed"; }
  x=$(tpm2_print -t TPM2B_PUBLIC "$work/ek.pub" | sed -n 's/^x: *//p')
  y=$(tpm2_print -t TPM2B_PUBLIC "$work/ek.pub" | sed -n 's/^y: *//p')
  if [ ${#x} -ne 64 ] || [ ${#y} -ne 64 ]; then
    die "unexpected P-256 EK point x='$x' y='$y'"
  fi
  opts=$(localca_tpm_options "$dir")
  # shellcheck disable=SC2086  # opts is a list of words without spaces inside
  env TMPDIR="$dir/tmp" HOME="$dir" XDG_CONFIG_HOME="$dir/tmp" \
    swtpm_localca --type ek --ek "x=$x,y=$y,id=secp256r1" --dir "$work" \
      $opts --tpm2 --configfile "$dir/swtpm-localca.conf" \
      --optsfile "$dir/swtpm-localca.options" --logfile "$dir/setup.log" \
      >> "$work/log" 2>&1 || { cat "$work/log" >&2; die "swtpm_localca failed for the P-256 EK"; }
  [ -s "$work/ek.cert" ] || die "swtpm_localca wrote no P-256 EK certificate"
  # The NV attributes swtpm_setup gives its EK certificate indexes.
  {
    tpm2_nvdefine 0x01c0000a -C p -s "$(stat -c %s "$work/ek.cert")" \
      -a "ppwrite|writedefine|ppread|ownerread|authread|no_da|platformcreate" &&
    tpm2_nvwrite 0x01c0000a -C p -i "$work/ek.cert" &&
    tpm2_nvundefine 0x01c00002 -C p
  } >> "$work/log" 2>&1 || { cat "$work/log" >&2; die "writing the P-256 EK certificate to NV failed"; }
  unset TPM2TOOLS_TCTI
  rm -rf "$work"
}

start() {  # start STATE_DIR ECC(0|1)
  local dir=$1 ecc=$2
  for t in swtpm swtpm_setup swtpm_localca swtpm_ioctl; do
    command -v "$t" > /dev/null || die "$t is not installed (Debian: swtpm swtpm-tools)"
  done
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  case $dir in *[[:space:]]*) die "STATE_DIR must not contain whitespace: '$dir'";; esac

  if [ -f "$dir/swtpm.pid" ] && pid_alive "$(cat "$dir/swtpm.pid")" "$dir"; then
    die "a swtpm for $dir is already running (pid $(cat "$dir/swtpm.pid")); stop it first"
  fi
  local want=rsa2048
  [ "$ecc" = 1 ] && want=eccp256
  if [ ! -s "$dir/tpm/tpm2-00.permall" ]; then
    manufacture "$dir"
  elif [ -f "$dir/ek-type" ] && [ "$(cat "$dir/ek-type")" != "$want" ]; then
    die "$dir holds a TPM made with EK type $(cat "$dir/ek-type"), not $want"
  fi
  rm -f "$dir/tcti"

  local ceiling port ctrl pid=""
  ceiling=$(port_ceiling)
  for _ in $(seq 1 40); do
    port=$(random_port "$ceiling")
    ctrl=$((port + 1))
    rm -f "$dir/swtpm.pid"
    # swtpm binds both sockets before it daemonizes, so a taken port makes
    # this command fail ("Address already in use" in the log).
    if swtpm socket --tpm2 --tpmstate "dir=$dir/tpm" \
        --server "type=tcp,port=$port,bindaddr=127.0.0.1" \
        --ctrl "type=tcp,port=$ctrl,bindaddr=127.0.0.1" \
        --flags not-need-init,startup-clear \
        --daemon --pid "file=$dir/swtpm.pid" \
        --log "file=$dir/swtpm.log,truncate" > "$dir/swtpm.out" 2>&1; then
      for _ in $(seq 1 100); do  # the daemon writes its pid file
        pid=$(cat "$dir/swtpm.pid" 2>/dev/null || true)
        [ -n "$pid" ] && break
        sleep 0.05
      done
      [ -n "$pid" ] || die "swtpm started but wrote no pid file $dir/swtpm.pid"
      break
    fi
    if ! grep -qi "address already in use" "$dir/swtpm.log" "$dir/swtpm.out" 2>/dev/null; then
      cat "$dir/swtpm.out" "$dir/swtpm.log" >&2 2>/dev/null || true
      die "swtpm did not start for $dir"
    fi
  done
  [ -n "$pid" ] || die "no free port pair found for swtpm after 40 attempts"

  local ready=0
  for _ in $(seq 1 200); do
    if swtpm_ioctl --tcp "127.0.0.1:$ctrl" -g > /dev/null 2>&1; then
      ready=1
      break
    fi
    pid_alive "$pid" "$dir" || break
    sleep 0.05
  done
  if [ "$ready" != 1 ]; then
    cat "$dir/swtpm.log" >&2 2>/dev/null || true
    stop "$dir"
    die "swtpm (pid $pid) did not answer on 127.0.0.1:$ctrl"
  fi

  local tcti="swtpm:host=127.0.0.1,port=$port"
  if [ "$want" = eccp256 ] && [ ! -f "$dir/ek-type" ]; then
    ( provision_ecc_p256 "$dir" "$tcti" ) || { stop "$dir"; exit 1; }
  fi
  [ -f "$dir/ek-type" ] || echo "$want" > "$dir/ek-type"
  printf '%s' "$tcti" > "$dir/tcti.tmp"
  mv "$dir/tcti.tmp" "$dir/tcti"
  echo "$tcti"
}

stop() {  # stop STATE_DIR
  local dir=$1 pid
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  [ -f "$dir/swtpm.pid" ] || return 0
  pid=$(cat "$dir/swtpm.pid" 2>/dev/null || true)
  if pid_alive "$pid" "$dir"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
      pid_alive "$pid" "$dir" || break
      sleep 0.05
    done
    if pid_alive "$pid" "$dir"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$dir/swtpm.pid" "$dir/tcti"
}

[ $# -ge 1 ] || usage
cmd=$1
shift
ecc=0
dir=""
for a in "$@"; do
  case $a in
    --ecc) ecc=1 ;;
    -*) usage ;;
    *) [ -z "$dir" ] || usage; dir=$a ;;
  esac
done
[ -n "$dir" ] || usage
case $cmd in
  start) start "$dir" "$ecc" ;;
  stop) [ "$ecc" = 0 ] || usage; stop "$dir" ;;
  *) usage ;;
esac
