#!/usr/bin/env bash
# bench/run.sh — one-shot Sluice benchmark.
#
#   (a) records the machine, (b) fio sequential-write baselines on the
#   filesystem that holds the broker's data dir, (c) iperf3 loopback TCP
#   baseline, (d) starts `sluice serve` and runs sluice-loadgen: acks=-1
#   flat-out produce, warm-cache consume, steady-rate acks=-1 produce with
#   latency percentiles, (e) prints a markdown summary.
#
# Everything binds to 127.0.0.1, every step is bounded in time, and all
# background processes and temp files are removed on exit.
# See bench/README.md for what each number means.

set -u -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<EOF
usage: bench/run.sh [--only-baselines] [--quick] [--keep] [--out DIR]

  --only-baselines  only (a) machine info, (b) fio and (c) iperf3; no broker
  --quick           small sizes, for smoke-testing the script (~1 min)
  --keep            keep the work directory (broker data, logs) at exit
  --out DIR         copy summary.md and all logs into DIR (same as RESULTS_DIR)

environment (defaults in brackets):
  SLUICE          broker binary                 [$ROOT/build/sluice]
  LOADGEN         load generator binary         [$ROOT/build/bench/sluice-loadgen]
  BENCH_DIR       parent of the temp work dir; the broker data dir and the
                  fio test file both live under it, so they share a filesystem
                                                [\${TMPDIR:-/tmp}]
  RESULTS_DIR     where to copy summary.md and logs    [none]
  TOPIC           topic name                    [bench]
  PARTITIONS      partitions                    [8]
  RECORDS         records in the flat-out produce run   [2000000]
  RECORD_SIZE     bytes per record              [1024]
  STEADY_MBPS     steady-run target, MB/s (10^6 B/s)    [50]
  STEADY_SECS     steady-run duration, s        [20]
  PRODUCE_CAP_SECS / CONSUME_CAP_SECS  hard caps for the flat-out runs [300]
  FIO_SIZE        bytes per fio run             [2g]
  FIO_SYNC_EVERY  fdatasync every N 1 MiB blocks in the group-commit-like
                  fio run                       [4]
  FIO_REPEATS     repeats of each fio job (median reported) [3]
  FIO_RUNTIME     cap on the write phase of one fio run, s  [8]
  PAIRS           rounds of (d4): an O_DIRECT fio run, then a flat-out produce
                  into a fresh topic, each ratio taken within its round [5]
  PAIR_RECORDS    records per (d4) produce      [1000000]
  PAIR_FIO_SIZE   bytes per (d4) fio run        [1g]
  IPERF_SECS      iperf3 duration, s            [5]
  LOADGEN_ARGS    extra args for every loadgen run, e.g. "--set k=v" [none]
EOF
}

ONLY_BASELINES=0
QUICK=0
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only-baselines) ONLY_BASELINES=1 ;;
    --quick) QUICK=1 ;;
    --keep) KEEP=1 ;;
    --out) shift; RESULTS_DIR="${1:?--out needs a directory}" ;;
    --out=*) RESULTS_DIR="${1#--out=}" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

if [ "$QUICK" = 1 ]; then
  : "${RECORDS:=200000}" "${STEADY_SECS:=5}" "${FIO_SIZE:=512m}" "${FIO_REPEATS:=1}" "${IPERF_SECS:=2}"
  : "${PAIRS:=1}" "${PAIR_RECORDS:=100000}" "${PAIR_FIO_SIZE:=256m}"
fi
: "${SLUICE:=$ROOT/build/sluice}"
: "${LOADGEN:=$ROOT/build/bench/sluice-loadgen}"
: "${FETCHBENCH:=$ROOT/build/bench/sluice-fetchbench}"
: "${STEADY_LINGER_MS:=1}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${RESULTS_DIR:=}"
: "${TOPIC:=bench}"
: "${PARTITIONS:=8}"
: "${RECORDS:=2000000}"
: "${RECORD_SIZE:=1024}"
: "${PAIRS:=5}"
: "${PAIR_RECORDS:=1000000}"
: "${PAIR_FIO_SIZE:=1g}"
: "${STEADY_MBPS:=50}"
: "${STEADY_SECS:=20}"
: "${PRODUCE_CAP_SECS:=300}"
: "${CONSUME_CAP_SECS:=300}"
: "${FIO_SIZE:=2g}"
: "${FIO_SYNC_EVERY:=4}"
: "${FIO_REPEATS:=3}"
: "${FIO_RUNTIME:=8}"
: "${IPERF_SECS:=5}"
: "${LOADGEN_ARGS:=}"

# ---------------------------------------------------------------------------
# Work dir, background processes, cleanup
# ---------------------------------------------------------------------------

mkdir -p "$BENCH_DIR" || { echo "run.sh: cannot create BENCH_DIR=$BENCH_DIR" >&2; exit 2; }
WORK="$(mktemp -d "$BENCH_DIR/sluice-bench.XXXXXX")" || { echo "run.sh: mktemp failed" >&2; exit 2; }
DATA_DIR="$WORK/data"
LOGS="$WORK/logs"
mkdir -p "$DATA_DIR" "$LOGS"
SUMMARY="$WORK/summary.md"

BG_PIDS=()    # long-lived background services (iperf3 server, broker)
STEP_PIDS=()  # the step currently running (and its log follower)
FAILED=0

stop_pid() {  # stop_pid PID: TERM, wait up to 10 s, then KILL
  local pid="$1" i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "run.sh: pid $pid ignored SIGTERM; sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  return 0
}

# shellcheck disable=SC2317 # invoked via trap
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM
  for pid in "${STEP_PIDS[@]}" "${BG_PIDS[@]}"; do stop_pid "$pid"; done
  if [ -n "$RESULTS_DIR" ] && [ -d "$LOGS" ]; then
    mkdir -p "$RESULTS_DIR" && cp -r "$LOGS" "$RESULTS_DIR/" && \
      { [ -f "$SUMMARY" ] && cp "$SUMMARY" "$RESULTS_DIR/"; true; } && \
      echo "run.sh: summary and logs copied to $RESULTS_DIR" >&2
  fi
  if [ "$KEEP" = 1 ]; then
    echo "run.sh: work dir kept at $WORK" >&2
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT
trap 'echo "run.sh: terminated" >&2; exit 143' TERM

# run_step OUT LIVE cmd...: runs cmd in the background with stdout+stderr to
# OUT (and, if LIVE=1, echoed to stderr as it runs) and waits for it. Waiting
# via the `wait` builtin lets a Ctrl-C / SIGTERM reach the traps at once, and
# cleanup then stops the step by pid. Returns cmd's exit status.
run_step() {
  local out="$1" live="$2" pid tpid="" rc
  shift 2
  "$@" > "$out" 2>&1 &
  pid=$!
  STEP_PIDS=("$pid")
  if [ "$live" = 1 ]; then
    tail -s 0.2 -n +1 -f --pid="$pid" "$out" >&2 &
    tpid=$!
    STEP_PIDS+=("$tpid")
  fi
  wait "$pid"
  rc=$?
  [ -n "$tpid" ] && wait "$tpid"
  STEP_PIDS=()
  return "$rc"
}

log() { printf '\n### %s\n' "$*" >&2; }
warn() { printf 'run.sh: WARNING: %s\n' "$*" >&2; }

fmt() { awk -v x="$1" -v p="${2:-1}" 'BEGIN { if (x == "" || x == "n/a") print "n/a"; else printf "%.*f\n", p, x }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"; else printf "%.0f%%\n", 100 * a / b }'; }

# Value of KEY in the last "RESULT ..." line of FILE.
result_field() {
  awk -v k="$2" '/^RESULT /{line=$0} END { n = split(line, f, " "); for (i = 2; i <= n; i++) { split(f[i], kv, "="); if (kv[1] == k) { print kv[2]; exit } } }' "$1"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# CPU seconds (user+sys) consumed so far by PID, or empty.
cpu_secs() {
  [ -r "/proc/$1/stat" ] || return 0
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

# ---------------------------------------------------------------------------
# (a) machine
# ---------------------------------------------------------------------------

log "(a) machine"
M_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
M_NPROC="$(nproc)"
M_CPU="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
[ -n "$M_CPU" ] || M_CPU="$(lscpu 2>/dev/null | awk -F': *' '/Model name/ { print $2; exit }')"
M_MEM="$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
M_KERNEL="$(uname -srm)"
M_FS="$(df -PT "$WORK" | awk 'NR == 2 { print $2 " on " $1 " (mounted at " $7 ")" }')"
M_FSOPTS="$(findmnt -no OPTIONS -T "$WORK" 2>/dev/null || echo n/a)"
M_FSTYPE="$(df -PT "$WORK" | awk 'NR == 2 { print $2 }')"
M_FREE_GB="$(df -Pk "$WORK" | awk 'NR == 2 { printf "%.1f", $4 / 1048576 }')"
M_GIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)"
M_DIRTY="$(cat /proc/sys/vm/dirty_background_ratio 2>/dev/null)/$(cat /proc/sys/vm/dirty_ratio 2>/dev/null)"
cat >&2 <<EOF
date:        $M_DATE
cpus:        $M_NPROC x $M_CPU
memory:      $M_MEM
kernel:      $M_KERNEL
data dir:    $DATA_DIR
filesystem:  $M_FS [$M_FSOPTS], ${M_FREE_GB} GiB free
dirty ratio: background/foreground = $M_DIRTY %
sluice git:  $M_GIT
EOF
case "$M_FSTYPE" in
  tmpfs|ramfs|overlay) warn "the data dir is on $M_FSTYPE: disk numbers will not reflect a real disk (set BENCH_DIR)" ;;
esac

# ---------------------------------------------------------------------------
# (b) fio
# ---------------------------------------------------------------------------

FIO_END="n/a"; FIO_END_RANGE=""; FIO_SYNC="n/a"; FIO_SYNC_RANGE=""
run_fio_job() {  # run_fio_job NAME RESULTS extra-args... ; appends "MB/s ms" (MB = 10^6) per repeat to RESULTS
  local name="$1" results="$2" i rc out; shift 2
  : > "$results"
  for i in $(seq 1 "$FIO_REPEATS"); do
    run_step "$LOGS/fio-$name-$i.log" 0 timeout -k 5 120 fio --name="$name" \
      --filename="$WORK/fio-$name.dat" --rw=write --bs=1M --size="$FIO_SIZE" --ioengine=psync \
      --direct=0 --runtime="$FIO_RUNTIME" --unlink=1 --output-format=terse --terse-version=3 "$@"
    rc=$?
    rm -f "$WORK/fio-$name.dat"
    out="$(grep -m1 '^3;' "$LOGS/fio-$name-$i.log")"
    if [ $rc -ne 0 ] || [ -z "$out" ]; then
      warn "fio $name run $i failed (rc=$rc); see $LOGS/fio-$name-$i.log"
      continue
    fi
    # terse v3: field 48 = write bandwidth KiB/s, field 50 = write runtime ms
    # (the runtime includes the final fsync when end_fsync=1).
    echo "$out" | awk -F';' '{ printf "%.1f %d\n", $48 * 1024 / 1e6, $50 }' >> "$results"
  done
}

if command -v fio >/dev/null 2>&1; then
  log "(b) fio sequential write, bs=1MiB, size=$FIO_SIZE, buffered, x$FIO_REPEATS"
  run_fio_job seqwrite-endfsync "$WORK/fio-end.txt" --end_fsync=1
  res="$(cat "$WORK/fio-end.txt")"
  echo "$res" | sed 's/^/  end_fsync:          MB\/s ms = /' >&2
  FIO_END="$(echo "$res" | awk 'NF { print $1 }' | median)"
  FIO_END_RANGE="$(echo "$res" | awk 'NF { print $1 }' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR > 1) printf "%s–%s", lo, hi }')"
  run_fio_job seqwrite-fdatasync "$WORK/fio-sync.txt" --fdatasync="$FIO_SYNC_EVERY" --end_fsync=1
  res="$(cat "$WORK/fio-sync.txt")"
  echo "$res" | sed "s/^/  fdatasync\/${FIO_SYNC_EVERY}MiB:     MB\/s ms = /" >&2
  FIO_SYNC="$(echo "$res" | awk 'NF { print $1 }' | median)"
  FIO_SYNC_RANGE="$(echo "$res" | awk 'NF { print $1 }' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR > 1) printf "%s–%s", lo, hi }')"
  # O_DIRECT: the device itself, without the page-cache copy the buffered runs include.
  run_fio_job seqwrite-direct "$WORK/fio-direct.txt" --direct=1 --end_fsync=1
  res="$(cat "$WORK/fio-direct.txt")"
  echo "$res" | sed 's/^/  direct:             MB\/s ms = /' >&2
  FIO_DIRECT="$(echo "$res" | awk 'NF { print $1 }' | median)"
  FIO_DIRECT_RANGE="$(echo "$res" | awk 'NF { print $1 }' | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR > 1) printf "%s–%s", lo, hi }')"
  echo "  median: end_fsync $FIO_END MB/s, fdatasync every ${FIO_SYNC_EVERY} MiB $FIO_SYNC MB/s, direct $FIO_DIRECT MB/s" >&2
  [ "$FIO_END" = "n/a" ] && FAILED=1
else
  warn "fio not installed (apt-get install fio); skipping disk baseline"
fi

# ---------------------------------------------------------------------------
# (c) iperf3 loopback
# ---------------------------------------------------------------------------

port_in_use() { ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }
free_port() {
  local p i
  for i in $(seq 1 50); do
    p=$(( 20000 + RANDOM % 40000 ))
    port_in_use "$p" || { echo "$p"; return 0; }
  done
  return 1
}

IPERF_GBPS="n/a"
if command -v iperf3 >/dev/null 2>&1; then
  log "(c) iperf3 loopback, ${IPERF_SECS}s, 1 stream"
  IPORT="$(free_port)" || IPORT=""
  if [ -n "$IPORT" ]; then
    timeout -k 5 $(( IPERF_SECS + 60 )) iperf3 -s -1 -B 127.0.0.1 -p "$IPORT" > "$LOGS/iperf3-server.log" 2>&1 &
    IPERF_PID=$!
    BG_PIDS+=("$IPERF_PID")
    for _ in $(seq 1 50); do port_in_use "$IPORT" && break; sleep 0.1; done
    run_step "$LOGS/iperf3.log" 0 \
      timeout -k 5 $(( IPERF_SECS + 30 )) iperf3 -c 127.0.0.1 -p "$IPORT" -t "$IPERF_SECS" -f g
    rc=$?
    IPERF_GBPS="$(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "Gbits/sec") print $(i - 1) }' "$LOGS/iperf3.log" | tail -1)"
    [ -n "$IPERF_GBPS" ] || IPERF_GBPS="n/a"
    if [ $rc -ne 0 ] || [ "$IPERF_GBPS" = "n/a" ]; then
      warn "iperf3 failed (rc=$rc): $(tail -3 "$LOGS/iperf3.log")"
      FAILED=1
    fi
    stop_pid "$IPERF_PID"
    echo "  iperf3 loopback: $IPERF_GBPS Gbit/s" >&2
  else
    warn "no free port for iperf3"
    FAILED=1
  fi
else
  warn "iperf3 not installed (apt-get install iperf3); skipping network baseline"
fi

# ---------------------------------------------------------------------------
# (d) broker
# ---------------------------------------------------------------------------

P_MBPS="n/a"; P_RPS="n/a"; P_REC="n/a"; P_P50="n/a"; P_P99="n/a"; P_P999="n/a"; P_CPU="n/a"
C_MBPS="n/a"; C_RPS="n/a"; C_REC="n/a"; C_CPU="n/a"
S_MBPS="n/a"; S_P50="n/a"; S_P99="n/a"; S_P999="n/a"; S_MAX="n/a"; S_CPU="n/a"
S1_MBPS="n/a"; S1_P50="n/a"; S1_P99="n/a"; S1_P999="n/a"
SS_MBPS="n/a"; SS_P50="n/a"; SS_P99="n/a"; SS_P999="n/a"
PAIR_LIST=""; PAIR_MEDIAN="n/a"; PAIR_RANGE=""
BROKER_NOTE=""
DATA_SIZE="n/a"

run_loadgen() {  # run_loadgen TOPIC LOGNAME CAP_SECS args... ; returns loadgen's exit code
  local topic="$1" name="$2" cap="$3"; shift 3
  # shellcheck disable=SC2086 # LOADGEN_ARGS is deliberately word-split
  run_step "$LOGS/$name.log" 1 timeout -s INT -k 30 $(( cap + 120 )) \
    "$LOADGEN" --bootstrap "$ADDR" --topic "$topic" "$@" $LOADGEN_ARGS
}

steady_run() {  # steady_run TOPIC LOGNAME args... ; a steady acks=-1 run, its exit code
  local topic="$1" name="$2"; shift 2
  run_loadgen "$topic" "$name" "$STEADY_SECS" --mode produce --acks -1 --rate-mbps "$STEADY_MBPS" \
    --records 1000000000 --record-size "$RECORD_SIZE" --duration-s "$STEADY_SECS" \
    --linger-ms "$STEADY_LINGER_MS" "$@"
}

create_topic() {  # create_topic NAME PARTITIONS ; logs to topic-create-NAME.log, says why it failed
  local log="$LOGS/topic-create-$1.log"
  run_step "$log" 0 timeout -k 5 60 "$SLUICE" topic create "$1" --partitions "$2" --bootstrap "$ADDR" \
    && return 0
  warn "topic create $1 failed:"; cat "$log" >&2
  return 1
}

broker_phase() {
  local missing=0
  [ -x "$SLUICE" ] || { warn "SLUICE=$SLUICE is not executable (build it, or set SLUICE)"; missing=1; }
  [ -x "$LOADGEN" ] || { warn "LOADGEN=$LOADGEN is not executable (cmake -DSLUICE_BUILD_BENCH=ON, or set LOADGEN)"; missing=1; }
  if [ $missing = 1 ]; then BROKER_NOTE="broker runs skipped: binaries missing"; return 1; fi

  log "(d) broker: $SLUICE serve --data-dir $DATA_DIR --listen 127.0.0.1:0"
  local launcher=()
  command -v stdbuf >/dev/null 2>&1 && launcher=(stdbuf -oL -eL)
  "${launcher[@]}" "$SLUICE" serve --data-dir "$DATA_DIR" --listen 127.0.0.1:0 > "$LOGS/sluice.log" 2>&1 &
  BROKER_PID=$!
  BG_PIDS+=("$BROKER_PID")
  ADDR=""
  for _ in $(seq 1 300); do
    ADDR="$(grep -m1 -oE 'listening kafka [0-9.]+:[0-9]+' "$LOGS/sluice.log" | awk '{ print $3 }')"
    [ -n "$ADDR" ] && break
    kill -0 "$BROKER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ADDR" ]; then
    warn "broker did not print 'listening kafka HOST:PORT' within 30 s; log tail:"
    tail -20 "$LOGS/sluice.log" >&2
    BROKER_NOTE="broker did not start"
    return 1
  fi
  echo "  broker pid $BROKER_PID listening on $ADDR" >&2

  # The main topic, the 1-partition one (run 3b) and a fresh one for run 3c.
  if ! { create_topic "$TOPIC" "$PARTITIONS" && create_topic "${TOPIC}1" 1 &&
         create_topic "${TOPIC}s" "$PARTITIONS"; }; then
    BROKER_NOTE="topic create failed"
    return 1
  fi

  local c0 c1 rc ok=0
  broker_alive() {
    kill -0 "$BROKER_PID" 2>/dev/null && return 0
    warn "broker exited; log tail:"; tail -20 "$LOGS/sluice.log" >&2
    BROKER_NOTE="broker exited during the run"
    return 1
  }
  # 1. flat-out acks=-1 produce
  log "(d1) produce $RECORDS x $RECORD_SIZE B, acks=-1, flat-out, $PARTITIONS partitions"
  c0="$(cpu_secs "$BROKER_PID")"
  run_loadgen "$TOPIC" produce "$PRODUCE_CAP_SECS" --mode produce --acks -1 --records "$RECORDS" \
    --record-size "$RECORD_SIZE" --duration-s "$PRODUCE_CAP_SECS"
  rc=$?
  c1="$(cpu_secs "$BROKER_PID")"
  P_CPU="$(awk -v a="$c0" -v b="$c1" 'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%.1f", b - a }')"
  P_MBPS="$(result_field "$LOGS/produce.log" mbps)"; P_RPS="$(result_field "$LOGS/produce.log" rps)"
  P_REC="$(result_field "$LOGS/produce.log" records)"
  P_P50="$(result_field "$LOGS/produce.log" p50_ms)"; P_P99="$(result_field "$LOGS/produce.log" p99_ms)"
  P_P999="$(result_field "$LOGS/produce.log" p999_ms)"
  [ $rc -eq 0 ] || { warn "flat-out produce exited with $rc"; ok=1; }
  [ "$P_REC" = "$RECORDS" ] || { warn "flat-out produce delivered ${P_REC:-?} of $RECORDS records"; ok=1; }
  DATA_SIZE="$(du -sh "$DATA_DIR" 2>/dev/null | awk '{ print $1 }')"

  broker_alive || return 1

  # 2. consume everything from warm page cache (no cache drop)
  log "(d2) consume all partitions from the beginning (warm cache)"
  c0="$(cpu_secs "$BROKER_PID")"
  run_loadgen "$TOPIC" consume "$CONSUME_CAP_SECS" --mode consume --duration-s "$CONSUME_CAP_SECS"
  rc=$?
  c1="$(cpu_secs "$BROKER_PID")"
  C_CPU="$(awk -v a="$c0" -v b="$c1" 'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%.1f", b - a }')"
  C_MBPS="$(result_field "$LOGS/consume.log" mbps)"; C_RPS="$(result_field "$LOGS/consume.log" rps)"
  C_REC="$(result_field "$LOGS/consume.log" records)"
  [ $rc -eq 0 ] || { warn "consume exited with $rc"; ok=1; }
  if [ -n "$P_REC" ] && [ "$C_REC" != "$P_REC" ]; then
    warn "consumed ${C_REC:-?} records but ${P_REC} were acknowledged"; ok=1
  fi

  broker_alive || return 1

  # 2b. the broker's own Fetch rate, with a client that only walks batch headers
  if [ -x "$FETCHBENCH" ]; then
    log "(d2b) broker fetch rate (sluice-fetchbench, batch headers only)"
    run_step "$LOGS/fetchbench.log" 0 timeout -k 5 "$CONSUME_CAP_SECS" \
      "$FETCHBENCH" --bootstrap "$ADDR" --topic "$TOPIC" --partitions "$PARTITIONS" || ok=1
    F_MBPS="$(result_field "$LOGS/fetchbench.log" mbps)"
  fi

  broker_alive || return 1

  # 3. steady-rate acks=-1 produce, latency percentiles. Flush dirty pages
  #    from run 1 first so its writeback does not bleed into this run.
  sync
  log "(d3) steady produce at $STEADY_MBPS MB/s for ${STEADY_SECS}s, acks=-1"
  c0="$(cpu_secs "$BROKER_PID")"
  steady_run "$TOPIC" steady
  rc=$?
  c1="$(cpu_secs "$BROKER_PID")"
  S_CPU="$(awk -v a="$c0" -v b="$c1" 'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%.1f", b - a }')"
  S_MBPS="$(result_field "$LOGS/steady.log" mbps)"
  S_P50="$(result_field "$LOGS/steady.log" p50_ms)"; S_P99="$(result_field "$LOGS/steady.log" p99_ms)"
  S_P999="$(result_field "$LOGS/steady.log" p999_ms)"; S_MAX="$(result_field "$LOGS/steady.log" max_ms)"
  [ $rc -eq 0 ] || { warn "steady produce exited with $rc"; ok=1; }
  if [ -n "$S_MBPS" ] && awk -v a="$S_MBPS" -v b="$STEADY_MBPS" 'BEGIN { exit !(a < 0.95 * b) }'; then
    warn "steady run reached only $S_MBPS of $STEADY_MBPS MB/s: latencies are for an overloaded broker"
    BROKER_NOTE="steady run did not reach its target rate"
  fi

  broker_alive || return 1

  # 3b. the same steady rate into a one-partition topic: one fsync per flush pass
  log "(d3b) steady produce at $STEADY_MBPS MB/s for ${STEADY_SECS}s, acks=-1, 1 partition"
  sync
  steady_run "${TOPIC}1" steady1 || ok=1
  S1_P50="$(result_field "$LOGS/steady1.log" p50_ms)"; S1_P99="$(result_field "$LOGS/steady1.log" p99_ms)"
  S1_P999="$(result_field "$LOGS/steady1.log" p999_ms)"; S1_MBPS="$(result_field "$LOGS/steady1.log" mbps)"

  # 3c. run 3 again into a fresh topic, the load generator pacing in 1 ms steps instead
  #     of sleeping before each record: the same rate for less of the client's CPU on
  #     the shared cores (docs/benchmarks-history.md, "What the host does to the tail").
  log "(d3c) steady produce at $STEADY_MBPS MB/s for ${STEADY_SECS}s, acks=-1, paced in 1 ms steps"
  sync
  steady_run "${TOPIC}s" steady-steps --pace-step-us 1000 || ok=1
  SS_P50="$(result_field "$LOGS/steady-steps.log" p50_ms)"; SS_P99="$(result_field "$LOGS/steady-steps.log" p99_ms)"
  SS_P999="$(result_field "$LOGS/steady-steps.log" p999_ms)"; SS_MBPS="$(result_field "$LOGS/steady-steps.log" mbps)"

  broker_alive || return 1

  # 4. The disk's bandwidth on this VM moves by a third within minutes, so a produce
  #    run is also compared with an O_DIRECT fio run made just before it, round by
  #    round, and the ratios' median is reported.
  log "(d4) $PAIRS round(s): fio O_DIRECT $PAIR_FIO_SIZE, then produce $PAIR_RECORDS records flat-out"
  local i fio_mbps pair_mbps rounds="$PAIRS"
  : > "$WORK/pairs.txt"
  command -v fio >/dev/null 2>&1 || { warn "fio not installed: (d4) skipped"; rounds=0; }
  for i in $(seq 1 "$rounds"); do
    sync
    FIO_REPEATS=1 FIO_SIZE="$PAIR_FIO_SIZE" run_fio_job "pair$i" "$WORK/fio-pair.txt" --direct=1 --end_fsync=1
    fio_mbps="$(awk 'NF { print $1; exit }' "$WORK/fio-pair.txt")"
    create_topic "${TOPIC}p$i" "$PARTITIONS" || { ok=1; continue; }
    run_loadgen "${TOPIC}p$i" "pair$i" "$PRODUCE_CAP_SECS" --mode produce --acks -1 \
      --records "$PAIR_RECORDS" --record-size "$RECORD_SIZE" --duration-s "$PRODUCE_CAP_SECS" || ok=1
    pair_mbps="$(result_field "$LOGS/pair$i.log" mbps)"
    if [ -z "$fio_mbps" ] || [ -z "$pair_mbps" ]; then
      warn "round $i gave no figure (fio '${fio_mbps}', produce '${pair_mbps}')"; ok=1; continue
    fi
    echo "$fio_mbps $pair_mbps" | awk '{ printf "%s %s %.3f\n", $1, $2, $2 / $1 }' >> "$WORK/pairs.txt"
    echo "  round $i: fio direct $fio_mbps MB/s, produce $pair_mbps MB/s" >&2
  done
  PAIR_LIST="$(awk '{ printf "%s%.0f/%.0f", (NR > 1 ? ", " : ""), $2, $1 }' "$WORK/pairs.txt")"
  PAIR_MEDIAN="$(awk '{ print $3 }' "$WORK/pairs.txt" | median)"
  PAIR_RANGE="$(awk '{ print $3 }' "$WORK/pairs.txt" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR > 0) printf "%.2f–%.2f", lo, hi }')"

  broker_alive || ok=1
  stop_pid "$BROKER_PID"
  return $ok
}

if [ "$ONLY_BASELINES" = 1 ]; then
  BROKER_NOTE="broker runs skipped (--only-baselines)"
else
  broker_phase || FAILED=1
fi

# ---------------------------------------------------------------------------
# (e) summary
# ---------------------------------------------------------------------------

nz() { [ -n "$1" ] && echo "$1" || echo "n/a"; }
P_MBPS="$(nz "$P_MBPS")"; C_MBPS="$(nz "$C_MBPS")"; S_MBPS="$(nz "$S_MBPS")"
IPERF_MBS="$(awk -v g="$IPERF_GBPS" 'BEGIN { if (g == "n/a" || g == "") print "n/a"; else printf "%.0f", g * 125 }')"

{
  echo "## Sluice benchmark — $M_DATE"
  echo
  echo "Machine: $M_NPROC x $M_CPU, $M_MEM RAM, $M_KERNEL; data dir filesystem: $M_FS [$M_FSOPTS]; sluice git: $M_GIT."
  echo "Units: MB = 10^6 bytes (record payload for Sluice runs); latency = produce() to delivery report, ms."
  echo
  echo "| fio seq write MB/s (end fsync) | fio seq write MB/s (fdatasync / ${FIO_SYNC_EVERY} MiB) | iperf3 loopback Gbit/s | produce MB/s (acks=-1, flat-out) | produce % of fio (end fsync / fdatasync) | consume MB/s (warm cache) | steady ${STEADY_MBPS} MB/s: achieved | p50 ms | p99 ms | p99.9 ms |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  echo "| $(fmt "$FIO_END" 0) | $(fmt "$FIO_SYNC" 0) | $(fmt "$IPERF_GBPS" 1) | $(fmt "$P_MBPS" 1) | $(pct "$P_MBPS" "$FIO_END") / $(pct "$P_MBPS" "$FIO_SYNC") | $(fmt "$C_MBPS" 1) | $(fmt "$S_MBPS" 1) | $(fmt "$S_P50" 2) | $(fmt "$S_P99" 2) | $(fmt "$S_P999" 2) |"
  echo
  echo "Details:"
  echo "- fio: bs=1 MiB, size=$FIO_SIZE, buffered (direct=0), psync, one file on the data dir's filesystem; median of $FIO_REPEATS run(s)${FIO_END_RANGE:+, end-fsync range $FIO_END_RANGE}${FIO_SYNC_RANGE:+, fdatasync range $FIO_SYNC_RANGE} MB/s; runtime includes the final fsync."
  echo "- fio direct (O_DIRECT, the device without the page cache): median ${FIO_DIRECT:-n/a} MB/s${FIO_DIRECT_RANGE:+, range $FIO_DIRECT_RANGE}; produce is $(pct "$P_MBPS" "${FIO_DIRECT:-n/a}") of it."
  echo "- iperf3: 1 TCP stream over 127.0.0.1 for ${IPERF_SECS}s = $IPERF_GBPS Gbit/s (≈ $IPERF_MBS MB/s)."
  if [ "$ONLY_BASELINES" != 1 ]; then
    echo "- produce (flat-out): $(nz "$P_REC") of $RECORDS records x $RECORD_SIZE B over $PARTITIONS partitions, $(nz "$P_RPS") rec/s, $P_MBPS MB/s; latency p50/p99/p99.9 $(nz "$P_P50")/$(nz "$P_P99")/$(nz "$P_P999") ms (dominated by client-side queueing when flat-out); broker CPU ${P_CPU} s; data dir after: $DATA_SIZE."
    echo "- consume (warm cache): $(nz "$C_REC") records, $(nz "$C_RPS") rec/s, $C_MBPS MB/s; broker CPU ${C_CPU} s."
    echo "- broker fetch rate (sluice-fetchbench, walks batch headers only): $(nz "$F_MBPS") MB/s."
    echo "- steady ($PARTITIONS partitions, linger.ms=$STEADY_LINGER_MS): target $STEADY_MBPS MB/s for ${STEADY_SECS}s, achieved $S_MBPS MB/s; latency p50/p99/p99.9/max $(nz "$S_P50")/$(nz "$S_P99")/$(nz "$S_P999")/$(nz "$S_MAX") ms; broker CPU ${S_CPU} s."
    echo "- steady (1 partition, linger.ms=$STEADY_LINGER_MS): achieved $(nz "$S1_MBPS") MB/s; latency p50/p99/p99.9 $(nz "$S1_P50")/$(nz "$S1_P99")/$(nz "$S1_P999") ms."
    echo "- steady ($PARTITIONS partitions, paced in 1 ms steps): achieved $(nz "$SS_MBPS") MB/s; latency p50/p99/p99.9 $(nz "$SS_P50")/$(nz "$SS_P99")/$(nz "$SS_P999") ms."
    echo "- produce against fio O_DIRECT round by round ($PAIRS x $PAIR_RECORDS records after $PAIR_FIO_SIZE of fio; produce/fio MB/s: $(nz "$PAIR_LIST")): median ratio $(nz "$PAIR_MEDIAN")${PAIR_RANGE:+, range $PAIR_RANGE}."
  fi
  [ -n "$BROKER_NOTE" ] && echo "- note: $BROKER_NOTE."
  [ "$FAILED" = 1 ] && echo "- **some steps failed; see warnings above and the logs.**"
  echo
  echo "RESULT mode=bench fio_endfsync_mbps=$FIO_END fio_fdatasync_mbps=$FIO_SYNC fio_direct_mbps=${FIO_DIRECT:-n/a} iperf3_gbps=$IPERF_GBPS produce_mbps=$P_MBPS consume_mbps=$C_MBPS steady_mbps=$S_MBPS steady_p50_ms=$(nz "$S_P50") steady_p99_ms=$(nz "$S_P99") steady_p999_ms=$(nz "$S_P999") steady_steps_p99_ms=$(nz "$SS_P99") produce_direct_ratio=$(nz "$PAIR_MEDIAN") ok=$((1 - FAILED))"
} > "$SUMMARY"

echo >&2
cat "$SUMMARY"
exit "$FAILED"
