#!/usr/bin/env bash
# bench/cleaner_latency.sh — producer latency while the log cleaner works.
#
#   1. Seeds a data dir once: a broker whose cleaner never runs, a compacted topic with
#      small segments filled by kcat with keyed records over a large key space (so most
#      of it is dirty and much of it superseded), and an empty topic for the latency run.
#   2. For each case, starts a broker on a fresh copy of that data dir and runs
#      sluice-loadgen at a fixed rate (acks=-1) into the latency topic:
#        idle         the cleaner never runs (backoff of a day): the baseline;
#        throttled    the cleaner starts BACKOFF_MS after start-up, at the default
#                     --log-cleaner-io-max-bytes-per-second (32 MiB/s);
#        unthrottled  the same with the throttle off (0).
#      A busy case whose cleaner finishes every partition before DURATION ends the
#      loadgen run there (SIGINT; loadgen still prints its summary), so the window is
#      the time the cleaner was busy. After the window, the script waits (bounded) for
#      the pass in progress to log its `cleaner:` line, then reports how much of the
#      window the logged passes cover.
#   3. Prints a markdown table (p50/p99/p99.9/max, achieved MB/s, cleaner passes and
#      coverage of the window, broker CPU) and one RESULT line per case.
#
# Everything binds to 127.0.0.1, every step is bounded in time, and the brokers, the
# loadgen and the work dir are removed on exit (also on Ctrl-C / SIGTERM).
# MB = 10^6 bytes of record payload; latency = produce() to delivery report, ms.

set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<EOF
usage: bench/cleaner_latency.sh [--keep] [--quick]

  --keep   keep the work directory (data dirs, logs) at exit
  --quick  small sizes, to smoke-test the script (~1 min)

environment (defaults in brackets):
  SLUICE          broker binary                       [$ROOT/build/sluice]
  LOADGEN         load generator                      [$ROOT/build/bench/sluice-loadgen]
  KCAT            kcat, fills the compacted topic     [kcat]
  BENCH_DIR       parent of the temp work dir         [\${TMPDIR:-/tmp}]
  CASES           cases to run, in order              [idle throttled unthrottled]
  PREFILL_MB      MB of keyed records in the compacted topic (10^6 B)   [1024]
  KEYS            distinct keys they are spread over (uniformly)        [500000]
  VALUE_BYTES     bytes per compacted record value    [1024]
  CP_PARTITIONS   partitions of the compacted topic   [8]
  CP_SEGMENT_BYTES  its segment.bytes                 [16777216]
  RATE_MBPS       loadgen target rate, MB/s           [20]
  DURATION        loadgen window, s                   [30]
  RECORD_SIZE     loadgen record size, bytes          [1024]
  LAT_PARTITIONS  partitions of the latency topic     [1]
  LINGER_MS       loadgen linger.ms                   [1]
  BACKOFF_MS      --log-cleaner-backoff-ms of the busy cases            [1000]
  THROTTLE        --log-cleaner-io-max-bytes-per-second of 'throttled'  [33554432]
  PASS_WAIT       max wait after a busy window for the pass in progress, s  [90]
EOF
}

KEEP=0
QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1 ;;
    --quick) QUICK=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cleaner_latency.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then
  : "${PREFILL_MB:=128}" "${KEYS:=50000}" "${DURATION:=5}" "${CP_PARTITIONS:=2}"
fi
: "${SLUICE:=$ROOT/build/sluice}"
: "${LOADGEN:=$ROOT/build/bench/sluice-loadgen}"
: "${KCAT:=kcat}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${CASES:=idle throttled unthrottled}"
: "${PREFILL_MB:=1024}"
: "${KEYS:=500000}"
: "${VALUE_BYTES:=1024}"
: "${CP_PARTITIONS:=8}"
: "${CP_SEGMENT_BYTES:=16777216}"
: "${RATE_MBPS:=20}"
: "${DURATION:=30}"
: "${RECORD_SIZE:=1024}"
: "${LAT_PARTITIONS:=1}"
: "${LINGER_MS:=1}"
: "${BACKOFF_MS:=1000}"
: "${THROTTLE:=33554432}"
: "${PASS_WAIT:=90}"
CP_TOPIC=compacted
LAT_TOPIC=latency
# A day: the cleaner thread waits this long before its first pass, so it never runs.
NEVER_MS=86400000

for b in "$SLUICE" "$LOADGEN"; do
  [ -x "$b" ] || { echo "cleaner_latency.sh: $b is not executable (build with SLUICE_BUILD_BENCH=ON, or set SLUICE / LOADGEN)" >&2; exit 2; }
done
command -v "$KCAT" >/dev/null 2>&1 || { echo "cleaner_latency.sh: kcat not found (apt-get install kcat, or set KCAT)" >&2; exit 2; }

mkdir -p "$BENCH_DIR" || exit 2
WORK="$(mktemp -d "$BENCH_DIR/sluice-cleanlat.XXXXXX")" || exit 2
LOGS="$WORK/logs"
mkdir -p "$LOGS"

PIDS=()  # every background process still running: brokers, loadgen, the prefill pipeline
forget_pid() {  # drop PID from PIDS (exact match)
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}
stop_pid() {  # TERM, wait up to 15 s, then KILL
  local pid="$1"
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && { echo "cleaner_latency.sh: pid $pid ignored SIGTERM; SIGKILL" >&2; kill -KILL "$pid" 2>/dev/null; }
  wait "$pid" 2>/dev/null
  return 0
}
# shellcheck disable=SC2317 # invoked via trap
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
  if [ "$KEEP" = 1 ]; then echo "cleaner_latency.sh: work dir kept at $WORK" >&2; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "cleaner_latency.sh: interrupted" >&2; exit 130' INT
trap 'echo "cleaner_latency.sh: terminated" >&2; exit 143' TERM

log() { printf '\n### %s\n' "$*" >&2; }
die() { echo "cleaner_latency.sh: $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
cpu_secs() {  # CPU seconds (user+sys) used so far by PID
  [ -r "/proc/$1/stat" ] || return 0
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}
result_field() {  # value of KEY in the last RESULT line of FILE
  awk -v k="$2" '/^RESULT /{line=$0} END { n = split(line, f, " "); for (i = 2; i <= n; i++) { split(f[i], kv, "="); if (kv[1] == k) { print kv[2]; exit } } }' "$1"
}

# start_broker LOG DATA_DIR args...: sets BROKER_PID and ADDR.
start_broker() {
  local out="$1" dir="$2"
  shift 2
  "$SLUICE" serve --data-dir "$dir" --listen 127.0.0.1:0 "$@" > "$out" 2>&1 &
  BROKER_PID=$!
  PIDS+=("$BROKER_PID")
  ADDR=""
  for _ in $(seq 1 300); do
    ADDR="$(sed -n 's/^listening kafka //p' "$out" | head -1)"
    [ -n "$ADDR" ] && return 0
    kill -0 "$BROKER_PID" 2>/dev/null || break
    sleep 0.1
  done
  tail -20 "$out" >&2
  die "broker did not print 'listening kafka HOST:PORT' within 30 s"
}
stop_broker() {
  stop_pid "$BROKER_PID"
  forget_pid "$BROKER_PID"
}

# cleaner_intervals LOG: "start_ms end_ms" of every logged pass over the compacted topic
# (the line is written at the end of the pass and says how long it took).
cleaner_intervals() {
  grep -E " cleaner: $CP_TOPIC-[0-9]+: dirty ratio .* in [0-9]+ ms " "$1" 2>/dev/null |
    while read -r ts rest; do
      local end dur
      end="$(date -u -d "$ts" +%s%3N)"
      dur="$(sed -E 's/.* in ([0-9]+) ms .*/\1/' <<<"$rest")"
      echo "$((end - dur)) $end"
    done
}
passes_done() { grep -cE " cleaner: $CP_TOPIC-[0-9]+: dirty ratio " "$1" 2>/dev/null; }

# ---------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------

M_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
M_CPU="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
M_MEM="$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
M_FS="$(df -PT "$WORK" | awk 'NR == 2 { print $2 " on " $1 }')"
M_GIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)"
M_LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
log "machine"
echo "$M_DATE; $(nproc) x $M_CPU, $M_MEM, $(uname -sr); work dir $WORK on $M_FS; sluice git $M_GIT; load average $M_LOAD" >&2
# Client, broker and cleaner share the cores: anything else running skews the latencies.
awk -v l="${M_LOAD%% *}" -v n="$(nproc)" 'BEGIN { exit !(l > 0.5 * n) }' &&
  echo "cleaner_latency.sh: WARNING: load average $M_LOAD on $(nproc) cores: the machine is busy" >&2

# ---------------------------------------------------------------------------
# Seed: the compacted topic, full of dirty keyed records
# ---------------------------------------------------------------------------

RECORDS=$(( PREFILL_MB * 1000000 / VALUE_BYTES ))
log "seed: $RECORDS records x $VALUE_BYTES B over $KEYS keys into $CP_TOPIC ($CP_PARTITIONS partitions, segment.bytes=$CP_SEGMENT_BYTES)"
SEED="$WORK/seed"
start_broker "$LOGS/seed-broker.log" "$SEED" --log-cleaner-backoff-ms "$NEVER_MS"
timeout 60 "$SLUICE" topic create "$CP_TOPIC" -p "$CP_PARTITIONS" -c cleanup.policy=compact \
  -c segment.bytes="$CP_SEGMENT_BYTES" -b "$ADDR" >&2 || die "topic create failed"
timeout 60 "$SLUICE" topic create "$LAT_TOPIC" -p "$LAT_PARTITIONS" -b "$ADDR" >&2 || die "topic create failed"
t0="$(now_ms)"
# Keys uniform over KEYS (fixed seed): each key is written RECORDS/KEYS times on average.
# Values: the record number, padded to VALUE_BYTES.
awk -v n="$RECORDS" -v k="$KEYS" -v vb="$VALUE_BYTES" 'BEGIN {
      srand(42); pad = ""; while (length(pad) < vb - 12) pad = pad "x"
      for (i = 0; i < n; i++) printf "key-%09d\t%012d%s\n", int(rand() * k), i, pad }' |
  timeout 600 "$KCAT" -P -b "$ADDR" -t "$CP_TOPIC" -K $'\t' -z none -X broker.address.family=v4 \
    -X linger.ms=20 -X queue.buffering.max.kbytes=262144 2> "$LOGS/kcat.log" &
PREFILL_PID=$!
PIDS+=("$PREFILL_PID")
wait "$PREFILL_PID" || { tail -5 "$LOGS/kcat.log" >&2; die "kcat prefill failed"; }
forget_pid "$PREFILL_PID"
t1="$(now_ms)"
Q=()
for p in $(seq 0 $((CP_PARTITIONS - 1))); do Q+=(-t "$CP_TOPIC:$p:-1"); done
END_SUM="$(timeout 60 "$KCAT" -Q -b "$ADDR" "${Q[@]}" -X broker.address.family=v4 | awk '{ s += $NF } END { print s + 0 }')"
[ "$END_SUM" = "$RECORDS" ] || die "compacted topic holds $END_SUM records, expected $RECORDS"
stop_broker
sync
SEED_MB="$(du -sm "$SEED" | awk '{ print $1 }')"
SEGS="$(find "$SEED" -name '*.log' | wc -l)"
echo "  $RECORDS records in $(( (t1 - t0) / 1000 )) s; data dir $SEED_MB MiB, $SEGS segment files" >&2

# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

TABLE=()
RESULTS=()
for c in $CASES; do
  case "$c" in
    idle) args=(--log-cleaner-backoff-ms "$NEVER_MS") ;;
    throttled) args=(--log-cleaner-backoff-ms "$BACKOFF_MS" --log-cleaner-io-max-bytes-per-second "$THROTTLE") ;;
    unthrottled) args=(--log-cleaner-backoff-ms "$BACKOFF_MS" --log-cleaner-io-max-bytes-per-second 0) ;;
    *) die "unknown case '$c' (idle, throttled, unthrottled)" ;;
  esac
  log "case $c: broker ${args[*]}; loadgen $RATE_MBPS MB/s acks=-1 for up to ${DURATION}s into $LAT_TOPIC ($LAT_PARTITIONS partitions)"
  DATA="$WORK/data-$c"
  rm -rf "$DATA"
  cp -a "$SEED" "$DATA" || die "copy of the seed failed"
  sync  # the copy's writeback must not fall into the window
  BLOG="$LOGS/broker-$c.log"
  b0="$(now_ms)"
  start_broker "$BLOG" "$DATA" "${args[@]}"
  # The cleaner thread's first pass starts BACKOFF_MS after start-up: begin the window
  # then (in every case, so that they differ only in the cleaner).
  left=$((b0 + BACKOFF_MS - $(now_ms)))
  [ "$left" -gt 0 ] && sleep "$(awk -v m="$left" 'BEGIN { printf "%.3f", m / 1000 }')"
  cpu0="$(cpu_secs "$BROKER_PID")"
  w0="$(now_ms)"
  timeout -s INT -k 30 $((DURATION + 120)) "$LOADGEN" --bootstrap "$ADDR" --topic "$LAT_TOPIC" \
    --mode produce --acks -1 --rate-mbps "$RATE_MBPS" --records 1000000000 --record-size "$RECORD_SIZE" \
    --duration-s "$DURATION" --linger-ms "$LINGER_MS" > "$LOGS/loadgen-$c.log" 2>&1 &
  LG_PID=$!
  PIDS+=("$LG_PID")
  cut=""
  while kill -0 "$LG_PID" 2>/dev/null; do
    if [ "$c" != idle ] && [ "$(passes_done "$BLOG")" -ge "$CP_PARTITIONS" ]; then
      cut="cut at the cleaner's end"
      kill -INT "$LG_PID" 2>/dev/null
      break
    fi
    sleep 0.2
  done
  wait "$LG_PID"
  rc=$?
  forget_pid "$LG_PID"
  w1="$(now_ms)"
  cpu1="$(cpu_secs "$BROKER_PID")"
  if [ $rc -ne 0 ] && ! { [ -n "$cut" ] && [ $rc -eq 130 ]; }; then
    tail -5 "$LOGS/loadgen-$c.log" >&2
    die "loadgen exited with $rc in case $c"
  fi
  # The pass in progress at the end of the window logs when it ends: wait for it (bounded).
  if [ "$c" != idle ] && [ -z "$cut" ]; then
    n0="$(passes_done "$BLOG")"
    for _ in $(seq 1 $((PASS_WAIT * 5))); do
      [ "$(passes_done "$BLOG")" -gt "$n0" ] && break
      sleep 0.2
    done
  fi
  kill -0 "$BROKER_PID" 2>/dev/null || { tail -20 "$BLOG" >&2; die "broker exited during case $c"; }
  stop_broker
  # Passes overlapping the window, and the share of the window they cover (union).
  iv="$(cleaner_intervals "$BLOG")"
  passes="$(awk -v a="$w0" -v b="$w1" 'NF && $2 > a && $1 < b { n++ } END { print n + 0 }' <<<"$iv")"
  cover="$(sort -n <<<"$iv" | awk -v a="$w0" -v b="$w1" '
      NF { s = ($1 > a ? $1 : a); e = ($2 < b ? $2 : b); if (e <= s) next
           if (s > ce) { tot += ce - cs; cs = s; ce = e } else if (e > ce) ce = e }
      END { tot += ce - cs; printf "%.0f", 100 * tot / (b - a) }')"
  [ "$c" = idle ] && [ "$passes" != 0 ] && echo "cleaner_latency.sh: WARNING: the cleaner ran in the idle case" >&2
  grep -E " cleaner: " "$BLOG" | sed 's/^/  /' >&2
  L="$LOGS/loadgen-$c.log"
  mbps="$(result_field "$L" mbps)"; p50="$(result_field "$L" p50_ms)"; p99="$(result_field "$L" p99_ms)"
  p999="$(result_field "$L" p999_ms)"; pmax="$(result_field "$L" max_ms)"; el="$(result_field "$L" elapsed_s)"
  cpu="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.1f", b - a }')"
  win="$(awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.1f", (b - a) / 1000 }')"
  echo "  window ${win}s${cut:+ ($cut)}: $mbps MB/s, p50/p99/p99.9/max $p50/$p99/$p999/$pmax ms; cleaner passes $passes covering $cover% of it; broker CPU $cpu s" >&2
  TABLE+=("| $c | ${args[*]} | ${win}${cut:+ (cut)} | $passes | $cover% | $mbps | $p50 | $p99 | $p999 | $pmax | $cpu |")
  RESULTS+=("RESULT case=$c window_s=$win passes=$passes cleaner_cover_pct=$cover mbps=$mbps p50_ms=$p50 p99_ms=$p99 p999_ms=$p999 max_ms=$pmax elapsed_s=$el broker_cpu_s=$cpu")
  rm -rf "$DATA"
done

echo
echo "## Producer latency while the cleaner runs — $M_DATE"
echo
echo "Machine: $(nproc) x $M_CPU, $M_MEM, $(uname -sr), data on $M_FS; sluice git $M_GIT; load average at start $M_LOAD, at end $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Compacted topic: $RECORDS records x $VALUE_BYTES B over $KEYS keys, $CP_PARTITIONS partitions, segment.bytes=$CP_SEGMENT_BYTES ($SEED_MB MiB on disk)."
echo "Load: sluice-loadgen, $RATE_MBPS MB/s of $RECORD_SIZE B records, acks=-1, linger.ms=$LINGER_MS, $LAT_PARTITIONS partition(s), up to ${DURATION}s."
echo
echo "| case | broker flags | window s | cleaner passes | window covered by passes | MB/s | p50 ms | p99 ms | p99.9 ms | max ms | broker CPU s |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '%s\n' "${TABLE[@]}"
echo
printf '%s\n' "${RESULTS[@]}"
