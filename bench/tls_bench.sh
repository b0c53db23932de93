#!/usr/bin/env bash
# bench/tls_bench.sh — produce and consume throughput over TLS, as a ratio to plaintext.
#
# Makes a throwaway CA and server certificate (SAN IP:127.0.0.1, DNS:localhost; ECDSA
# P-256 or RSA 2048) with the openssl CLI, starts one broker with two listeners,
# PLAINTEXT and SSL, on a scratch data dir, and measures with `sluice-loadgen`
# (librdkafka), RECORD_SIZE-byte records (1 KiB), PARTITIONS-partition topics:
#
#   1. flat-out produce, acks=all, for PRODUCE_SECS (or RECORDS records) into a fresh
#      topic over PLAINTEXT and into another over SSL (and the same with acks=1 when
#      ACKS says so): records/s, MB/s, and the CPU the broker and the client used;
#   2. consume: each acks=all topic read back from the beginning to its end, once over
#      PLAINTEXT and once over SSL, straight after, so from a warm page cache.
#   Everything is repeated REPEATS times, the PLAINTEXT/SSL order alternating from one
#   repeat to the next. The summary gives the SSL / PLAINTEXT ratios (the target of
#   the issue: TLS at least 60% of plaintext), the negotiated protocol and cipher (from
#   `openssl s_client`, and from librdkafka's own handshake log) and the machine.
#
# Builds nothing: give the build dir (default build/) as the argument or BUILD_DIR.
# Everything binds to 127.0.0.1; the broker is stopped and the scratch dir (keys
# included) deleted on exit, Ctrl-C included. See bench/README.md ("tls_bench.sh").

set -u -o pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<EOF
usage: bench/tls_bench.sh [--quick] [--keep] [--acks1] [BUILD_DIR]

  BUILD_DIR     where sluice and bench/sluice-loadgen are [\$BUILD_DIR or $ROOT/build]
  --quick       short runs, to smoke-test the script (~40 s)
  --keep        keep the scratch dir (certificates, broker data, logs) at exit
  --acks1       also produce with acks=1 (same as ACKS="-1 1")

environment (defaults in brackets):
  SLUICE, LOADGEN    binaries                  [BUILD_DIR/sluice, BUILD_DIR/bench/sluice-loadgen]
  BENCH_DIR          parent of the scratch dir [\${TMPDIR:-/tmp}]
  TLS_KEY            server (and CA) key: ecdsa (P-256) or rsa (2048 bits) [ecdsa]
  PARTITIONS         partitions of every topic [4]
  RECORD_SIZE        bytes of value per record [1024]
  PRODUCE_SECS       each flat-out produce run [10]
  RECORDS            records per produce run instead (PRODUCE_SECS is then a cap of
                     300 s) [0: time-bound]
  ACKS               acks of the produce runs, space-separated; consume reads the
                     topics of the first [-1]
  REPEATS            repeats of every run, order alternating [2]
  LOADGEN_ARGS       extra args for every loadgen run, e.g. "--linger-ms 0"
                     (word-split) [none]
EOF
}

KEEP=0
QUICK=0
ACKS1=0
BUILD_DIR="${BUILD_DIR:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --keep) KEEP=1 ;;
    --acks1) ACKS1=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "tls_bench.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) BUILD_DIR="$1" ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then
  : "${PRODUCE_SECS:=3}" "${REPEATS:=1}"
fi
[ "$ACKS1" = 1 ] && : "${ACKS:=-1 1}"
: "${BUILD_DIR:=$ROOT/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$PWD/$BUILD_DIR" ;; esac
: "${SLUICE:=$BUILD_DIR/sluice}"
: "${LOADGEN:=$BUILD_DIR/bench/sluice-loadgen}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${TLS_KEY:=ecdsa}"
: "${PARTITIONS:=4}"
: "${RECORD_SIZE:=1024}"
: "${PRODUCE_SECS:=10}"
: "${RECORDS:=0}"
: "${ACKS:=-1}"
: "${REPEATS:=2}"
: "${LOADGEN_ARGS:=}"

case "$TLS_KEY" in
  ecdsa|ec|p256) TLS_KEY=ecdsa; KEY_ARGS=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
  rsa|rsa2048) TLS_KEY=rsa; KEY_ARGS=(-newkey rsa:2048) ;;
  *) echo "tls_bench.sh: TLS_KEY must be ecdsa or rsa, not '$TLS_KEY'" >&2; exit 2 ;;
esac
for a in $ACKS; do
  case "$a" in -1|1|0) ;; *) echo "tls_bench.sh: ACKS: '$a' is not -1, 1 or 0" >&2; exit 2 ;; esac
done
ACKS_FIRST="${ACKS%% *}"
[ -n "${EPOCHREALTIME:-}" ] || { echo "tls_bench.sh: needs bash 5 (EPOCHREALTIME)" >&2; exit 2; }
command -v openssl >/dev/null 2>&1 || { echo "tls_bench.sh: needs the openssl CLI" >&2; exit 2; }
for b in "$SLUICE" "$LOADGEN"; do
  [ -x "$b" ] || { echo "tls_bench.sh: $b is missing (build it, or give BUILD_DIR / SLUICE / LOADGEN)" >&2; exit 2; }
done
# (grep reads all of it: with -q and pipefail, an early exit would fail the pipe.)
if ! "$SLUICE" serve --help 2>/dev/null | grep -c -- --tls-cert >/dev/null; then
  echo "tls_bench.sh: $SLUICE has no TLS listeners (serve --tls-cert); build a newer tree" >&2
  exit 2
fi

mkdir -p "$BENCH_DIR" || exit 2
WORK="$(mktemp -d "$BENCH_DIR/sluice-tlsbench.XXXXXX")" || { echo "tls_bench.sh: mktemp failed" >&2; exit 2; }
DATA_DIR="$WORK/data"
LOGS="$WORK/logs"
PKI="$WORK/pki"
mkdir -p "$DATA_DIR" "$LOGS" "$PKI"
BENCH_NAME=tls_bench.sh
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------

M_AES="$(grep -m1 -ow -e aes -e vaes -e vpclmulqdq /proc/cpuinfo | sort -u | paste -sd' ')"
M_OPENSSL="$(openssl version 2>/dev/null)"
# The libssl each side really runs (they may differ from the CLI's).
libssl_of() { ldd "$1" 2>/dev/null | awk '/libssl|librdkafka/ { printf "%s%s", sep, $3; sep = ", " }'; }
M_LIBSSL_BROKER="$(libssl_of "$SLUICE")"
M_LIBSSL_CLIENT="$(libssl_of "$LOADGEN")"
echo "machine: $(nproc) x ${M_CPU:-?} (${M_AES:-no aes flag}), $M_MEM, $(uname -r); data dir on $M_FS; load $M_LOAD0" >&2
echo "sluice: $SLUICE (build type ${M_BUILD:-unknown}), git $M_GIT; $M_OPENSSL" >&2
echo "libssl: broker ${M_LIBSSL_BROKER:-static or none}; loadgen ${M_LIBSSL_CLIENT:-?}" >&2
case "$M_BUILD" in Release|RelWithDebInfo) ;; *) echo "tls_bench.sh: note: not a release build" >&2 ;; esac

# ---------------------------------------------------------------------------
# Certificates: a CA, and a server certificate it signs, valid for two days
# ---------------------------------------------------------------------------

log "certificates: $TLS_KEY CA and server certificate (SAN IP:127.0.0.1, DNS:localhost)"
cat > "$PKI/server.ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature$([ "$TLS_KEY" = rsa ] && echo ", keyEncipherment")
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
EOF
pki() { run_step "$LOGS/pki.log" "$@" || { cat "$LOGS/pki.log" >&2; echo "tls_bench.sh: openssl failed: $*" >&2; exit 1; }; }
pki openssl req -x509 "${KEY_ARGS[@]}" -nodes -days 2 -subj "/CN=sluice tls_bench CA" \
  -addext "basicConstraints = critical, CA:TRUE" -addext "keyUsage = critical, keyCertSign, cRLSign" \
  -keyout "$PKI/ca.key" -out "$PKI/ca.pem"
pki openssl req -new "${KEY_ARGS[@]}" -nodes -subj "/CN=localhost" \
  -keyout "$PKI/server.key" -out "$PKI/server.csr"
pki openssl x509 -req -in "$PKI/server.csr" -CA "$PKI/ca.pem" -CAkey "$PKI/ca.key" -CAcreateserial \
  -days 2 -extfile "$PKI/server.ext" -out "$PKI/server.pem"
pki openssl verify -CAfile "$PKI/ca.pem" -verify_ip 127.0.0.1 "$PKI/server.pem"
CA="$PKI/ca.pem"
echo "  $(openssl x509 -in "$PKI/server.pem" -noout -subject) ($(openssl x509 -in "$PKI/server.pem" -noout -text | sed -n 's/^ *Public Key Algorithm: *//p'))" >&2

# ---------------------------------------------------------------------------
# Broker
# ---------------------------------------------------------------------------

# At debug level the broker logs each TLS connection's protocol and cipher, as
# negotiated with librdkafka itself (only per connection and per segment roll, so it
# costs nothing measurable).
launcher=()
command -v stdbuf >/dev/null 2>&1 && launcher=(stdbuf -oL -eL)
"${launcher[@]}" "$SLUICE" serve --data-dir "$DATA_DIR" --listen 127.0.0.1:0 --listen SSL://127.0.0.1:0 \
  --tls-cert "$PKI/server.pem" --tls-key "$PKI/server.key" --log-level debug > "$LOGS/sluice.log" 2>&1 &
BROKER_PID=$!
PLAIN_ADDR="" SSL_ADDR=""
for _ in $(seq 1 300); do
  PLAIN_ADDR="$(sed -n 's/^listening kafka \(PLAINTEXT:\/\/\)\{0,1\}\([0-9.]*:[0-9]*\)$/\2/p' "$LOGS/sluice.log" | head -1)"
  SSL_ADDR="$(sed -n 's/^listening kafka SSL:\/\///p' "$LOGS/sluice.log" | head -1)"
  [ -n "$PLAIN_ADDR" ] && [ -n "$SSL_ADDR" ] && break
  kill -0 "$BROKER_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$PLAIN_ADDR" ] || [ -z "$SSL_ADDR" ]; then
  echo "tls_bench.sh: broker did not start with both listeners; log tail:" >&2
  tail -20 "$LOGS/sluice.log" >&2
  exit 1
fi
echo "broker pid $BROKER_PID: PLAINTEXT $PLAIN_ADDR, SSL $SSL_ADDR" >&2

broker_alive() {
  kill -0 "$BROKER_PID" 2>/dev/null && return 0
  echo "tls_bench.sh: the broker exited; log tail:" >&2
  tail -20 "$LOGS/sluice.log" >&2
  exit 1
}

# Admin goes over PLAINTEXT: the runs are what is measured.
topic_create() {
  run_step "$LOGS/topic-$1.log" timeout -k 5 60 "$SLUICE" topic create "$1" \
    --partitions "$PARTITIONS" --bootstrap "$PLAIN_ADDR" \
    || { cat "$LOGS/topic-$1.log" >&2; echo "tls_bench.sh: cannot create topic $1" >&2; exit 1; }
}
# Deleted once read, so that the data dir does not hold every run's gigabytes.
topic_delete() {
  run_step "$LOGS/delete-$1.log" timeout -k 5 60 "$SLUICE" topic delete "$1" --bootstrap "$PLAIN_ADDR" \
    || echo "tls_bench.sh: note: cannot delete topic $1: $(tail -1 "$LOGS/delete-$1.log")" >&2
}

# Client settings of each listener.
PLAIN_ARGS=(--bootstrap "$PLAIN_ADDR")
SSL_ARGS=(--bootstrap "$SSL_ADDR" --set security.protocol=SSL --set "ssl.ca.location=$CA"
  --set ssl.endpoint.identification.algorithm=https)
client_args() {  # client_args plain|ssl: sets ARGS
  if [ "$1" = ssl ]; then ARGS=("${SSL_ARGS[@]}"); else ARGS=("${PLAIN_ARGS[@]}"); fi
}

loadgen() {  # loadgen LOGNAME plain|ssl args...
  local name="$1" ARGS timed=()
  client_args "$2"
  shift 2
  [ ${#TIME_CMD[@]} -gt 0 ] && timed=("${TIME_CMD[@]}" "$LOGS/$name.log")
  # shellcheck disable=SC2086 # LOADGEN_ARGS is deliberately word-split
  run_step "$LOGS/$name.log" timeout -s INT -k 30 600 "${timed[@]}" "$LOADGEN" "${ARGS[@]}" "$@" $LOADGEN_ARGS
}

# ---------------------------------------------------------------------------
# The TLS session: what openssl s_client and what librdkafka negotiate
# ---------------------------------------------------------------------------

log "TLS handshake with the SSL listener"
run_step "$LOGS/s_client.log" timeout -k 2 15 openssl s_client -connect "$SSL_ADDR" -CAfile "$CA" \
  -verify_return_error -verify_ip 127.0.0.1 < /dev/null \
  || warn "openssl s_client could not complete a verified handshake: $(grep -m3 -i error "$LOGS/s_client.log")"
# "New, TLSv1.3, Cipher is ...", and the SSL-Session block's "Protocol :" / "Cipher :"
# when it is printed.
S_PROTO="$(sed -n -e 's/^New, \([^,]*\), Cipher is .*/\1/p' -e 's/^ *Protocol *: *//p' "$LOGS/s_client.log" | head -1)"
S_CIPHER="$(sed -n -e 's/^New, [^,]*, Cipher is //p' -e 's/^ *Cipher *: *//p' "$LOGS/s_client.log" | head -1)"
S_GROUP="$(sed -n 's/^\(Server Temp Key\|Negotiated TLS1.3 group\): *//p' "$LOGS/s_client.log" | head -1)"
S_SIG="$(sed -n 's/^Peer signature type: *//p' "$LOGS/s_client.log" | head -1)"
S_VERIFY="$(sed -n 's/^ *Verify return code: *//p' "$LOGS/s_client.log" | tail -1)"
echo "  openssl s_client: ${S_PROTO:-?}, ${S_CIPHER:-?}, key exchange ${S_GROUP:-?}, signature ${S_SIG:-?}; verify: ${S_VERIFY:-?}" >&2

# A short produce with librdkafka's debug=security: its version and the OpenSSL it
# runs. It verifies the chain and, with endpoint identification, the IP (a failure
# fails the connection, hence the produce); it logs no cipher (the broker does), and
# its "Broker SSL certificate verified" debug line does not always reach the log.
topic_create probe
loadgen probe ssl --mode produce --topic probe --records 10 --verbose --set debug=security \
  || warn "a 10-record produce over SSL failed: $(grep -m3 -iE 'error|fail' "$LOGS/probe.log")"
C_VERSION="$(grep -m1 -oE 'librdkafka v[0-9.]+' "$LOGS/probe.log")"
C_OPENSSL="$(sed -n 's/.*Using OpenSSL version \(OpenSSL [0-9.a-z]*\).*/\1/p' "$LOGS/probe.log" | head -1)"
C_TLS="${C_VERSION:-librdkafka ?} on ${C_OPENSSL:-OpenSSL ?}, verifying the certificate and its IP"
echo "  client: $C_TLS" >&2
topic_delete probe
broker_alive

# One core's AEAD speed for that cipher (16 KiB blocks, the size of a TLS record): a
# ceiling for one encrypting or decrypting thread, whatever else the machine runs.
case "$S_CIPHER" in
  *AES_256_GCM*|*AES256-GCM*) EVP=aes-256-gcm ;;
  *AES_128_GCM*|*AES128-GCM*) EVP=aes-128-gcm ;;
  *CHACHA20*) EVP=chacha20-poly1305 ;;
  *) EVP="" ;;
esac
AEAD_MBPS="n/a"
if [ -n "$EVP" ]; then
  AEAD_MBPS="$(timeout -k 2 20 openssl speed -mr -seconds 1 -bytes 16384 -evp "$EVP" 2>/dev/null \
    | awk -F: '/^\+F:/ { printf "%.0f", $4 / 1e6 }')"
  echo "  openssl speed -evp $EVP, 16 KiB: ${AEAD_MBPS:-n/a} MB/s per CPU-second" >&2
fi

# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------

# One run: run_case PHASE KIND LOGNAME loadgen-args...; appends
# "PHASE KIND rps mbps records broker_cpu loadgen_cpu other_cpu" to $LOGS/rows, where
# PHASE is produce-ACKS or consume and KIND plain or ssl.
run_case() {
  local phase="$1" kind="$2" name="$3" c0 c1 b0 b1 lg other f
  shift 3
  f="$LOGS/$name.log"
  sync
  c0="$(cpu_secs "$BROKER_PID")" b0="$(sys_busy)"
  loadgen "$name" "$kind" "$@" || warn "$name failed: $(grep -v '^LOADGEN_CPU' "$f" | tail -3)"
  c1="$(cpu_secs "$BROKER_PID")" b1="$(sys_busy)"
  lg="$(awk '/^LOADGEN_CPU / { print $2 + $3 }' "$f" | tail -1)"
  other="n/a"
  [ -n "$lg" ] && other="$(calc "printf \"%.1f\", $b1 - $b0 - ($c1 - $c0) - $lg")"
  printf '%s %s %s %s %s %s %s %s\n' "$phase" "$kind" "$(result_field "$f" rps n/a)" "$(result_field "$f" mbps n/a)" \
    "$(result_field "$f" records n/a)" "$(calc "printf \"%.2f\", $c1 - $c0")" "${lg:-n/a}" "$other" >> "$LOGS/rows"
  printf '  %-10s %-5s %-20s %9s rec/s %8s MB/s %9s records  CPU s: broker %s, loadgen %s, other %s\n' \
    "$phase" "$kind" "$name" "$(result_field "$f" rps n/a)" "$(result_field "$f" mbps n/a)" "$(result_field "$f" records n/a)" \
    "$(calc "printf \"%.2f\", $c1 - $c0")" "${lg:-n/a}" "$other" >&2
  broker_alive
}

PRODUCE_LIMIT=(--records 1000000000 --duration-s "$PRODUCE_SECS")
PRODUCE_WHAT="flat out for ${PRODUCE_SECS}s"
if [ "$RECORDS" -gt 0 ] 2>/dev/null; then
  PRODUCE_LIMIT=(--records "$RECORDS" --duration-s 300)
  PRODUCE_WHAT="$RECORDS records flat out"
fi

: > "$LOGS/rows"
for r in $(seq 1 "$REPEATS"); do
  order="plain ssl"; [ $((r % 2)) = 0 ] && order="ssl plain"
  for acks in $ACKS; do
    a="${acks/-1/all}"
    log "repeat $r/$REPEATS: produce, acks=$a, $PRODUCE_WHAT, $RECORD_SIZE B records, $PARTITIONS partitions ($order)"
    for kind in $order; do
      topic_create "p$r-$a-$kind"
      run_case "produce$acks" "$kind" "p$r-$a-$kind" --mode produce --topic "p$r-$a-$kind" \
        --acks "$acks" --record-size "$RECORD_SIZE" "${PRODUCE_LIMIT[@]}"
    done
  done
  a="${ACKS_FIRST/-1/all}"
  log "repeat $r/$REPEATS: consume each acks=$a topic of this repeat over both listeners ($order)"
  for topic_kind in $order; do
    t="p$r-$a-$topic_kind"
    want="$(result_field "$LOGS/$t.log" records n/a)"
    for kind in $order; do
      run_case consume "$kind" "c-$t-$kind" --mode consume --topic "$t"
      got="$(result_field "$LOGS/c-$t-$kind.log" records n/a)"
      [ "$got" = "$want" ] || warn "$t read over $kind: $got records, $want acknowledged"
    done
  done
  for acks in $ACKS; do
    for kind in plain ssl; do topic_delete "p$r-${acks/-1/all}-$kind"; done
  done
done

# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

R="$LOGS/rows"
# col PHASE KIND N: the Nth column (3 = rps, 4 = MB/s, 6 = broker CPU, 7 = loadgen CPU,
# 8 = other CPU) of those runs, " / "-joined.
col() { awk -v p="$1" -v k="$2" -v n="$3" '$1 == p && $2 == k { s = s (s == "" ? "" : " / ") $n } END { print s }' "$R"; }
mean() { awk -v p="$1" -v k="$2" -v n="$3" '$1 == p && $2 == k && $n != "n/a" { s += $n; c++ } END { if (c) printf "%.3f", s / c; else print "n/a" }' "$R"; }
# CPU microseconds per MB of payload: (broker + loadgen) CPU over the MB moved, summed
# over the runs; COLS is "6", "7" or "6 7".
cpu_per_mb() {
  awk -v p="$1" -v k="$2" -v cols="$3" 'BEGIN { n = split(cols, c, " ") }
    $1 == p && $2 == k && $5 != "n/a" { for (i = 1; i <= n; i++) cpu += $c[i]; mb += $5 * rs / 1e6 }
    END { if (mb > 0) printf "%.0f", cpu * 1e6 / mb; else print "n/a" }' rs="$RECORD_SIZE" "$R"
}
ratio() { calc "if (\"$1\" == \"n/a\" || \"$2\" == \"n/a\" || $2 + 0 == 0) print \"n/a\"; else printf \"%.2f\", $1 / $2"; }
verdict() { calc "if (\"$1\" == \"n/a\") print \"n/a\"; else print ($1 >= 0.6 ? \"met\" : \"NOT met\")"; }

TABLE=""
RESULT_KV=""
add_phase() {  # add_phase PHASE LABEL
  local p="$1" label="$2" rr
  rr="$(ratio "$(mean "$p" ssl 3)" "$(mean "$p" plain 3)")"
  TABLE+="| $label records/s | $(col "$p" plain 3) | $(col "$p" ssl 3) | **$rr** (target >= 0.6: $(verdict "$rr")) |"$'\n'
  TABLE+="| $label MB/s | $(col "$p" plain 4) | $(col "$p" ssl 4) | $(ratio "$(mean "$p" ssl 4)" "$(mean "$p" plain 4)") |"$'\n'
  TABLE+="| $label CPU s: broker | $(col "$p" plain 6) | $(col "$p" ssl 6) | |"$'\n'
  TABLE+="| $label CPU s: loadgen | $(col "$p" plain 7) | $(col "$p" ssl 7) | |"$'\n'
  TABLE+="| $label CPU s: anything else on the machine | $(col "$p" plain 8) | $(col "$p" ssl 8) | |"$'\n'
  TABLE+="| $label CPU µs per MB: broker / loadgen | $(cpu_per_mb "$p" plain 6) / $(cpu_per_mb "$p" plain 7) | $(cpu_per_mb "$p" ssl 6) / $(cpu_per_mb "$p" ssl 7) | $(ratio "$(cpu_per_mb "$p" ssl "6 7")" "$(cpu_per_mb "$p" plain "6 7")") (both) |"$'\n'
  RESULT_KV+=" ${p/-1/_all}_plain_rps=$(mean "$p" plain 3) ${p/-1/_all}_ssl_rps=$(mean "$p" ssl 3) ${p/-1/_all}_ratio=$rr"
}
for acks in $ACKS; do add_phase "produce$acks" "produce acks=${acks/-1/all},"; done
add_phase consume "consume,"
RESULT_KV="${RESULT_KV//produce1_/produce_acks1_}"
RESULT_KV="${RESULT_KV//produce0_/produce_acks0_}"

# The broker's log: what its TLS connections negotiated (debug lines "connection N from
# PEER: TLSv1.3 CIPHER"), lines at WARN or ERROR, and connections it failed (INFO
# "net: connection N from PEER: REASON", TLS errors among them).
B_TLS="$(sed -n 's/^[^ ]* DEBUG net: connection [0-9]* from [^ ]*: \(TLSv[^ ]* [^ ]*\)$/\1/p' "$LOGS/sluice.log" \
  | sort | uniq -c | awk '{ printf "%s%s %s (%d connections)", sep, $2, $3, $1; sep = "; " }')"
LOG_WARN="$(grep -cE '^[^ ]+ (WARN|ERROR) ' "$LOGS/sluice.log")"
LOG_FAILED="$(grep -cE '^[^ ]+ INFO net: connection ' "$LOGS/sluice.log")"

cat <<EOF

## TLS benchmark — $M_DATE

Machine: $(nproc) x ${M_CPU:-?} (cpu flags: ${M_AES:-no aes}), $M_MEM, $(uname -r); data dir: $M_FS; sluice git $M_GIT, build type ${M_BUILD:-unknown}.
Load average (1, 5, 15 min) at the start: $M_LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure; the CPU-per-MB rows skew less).
TLS: $M_OPENSSL; broker ${M_LIBSSL_BROKER:-libssl static or none}; client ${M_LIBSSL_CLIENT:-?}.
Negotiated with openssl s_client: ${S_PROTO:-?}, ${S_CIPHER:-?}, key exchange ${S_GROUP:-?}, server key $TLS_KEY, signature ${S_SIG:-?}.
Negotiated with the clients (broker's log): ${B_TLS:-none logged}; client $C_TLS.
$( [ -n "$EVP" ] && echo "One core's $EVP, 16 KiB blocks (openssl speed): ${AEAD_MBPS:-n/a} MB/s per CPU-second.")
Records: $RECORD_SIZE B of random bytes, $PARTITIONS partitions, produce $PRODUCE_WHAT into a fresh topic per run; consume reads each acks=${ACKS_FIRST/-1/all} topic back over both listeners, warm cache. $REPEATS repeat(s), order alternating.

| per run | PLAINTEXT | SSL | SSL / PLAINTEXT (means) |
|---|---:|---:|---:|
${TABLE}
Broker log: $LOG_WARN line(s) at WARN or ERROR; $LOG_FAILED connection(s) ended by a failure (TLS errors included).

RESULT mode=tls tls_key=$TLS_KEY protocol=${S_PROTO:-?} cipher=${S_CIPHER:-?}${RESULT_KV} broker_log_warnings=$LOG_WARN broker_log_failed_connections=$LOG_FAILED ok=$((1 - FAILED))
EOF
if [ "$LOG_WARN" -gt 0 ] || [ "$LOG_FAILED" -gt 0 ]; then
  echo "broker log (at most 10 lines of each kind):" >&2
  grep -E '^[^ ]+ (WARN|ERROR) ' "$LOGS/sluice.log" | head -10 >&2
  grep -E '^[^ ]+ INFO net: connection ' "$LOGS/sluice.log" | head -10 >&2
fi
stop_pid "$BROKER_PID"
BROKER_PID=""
exit "$FAILED"
