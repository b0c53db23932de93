#!/usr/bin/env bash
# bench/vs-kafka.sh — Sluice and Apache Kafka side by side: the same loads against each
# broker in turn, on the same machine and disk, in one run, alternated over ROUNDS
# rounds; prints the medians and every figure as Sluice/Kafka.
#
# Three brokers take turns, in a different order each round:
#   sluice       Sluice as shipped (`sluice serve`): acks=all is answered after fsync.
#   kafka        Apache Kafka as shipped (scripts/apache-kafka: one KRaft node from the
#                Maven jars tests/jvm/pom.xml pins, heap KAFKA_HEAP and the GC settings
#                of Kafka's own start script): the page cache, no fsync before an ack.
#   kafka-fsync  the same with log.flush.interval.messages=1: every append fsynced
#                before the ack, as Sluice does; run for the acks=all rows only.
# Each broker has one data dir under BENCH_DIR (the same filesystem for all), empty of
# topics whenever it starts (each row deletes its topic); a start is timed from launch
# to the first acknowledged record of a topic it creates, measured idle, warmed up
# (SECS of flat-out produce, not counted), then runs the rows:
#   p1        flat-out produce, RECORD_SIZE records, PARTITIONS partitions, acks=1 (loadgen)
#   pall      the same at acks=all (loadgen)
#   pjava     flat-out acks=all from kafka-producer-perf-test (the Java producer's
#             defaults: idempotent, 16 KiB batches)
#   steady    STEADY_MBPS at acks=all for STEADY_SECS: p50, p99, p99.9 (loadgen)
#   cons      consume pall's topic from the page cache (loadgen)
#   consjava  the same with kafka-consumer-perf-test (a group consumer)
#   parts-N   for N in MANY_PARTITIONS: flat-out acks=all from MANY_PRODUCERS producers,
#             each on its own connection with its share of the N partitions (loadgen
#             --producers); create_s is the time to create the topic and have every
#             partition take a record
#   idemlz4   idempotent lz4 produce of 10-field JSON records at acks=all (loadgen)
# For each row: payload MB/s, latency percentiles where the row has them, and broker
# CPU seconds per GB of payload (utime+stime of the broker process from /proc, over the
# row); for each broker start: start_ms (launch to first ack), idle and peak resident
# memory (VmRSS 5 s after the first ack, VmHWM at the end). The load generator's CPU
# seconds per GB are recorded too: on 2 shared cores it is often what bounds a row. Every broker-side figure is
# the broker process's own (Kafka's JVM, Sluice's process); the load generators run on
# the same 2 cores.
#
# Builds nothing: the release build's sluice and sluice-loadgen (BUILD_DIR, default
# build/), the Kafka jars of `make test-deps` (tests/jvm/target/classpath.txt). Binds
# to 127.0.0.1 only; every step is bounded in time, the brokers are stopped and the
# scratch dir deleted on exit (--keep keeps it).

set -u -o pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() {
  cat <<EOF
usage: bench/vs-kafka.sh [--quick] [--keep] [--out FILE] [BUILD_DIR]

  --quick     one short round with small sizes, to try the script (~3 min)
  --keep      keep the scratch dir (data dirs, logs, results.tsv)
  --out FILE  also write the markdown summary to FILE

environment (defaults in brackets):
  ROUNDS [3]  SECS [6] (each flat-out row)  STEADY_MBPS [50]  STEADY_SECS [12]
  PARTITIONS [8]  RECORD_SIZE [1024]  PERF_RECORDS [1500000] (pjava)
  MANY_PARTITIONS ["1000 10000"]  MANY_PRODUCERS [100]  CREATE_STEP [5000]  KAFKA_HEAP [1g]
  BROKERS ["sluice kafka kafka-fsync"]  ROWS [all: p1 pall pjava steady cons consjava parts idemlz4]
  BENCH_DIR [\${TMPDIR:-/tmp}]  SLUICE, LOADGEN (the binaries)
EOF
}
KEEP=0 QUICK=0 OUT="" BUILD_DIR="${BUILD_DIR:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1 ;;
    --quick) QUICK=1 ;;
    --out) shift; OUT="${1:?--out needs a file}" ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "vs-kafka.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) BUILD_DIR="$1" ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then
  : "${ROUNDS:=1}" "${SECS:=2}" "${STEADY_SECS:=3}" "${PERF_RECORDS:=200000}"
  : "${MANY_PARTITIONS:=200}" "${MANY_PRODUCERS:=10}"
fi
: "${BUILD_DIR:=$ROOT/build}"
: "${SLUICE:=$BUILD_DIR/sluice}"
: "${LOADGEN:=$BUILD_DIR/bench/sluice-loadgen}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${ROUNDS:=3}" "${SECS:=6}" "${STEADY_MBPS:=50}" "${STEADY_SECS:=12}"
: "${PARTITIONS:=8}" "${RECORD_SIZE:=1024}" "${PERF_RECORDS:=1500000}"
: "${MANY_PARTITIONS:=1000 10000}" "${MANY_PRODUCERS:=100}" "${KAFKA_HEAP:=1g}"
: "${CREATE_STEP:=5000}"
: "${BROKERS:=sluice kafka kafka-fsync}"
: "${ROWS:=p1 pall pjava steady cons consjava parts idemlz4}"
for b in "$SLUICE" "$LOADGEN"; do
  [ -x "$b" ] || { echo "vs-kafka.sh: $b is missing (build first)" >&2; exit 2; }
done
[ -s "$ROOT/tests/jvm/target/classpath.txt" ] ||
  { echo "vs-kafka.sh: the Kafka jars are missing (make test-deps)" >&2; exit 2; }

mkdir -p "$BENCH_DIR" && WORK="$(mktemp -d "$BENCH_DIR/sluice-vskafka.XXXXXX")" || exit 2
LOGS="$WORK/logs" RESULTS="$WORK/results.tsv"
mkdir -p "$LOGS"
: > "$RESULTS"
BENCH_NAME=vs-kafka.sh
KAFKA_DIR="$WORK/kafka"
stop_kafka() { "$ROOT/scripts/apache-kafka" stop "$KAFKA_DIR" > /dev/null 2>&1 || true; }
CLEANUP_HOOK=stop_kafka
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
# 10,000 partitions of Kafka hold more files open than a shell's default limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# What Kafka's kafka-server-start.sh / kafka-run-class.sh give the JVM.
KAFKA_JVM="-Xms$KAFKA_HEAP -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35"
KAFKA_JVM+=" -XX:+ExplicitGCInvokesConcurrent -XX:MaxInlineLevel=15"

has_row() { [[ " $ROWS " == *" $1 "* ]]; }
now_ms() { date +%s%3N; }
rss_mb() { awk -v k="$2:" '$1 == k { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }
# Broker CPU seconds so far (utime+stime of the whole process, exited threads included).
broker_cpu() { awk -v hz="$HZ" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$BROKER_PID/stat"; }
# record ROUND BROKER ROW KEY VALUE
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$RESULTS"; }

# topic_create NAME PARTITIONS: creates it and waits (up to 120 s) until the broker's
# metadata shows every partition with a leader: Kafka answers CreateTopics before its
# metadata cache has the topic, and a client started at once would find none.
# Kafka's controller refuses an operation of more than 10,000 metadata records ("Unable
# to perform excessively large batch operation"), one per partition: so a topic of more
# than CREATE_STEP partitions is created with CREATE_STEP and grown by CreatePartitions
# (kafka-topics --alter) in steps of as many, on every broker alike.
topic_create() {
  local out="$LOGS/create-$1.log" i n
  n=$(($2 < CREATE_STEP ? $2 : CREATE_STEP))
  run_step "$out" timeout -k 5 300 "$SLUICE" topic create "$1" --partitions "$n" \
    --bootstrap "$ADDR" || { tail -3 "$out" >&2; return 1; }
  while [ "$n" -lt "$2" ]; do
    n=$((n + CREATE_STEP < $2 ? n + CREATE_STEP : $2))
    run_step "$out" timeout -k 5 300 "$ROOT/scripts/kafka-tool" topics --bootstrap-server "$ADDR" \
      --alter --topic "$1" --partitions "$n" || { tail -3 "$out" >&2; return 1; }
  done
  for i in $(seq 1 1200); do
    [ "$(timeout -k 5 60 "$SLUICE" topic describe "$1" --bootstrap "$ADDR" 2>/dev/null |
      grep -cE '^  partition [0-9]+  leader [0-9]+$')" = "$2" ] && return 0
    sleep 0.1
  done
  echo "vs-kafka.sh: topic $1 had no leader for every partition after 120 s" >&2
  return 1
}
# topic_delete NAME: deletes it and waits (up to 120 s) until the broker no longer lists
# it: Kafka removes a topic's partitions after it answers, and a broker stopped before
# that still has the topic when it starts again.
topic_delete() {
  local i
  run_step "$LOGS/delete-$1.log" timeout -k 5 300 "$SLUICE" topic delete "$1" --bootstrap "$ADDR" ||
    { cat "$LOGS/delete-$1.log" >&2; return 1; }
  for i in $(seq 1 1200); do
    timeout -k 5 60 "$SLUICE" topic list --bootstrap "$ADDR" 2>/dev/null | grep -qxF "$1" || return 0
    sleep 0.1
  done
  echo "vs-kafka.sh: topic $1 still listed 120 s after its deletion" >&2
  return 1
}

# loadgen NAME ARGS...: one sluice-loadgen run against the broker, output in
# $LOGS/NAME.log; fails (and says why) when the run did.
loadgen() {
  local name="$1"
  shift
  run_step "$LOGS/$name.log" timeout -k 5 600 "$LOADGEN" --bootstrap "$ADDR" "$@" ||
    { echo "vs-kafka.sh: $name failed:" >&2; tail -5 "$LOGS/$name.log" >&2; return 1; }
}

# start_broker NAME: starts it on a fresh data dir, times launch to the first
# acknowledged record, reads its idle memory; sets BROKER_PID and ADDR.
start_broker() {
  local name="$1" t0 props="$WORK/kafka.props"
  t0="$(now_ms)"
  case "$name" in
    sluice)
      start_sluice "$LOGS/sluice-$ROUND.log" --data-dir "$WORK/sluice-data" \
        --listen 127.0.0.1:0 || return 1 ;;
    kafka|kafka-fsync)
      # Deleted topics go at once rather than after Kafka's one minute.
      echo "file.delete.delay.ms=500" > "$props"
      [ "$name" = kafka-fsync ] && echo "log.flush.interval.messages=1" >> "$props"
      ADDR="$(APACHE_KAFKA_HEAP="$KAFKA_HEAP" APACHE_KAFKA_PROPS="$props" \
        APACHE_KAFKA_JVM_OPTS="$KAFKA_JVM" "$ROOT/scripts/apache-kafka" start "$KAFKA_DIR" 0)" ||
        return 1
      BROKER_PID="$(cat "$KAFKA_DIR/kafka.pid")" ;;
  esac
  topic_create first 1 || return 1
  loadgen "first-$name-$ROUND" --topic first --mode produce --records 1 --acks -1 \
    --message-timeout-ms 60000 --timeout-s 60 || return 1
  record "$ROUND" "$name" broker start_ms $(($(now_ms) - t0))
  sleep 5
  record "$ROUND" "$name" broker idle_rss_mb "$(rss_mb "$BROKER_PID" VmRSS)"
  topic_create warmup "$PARTITIONS" && loadgen "warmup-$name-$ROUND" --topic warmup \
    --mode produce --acks 1 --records 100000000 --duration-s "$SECS" --record-size "$RECORD_SIZE"
  topic_delete warmup
}

stop_broker() {
  local name="$1"
  record "$ROUND" "$name" broker peak_rss_mb "$(rss_mb "$BROKER_PID" VmHWM)"
  topic_delete first
  if [ "$name" = sluice ]; then
    stop_pid "$BROKER_PID"
  else
    # Kafka deletes a topic's files after file.delete.delay.ms; let it, so that the next
    # start begins as empty as Sluice's.
    for _ in $(seq 1 600); do
      compgen -G "$KAFKA_DIR/data/*-delete" > /dev/null || break
      sleep 0.1
    done
    stop_kafka
  fi
  BROKER_PID=""
}

# measure ROUND BROKER ROW BYTES_CMD CMD...: runs CMD (a loadgen or perf-test call), then
# records the broker's CPU seconds per GB of the payload BYTES_CMD prints afterwards.
# The client's figure is the CPU of the script's finished children (the load generator),
# read with the `times` builtin in this shell (a subshell's would count its own).
measure() {
  local round="$1" broker="$2" row="$3" bytes_cmd="$4" c0 c1 l0 l1 bytes
  shift 4
  c0="$(broker_cpu)"
  times > "$WORK/times" && l0="$(children_cpu)"
  "$@" || { warn "$broker $row failed in round $round"; return 1; }
  c1="$(broker_cpu)"
  times > "$WORK/times" && l1="$(children_cpu)"
  bytes="$($bytes_cmd)"
  record "$round" "$broker" "$row" cpu_s_per_gb "$(calc "printf \"%.2f\", ($c1 - $c0) / ($bytes / 1e9)")"
  record "$round" "$broker" "$row" client_cpu_s_per_gb "$(calc "printf \"%.2f\", ($l1 - $l0) / ($bytes / 1e9)")"
}
# The second line of `times`: "XmY.YYYs XmZ.ZZZs", children's user and system time.
children_cpu() {
  awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } print t }' "$WORK/times"
}

# The payload of the last loadgen run (records x record size; mbps x elapsed for JSON).
LAST=""
lg_bytes() { calc "printf \"%.0f\", $(result_field "$LOGS/$LAST.log" mbps) * $(result_field "$LOGS/$LAST.log" elapsed_s) * 1e6"; }
lg_run() {  # ROW TOPIC ARGS...: a loadgen produce run whose figures are recorded
  local row="$1" topic="$2" key
  shift 2
  LAST="$row-$BROKER-$ROUND"
  loadgen "$LAST" --topic "$topic" --mode produce "$@" || return 1
  for key in mbps rps p50_ms p99_ms p999_ms; do
    record "$ROUND" "$BROKER" "$row" "$key" "$(result_field "$LOGS/$LAST.log" "$key")"
  done
}
flat() { echo --records 100000000 --duration-s "$SECS" --record-size "$RECORD_SIZE"; }

row_p1() {
  topic_create p1 "$PARTITIONS" || return 1
  # shellcheck disable=SC2046
  measure "$ROUND" "$BROKER" p1 lg_bytes lg_run p1 p1 --acks 1 $(flat)
  topic_delete p1
}
row_pall() {  # keeps its topic for the consume rows
  topic_create pall "$PARTITIONS" || return 1
  # shellcheck disable=SC2046
  measure "$ROUND" "$BROKER" pall lg_bytes lg_run pall pall --acks -1 $(flat)
  PALL_RECORDS="$(result_field "$LOGS/$LAST.log" records)"
}
perf_bytes() { echo $((PERF_RECORDS * RECORD_SIZE)); }
perf_run() {
  local out="$LOGS/pjava-$BROKER-$ROUND.log" line rps
  run_step "$out" timeout -k 5 300 "$ROOT/scripts/kafka-tool" producer-perf-test --topic pjava \
    --num-records "$PERF_RECORDS" --record-size "$RECORD_SIZE" --throughput -1 \
    --command-property bootstrap.servers="$ADDR" acks=all || { tail -5 "$out" >&2; return 1; }
  # "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
  #  P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
  line="$(grep 'records sent' "$out" | tail -1)"
  rps="$(sed -E 's/.* sent, ([0-9.]+) records\/sec.*/\1/' <<< "$line")"
  record "$ROUND" "$BROKER" pjava mbps "$(calc "printf \"%.2f\", $rps * $RECORD_SIZE / 1e6")"
  record "$ROUND" "$BROKER" pjava p50_ms "$(sed -E 's/.* ([0-9.]+) ms 50th.*/\1/' <<< "$line")"
  record "$ROUND" "$BROKER" pjava p99_ms "$(sed -E 's/.* ([0-9.]+) ms 99th.*/\1/' <<< "$line")"
}
row_pjava() {
  topic_create pjava "$PARTITIONS" || return 1
  measure "$ROUND" "$BROKER" pjava perf_bytes perf_run
  topic_delete pjava
}
row_steady() {
  topic_create steady "$PARTITIONS" || return 1
  measure "$ROUND" "$BROKER" steady lg_bytes lg_run steady steady --acks -1 \
    --rate-mbps "$STEADY_MBPS" --duration-s "$STEADY_SECS" --records 100000000 \
    --record-size "$RECORD_SIZE" --linger-ms 1
  topic_delete steady
}
cons_run() {
  LAST="cons-$BROKER-$ROUND"
  loadgen "$LAST" --topic pall --mode consume --records "$PALL_RECORDS" || return 1
  record "$ROUND" "$BROKER" cons mbps "$(result_field "$LOGS/$LAST.log" mbps)"
}
cons_bytes() { result_field "$LOGS/$LAST.log" bytes; }
cperf_run() {
  local out="$LOGS/consjava-$BROKER-$ROUND.log" line
  run_step "$out" timeout -k 5 300 "$ROOT/scripts/kafka-tool" consumer-perf-test \
    --bootstrap-server "$ADDR" --topic pall --num-records "$PALL_RECORDS" --timeout 60000 \
    --group "perf-$ROUND-$RANDOM" || { tail -5 "$out" >&2; return 1; }
  # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
  # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
  line="$(grep -E '^[0-9]{4}-' "$out" | tail -1)"
  record "$ROUND" "$BROKER" consjava mbps \
    "$(awk -F', *' -v rs="$RECORD_SIZE" '{ printf "%.2f\n", $10 * rs / 1e6 }' <<< "$line")"
}
pall_bytes() { echo $((PALL_RECORDS * RECORD_SIZE)); }
row_consumers() {
  [ -n "${PALL_RECORDS:-}" ] || return 0
  has_row cons && measure "$ROUND" "$BROKER" cons cons_bytes cons_run
  has_row consjava && measure "$ROUND" "$BROKER" consjava pall_bytes cperf_run
  return 0
}
row_parts() {
  local n t0
  for n in $MANY_PARTITIONS; do
    t0="$(now_ms)"
    topic_create "parts-$n" "$n" || return 1
    # One record per partition: every partition has a leader and takes writes.
    loadgen "parts-$n-ready-$BROKER-$ROUND" --topic "parts-$n" --mode produce --acks -1 \
      --records "$n" --record-size 100 --message-timeout-ms 120000 --timeout-s 60 || return 1
    record "$ROUND" "$BROKER" "parts-$n" create_s "$(calc "printf \"%.1f\", ($(now_ms) - $t0) / 1000")"
    # shellcheck disable=SC2046
    measure "$ROUND" "$BROKER" "parts-$n" lg_bytes lg_run "parts-$n" "parts-$n" --acks -1 \
      --producers "$MANY_PRODUCERS" $(flat)
    topic_delete "parts-$n"
  done
}
row_idemlz4() {
  topic_create idemlz4 "$PARTITIONS" || return 1
  measure "$ROUND" "$BROKER" idemlz4 lg_bytes lg_run idemlz4 idemlz4 --acks -1 --value-json10 \
    --records 100000000 --duration-s "$SECS" --set enable.idempotence=true \
    --set compression.type=lz4
  topic_delete idemlz4
}

echo "machine: $(nproc) x $M_CPU, $M_MEM, $M_FS; load $M_LOAD0; git $M_GIT ($M_BUILD)" >&2
# A first start of each broker, not measured: Kafka formats its storage, and both
# binaries and the Kafka jars come into the page cache.
ROUND=0
for b in sluice kafka; do
  start_broker "$b" && stop_broker "$b" || { echo "vs-kafka.sh: $b did not start" >&2; exit 1; }
done
: > "$RESULTS"

read -r -a ORDER <<< "$BROKERS"
for ROUND in $(seq 1 "$ROUNDS"); do
  for i in "${!ORDER[@]}"; do
    BROKER="${ORDER[$(((i + ROUND - 1) % ${#ORDER[@]}))]}"
    log "round $ROUND: $BROKER"
    start_broker "$BROKER" || { warn "$BROKER did not start in round $ROUND"; continue; }
    PALL_RECORDS=""
    for row in p1 pall pjava steady parts idemlz4; do
      has_row "$row" || continue
      # kafka-fsync: the acks=all rows only (acks=1 answers before any fsync).
      [ "$BROKER" = kafka-fsync ] && [ "$row" = p1 ] && continue
      "row_$row" || warn "$BROKER: $row failed in round $ROUND"
      if [ "$row" = pall ]; then
        [ "$BROKER" = kafka-fsync ] || row_consumers
        topic_delete pall
      fi
    done
    stop_broker "$BROKER"
  done
done

"$ROOT/bench/vs-kafka-summary.py" "$RESULTS" --rounds "$ROUNDS" \
  --machine "$(nproc) x $M_CPU, $M_MEM, data on $M_FS; git $M_GIT; load at start $M_LOAD0" \
  --setup "SECS=$SECS STEADY_MBPS=$STEADY_MBPS STEADY_SECS=$STEADY_SECS PARTITIONS=$PARTITIONS RECORD_SIZE=$RECORD_SIZE MANY_PARTITIONS='$MANY_PARTITIONS' MANY_PRODUCERS=$MANY_PRODUCERS KAFKA_HEAP=$KAFKA_HEAP" \
  | tee "${OUT:-/dev/null}"
[ "$FAILED" = 0 ]
