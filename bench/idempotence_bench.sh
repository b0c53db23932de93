#!/usr/bin/env bash
# bench/idempotence_bench.sh — idempotent acks=all produce against plain acks=all, same
# broker, same run.
#
# Starts one broker on a scratch data dir and measures with `sluice-loadgen`
# (librdkafka): flat-out produce of RECORD_SIZE-byte records, acks=all, into a fresh
# PARTITIONS-partition topic for PRODUCE_SECS, once with enable.idempotence=false and
# once with enable.idempotence=true, REPEATS times, the order alternating from one repeat
# to the next. Prints records/s, MB/s, p50, p99 and the broker's CPU seconds per GB of
# payload of each run, and the idempotent / plain ratios of the medians (the issue's
# target: within 5% of throughput and p99). The CPU figure is the broker's own cost of
# the sequence checks, which the client's share of the 2 cores does not blur.
#
# Builds nothing: give the build dir (default build/) as the argument or BUILD_DIR.
# Binds to 127.0.0.1; the broker is stopped and the scratch dir deleted on exit.

set -u -o pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KEEP=0
BUILD_DIR="${BUILD_DIR:-}"
for a in "$@"; do
  case "$a" in
    --keep) KEEP=1 ;;
    -h|--help)
      echo "usage: bench/idempotence_bench.sh [--keep] [BUILD_DIR]"
      echo "env: PARTITIONS [4] RECORD_SIZE [1024] PRODUCE_SECS [8] REPEATS [3] LOADGEN_ARGS []"
      exit 0 ;;
    -*) echo "idempotence_bench.sh: unknown option '$a'" >&2; exit 2 ;;
    *) BUILD_DIR="$a" ;;
  esac
done
: "${BUILD_DIR:=$ROOT/build}"
: "${SLUICE:=$BUILD_DIR/sluice}"
: "${LOADGEN:=$BUILD_DIR/bench/sluice-loadgen}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${PARTITIONS:=4}"
: "${RECORD_SIZE:=1024}"
: "${PRODUCE_SECS:=8}"
: "${REPEATS:=3}"
: "${LOADGEN_ARGS:=}"
for b in "$SLUICE" "$LOADGEN"; do
  [ -x "$b" ] || { echo "idempotence_bench.sh: $b is missing" >&2; exit 2; }
done
WORK="$(mktemp -d "$BENCH_DIR/sluice-idembench.XXXXXX")" || exit 2
DATA_DIR="$WORK/data" LOGS="$WORK/logs"
mkdir -p "$DATA_DIR" "$LOGS"
BENCH_NAME=idempotence_bench.sh
STEP_PID="" BROKER_PID=""
source "$ROOT/bench/lib.sh"

echo "machine: $(nproc) x $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "sluice: $SLUICE, git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)" >&2
start_sluice "$LOGS/sluice.log" --data-dir "$DATA_DIR" --listen 127.0.0.1:0 || exit 1

# run NAME IDEMPOTENT: one produce run into a fresh topic; prints "rps mbps p50 p99 cpu",
# cpu being the broker's CPU seconds per GB of payload over the run.
run() {
  local topic="idem-$1" out="$LOGS/$1.log"
  run_step "$LOGS/topic-$1.log" timeout -k 5 60 "$SLUICE" topic create "$topic" \
    --partitions "$PARTITIONS" --bootstrap "$ADDR" || { cat "$LOGS/topic-$1.log" >&2; exit 1; }
  produce_figures "$out" --topic "$topic" --set "enable.idempotence=$2" || exit 1
  run_step "$LOGS/delete-$1.log" timeout -k 5 60 "$SLUICE" topic delete "$topic" --bootstrap "$ADDR" || true
}

declare -a PLAIN IDEM
for r in $(seq 1 "$REPEATS"); do
  if [ $((r % 2)) = 1 ]; then order="false true"; else order="true false"; fi
  for idem in $order; do
    res="$(run "r$r-$idem" "$idem")"
    echo "repeat $r idempotence=$idem: rps mbps p50_ms p99_ms cpu_s_per_gb = $res" >&2
    if [ "$idem" = true ]; then IDEM+=("$res"); else PLAIN+=("$res"); fi
  done
done
grep -c "duplicate batch" "$LOGS/sluice.log" | sed 's/^/duplicate batches answered: /' >&2

col() { median_col "$@"; }
echo
echo "| run | records/s | MB/s | p50 ms | p99 ms | broker CPU s/GB |"
echo "|---|---|---|---|---|---|"
for k in plain idempotent; do
  if [ "$k" = plain ]; then set -- "${PLAIN[@]}"; else set -- "${IDEM[@]}"; fi
  echo "| $k (median of $REPEATS) | $(col 1 "$@") | $(col 2 "$@") | $(col 3 "$@") | $(col 4 "$@") | $(col 5 "$@") |"
done
echo
echo "idempotent / plain: throughput $(calc "printf \"%.3f\", $(col 1 "${IDEM[@]}") / $(col 1 "${PLAIN[@]}")"), p99 $(calc "printf \"%.3f\", $(col 4 "${IDEM[@]}") / $(col 4 "${PLAIN[@]}")"), broker CPU per GB $(calc "printf \"%.3f\", $(col 5 "${IDEM[@]}") / $(col 5 "${PLAIN[@]}")")"
