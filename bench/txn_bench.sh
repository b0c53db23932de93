#!/usr/bin/env bash
# bench/txn_bench.sh — transactional produce against idempotent produce, through Sluice
# and through Apache Kafka, in one run.
#
# The client is the Java producer of the Kafka version tests/jvm/pom.xml pins
# (dev.sluice.jvmtests.bench.TxnProduceBench, in the jar of `make test-deps`): acks=all,
# its default batching, one producer flat-out into a fresh PARTITIONS-partition topic
# for SECS, in three modes:
#   idempotent   enable.idempotence=true, no transactions
#   txn-100ms    a transaction committed every 100 ms
#   txn-1000     a transaction committed every 1,000 records
# On a Kafka 4 broker (and on Sluice, which finalizes transaction.version 2) the
# transactional modes run on transaction version 2. Each broker runs the three modes
# REPEATS times, the order rotating from one repeat to the next; first Sluice (`sluice
# serve`: acks=all answered after fsync, markers and transaction state durable before
# the answer), then Kafka (scripts/apache-kafka: one KRaft node, no fsync before an
# ack). Prints per broker and mode the medians of records/s, MB/s, a send's
# acknowledgement p50/p99, a commit's p50/p99 (commitTransaction(), which waits for the
# transaction's sends first) and the broker's CPU seconds per GB; then the ratios
# transactional / idempotent per broker and Sluice / Kafka per mode.
#
# Builds nothing: give the build dir (default build/) as the argument or BUILD_DIR.
# Binds to 127.0.0.1; the brokers are stopped and the scratch dir deleted on exit.

set -u -o pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KEEP=0
BUILD_DIR="${BUILD_DIR:-}"
for a in "$@"; do
  case "$a" in
    --keep) KEEP=1 ;;
    -h|--help)
      echo "usage: bench/txn_bench.sh [--keep] [BUILD_DIR]"
      echo "env: PARTITIONS [4] RECORD_SIZE [1024] SECS [8] REPEATS [3] BROKERS [\"sluice kafka\"] KAFKA_HEAP [1g]"
      exit 0 ;;
    -*) echo "txn_bench.sh: unknown option '$a'" >&2; exit 2 ;;
    *) BUILD_DIR="$a" ;;
  esac
done
: "${BUILD_DIR:=$ROOT/build}"
: "${SLUICE:=$BUILD_DIR/sluice}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${PARTITIONS:=4}" "${RECORD_SIZE:=1024}" "${SECS:=8}" "${REPEATS:=3}"
: "${BROKERS:=sluice kafka}" "${KAFKA_HEAP:=1g}"
JAR="$ROOT/tests/jvm/target/sluice-jvm-tests.jar" CP_FILE="$ROOT/tests/jvm/target/classpath.txt"
[ -x "$SLUICE" ] || { echo "txn_bench.sh: $SLUICE is missing" >&2; exit 2; }
[ -s "$JAR" ] && [ -s "$CP_FILE" ] || { echo "txn_bench.sh: $JAR is missing (make test-deps)" >&2; exit 2; }
WORK="$(mktemp -d "$BENCH_DIR/sluice-txnbench.XXXXXX")" || exit 2
LOGS="$WORK/logs" KAFKA_DIR="$WORK/kafka"
mkdir -p "$LOGS"
BENCH_NAME=txn_bench.sh
stop_kafka() { "$ROOT/scripts/apache-kafka" stop "$KAFKA_DIR" > /dev/null 2>&1 || true; }
CLEANUP_HOOK=stop_kafka
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
MODES=(idempotent txn-ms:100 txn-records:1000)
label() { case "$1" in idempotent) echo idempotent ;; txn-ms:100) echo txn-100ms ;; *) echo txn-1000 ;; esac; }

echo "machine: $(nproc) x $M_CPU, load $M_LOAD0, $M_FS; sluice git $M_GIT" >&2

start_broker() {
  case "$1" in
    sluice)
      start_sluice "$LOGS/sluice.log" --data-dir "$WORK/sluice-data" --listen 127.0.0.1:0 ;;
    kafka)
      echo "file.delete.delay.ms=500" > "$WORK/kafka.props"
      ADDR="$(APACHE_KAFKA_HEAP="$KAFKA_HEAP" APACHE_KAFKA_PROPS="$WORK/kafka.props" \
        APACHE_KAFKA_JVM_OPTS="-Xms$KAFKA_HEAP -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35" \
        "$ROOT/scripts/apache-kafka" start "$KAFKA_DIR" 0)" || return 1
      BROKER_PID="$(cat "$KAFKA_DIR/kafka.pid")" ;;
  esac
}

# run BROKER MODE NAME: one producer run into a fresh topic; prints
# "rps mbps p50 p99 commit_p50 commit_p99 cpu_s_per_gb".
run() {
  local topic="txnb-$3" out="$LOGS/$1-$3.log" c0 cpu
  run_step "$LOGS/topic-$1-$3.log" timeout -k 5 120 "$SLUICE" topic create "$topic" \
    --partitions "$PARTITIONS" --bootstrap "$ADDR" || { cat "$LOGS/topic-$1-$3.log" >&2; return 1; }
  c0="$(cpu_secs "$BROKER_PID")"
  run_step "$out" timeout -k 5 $((SECS + 120)) java -Xmx512m -cp "$JAR:$(cat "$CP_FILE")" \
    dev.sluice.jvmtests.bench.TxnProduceBench "$ADDR" "$topic" "$2" "$SECS" "$RECORD_SIZE" ||
    { tail -5 "$out" >&2; return 1; }
  cpu="$(calc "print $(cpu_secs "$BROKER_PID") - $c0")"
  run_step "$LOGS/delete-$1-$3.log" timeout -k 5 120 "$SLUICE" topic delete "$topic" --bootstrap "$ADDR" || true
  local f
  f() { result_field "$out" "$1"; }
  echo "$(f rps) $(f mbps) $(f p50_ms) $(f p99_ms) $(f commit_p50_ms) $(f commit_p99_ms)" \
    "$(calc "printf \"%.3f\", $cpu / ($(f mbps) * $(f elapsed_s) / 1000)")"
}

declare -A RES  # RES[broker/mode] = the runs' figure lines, separated by '|'
for broker in $BROKERS; do
  start_broker "$broker" || { echo "txn_bench.sh: $broker did not start" >&2; exit 1; }
  for r in $(seq 1 "$REPEATS"); do
    for i in 0 1 2; do
      mode="${MODES[$(((i + r - 1) % 3))]}"
      res="$(run "$broker" "$mode" "r$r-$(label "$mode")")" || exit 1
      echo "$broker repeat $r $(label "$mode"): rps mbps p50 p99 commit_p50 commit_p99 cpu_s_per_gb = $res" >&2
      RES[$broker/$mode]+="$res|"
    done
  done
  if [ "$broker" = sluice ]; then stop_pid "$BROKER_PID"; else stop_kafka; fi
  BROKER_PID=""
done

rows() { local IFS='|'; read -ra R <<< "${RES[$1]}"; printf '%s\n' "${R[@]}"; }
med() { mapfile -t R < <(rows "$1"); median_col "$2" "${R[@]}"; }
ratio() { calc "printf \"%.2f\", $1 / $2"; }
echo
echo "machine: $(nproc) x $M_CPU, load at start $M_LOAD0, at end $(cut -d' ' -f1-3 /proc/loadavg); $PARTITIONS partitions, $RECORD_SIZE-byte records, ${SECS} s runs, medians of $REPEATS"
echo
echo "| broker | mode | records/s | MB/s | send p50 ms | send p99 ms | commit p50 ms | commit p99 ms | broker CPU s/GB | throughput / idempotent |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for broker in $BROKERS; do
  for mode in "${MODES[@]}"; do
    k="$broker/$mode"
    echo "| $broker | $(label "$mode") | $(med "$k" 1) | $(med "$k" 2) | $(med "$k" 3) | $(med "$k" 4) |" \
      "$(med "$k" 5) | $(med "$k" 6) | $(med "$k" 7) | $(ratio "$(med "$k" 1)" "$(med "$broker/idempotent" 1)") |"
  done
done
if [[ " $BROKERS " == *" sluice "* && " $BROKERS " == *" kafka "* ]]; then
  echo
  for mode in "${MODES[@]}"; do
    echo "sluice / kafka, $(label "$mode"): throughput $(ratio "$(med "sluice/$mode" 1)" "$(med "kafka/$mode" 1)")," \
      "send p99 $(ratio "$(med "sluice/$mode" 4)" "$(med "kafka/$mode" 4)")"
  done
fi
