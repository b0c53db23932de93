# bench/lib.sh — what the benchmark scripts share: the scratch dir's clean-up on exit
# and Ctrl-C, stepping through runs, reading loadgen's RESULT lines, CPU accounting and
# the facts about the machine. Sourced after the script has set BENCH_NAME (its name in
# messages), ROOT, BUILD_DIR, WORK (the scratch dir, removed on exit unless KEEP=1).
# shellcheck shell=bash
# shellcheck disable=SC2034 # FAILED, TIME_CMD and the M_* facts are read by the scripts

BROKER_PID=""
STEP_PID=""
FAILED=0

stop_pid() {  # TERM, wait up to 10 s, then KILL
  local pid="$1"
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$BENCH_NAME: pid $pid ignored SIGTERM; sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  return 0
}

# shellcheck disable=SC2317 # invoked via trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$STEP_PID"
  stop_pid "$BROKER_PID"
  [ -n "${CLEANUP_HOOK:-}" ] && "$CLEANUP_HOOK"
  if [ "$KEEP" = 1 ]; then
    echo "$BENCH_NAME: scratch dir kept at $WORK" >&2
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "$BENCH_NAME: interrupted" >&2; exit 130' INT
trap 'echo "$BENCH_NAME: terminated" >&2; exit 143' TERM

# start_sluice LOG ARGS...: starts `$SLUICE serve ARGS` with its output to LOG and waits
# up to 30 s for its Kafka listener; sets BROKER_PID and ADDR (HOST:PORT). Returns 1,
# with the log's tail on stderr, when the broker did not start.
start_sluice() {
  local out="$1"
  shift
  "$SLUICE" serve "$@" > "$out" 2>&1 &
  BROKER_PID=$!
  ADDR=""
  for _ in $(seq 1 1500); do
    ADDR="$(sed -n 's/^listening kafka \(PLAINTEXT:\/\/\)\{0,1\}\([0-9.]*:[0-9]*\)$/\2/p' "$out" | head -1)"
    [ -n "$ADDR" ] && return 0
    kill -0 "$BROKER_PID" 2>/dev/null || break
    sleep 0.02
  done
  tail -20 "$out" >&2
  return 1
}

log() { printf '\n### %s\n' "$*" >&2; }
# produce_figures OUT ARGS...: one flat-out acks=all produce run of `$LOADGEN` (extra
# ARGS after the common ones) into the topic given in ARGS, output to OUT; prints
# "rps mbps p50 p99 cpu", cpu being the broker's CPU seconds per GB of payload over the
# run. Uses ADDR, BROKER_PID, PRODUCE_SECS, RECORD_SIZE and LOADGEN_ARGS.
produce_figures() {
  local out="$1" c0 cpu mbps elapsed
  shift
  c0="$(cpu_secs "$BROKER_PID")"
  # shellcheck disable=SC2086 # LOADGEN_ARGS is word-split on purpose
  run_step "$out" timeout -k 5 $((PRODUCE_SECS + 120)) "$LOADGEN" --bootstrap "$ADDR" \
    --mode produce --acks -1 --records 100000000 --duration-s "$PRODUCE_SECS" \
    --record-size "$RECORD_SIZE" "$@" ${LOADGEN_ARGS:-} || { tail -5 "$out" >&2; return 1; }
  cpu="$(calc "print $(cpu_secs "$BROKER_PID") - $c0")"
  mbps="$(result_field "$out" mbps)" elapsed="$(result_field "$out" elapsed_s)"
  echo "$(result_field "$out" rps) $mbps $(result_field "$out" p50_ms) $(result_field "$out" p99_ms)" \
    "$(calc "printf \"%.3f\", $cpu / ($mbps * $elapsed / 1000)")"
}

# median: the median of the numbers on stdin, one a line. median_col I ROW...: the median
# of the I-th field of each ROW (space-separated figures of one run each).
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
median_col() { local i="$1"; shift; printf '%s\n' "$@" | awk -v i="$i" '{ print $i }' | median; }
warn() { printf '%s: WARNING: %s\n' "$BENCH_NAME" "$*" >&2; FAILED=1; }
calc() { awk "BEGIN { $1 }"; }

# run_step OUT cmd...: runs cmd with output to OUT, waiting with `wait` so that the
# traps run at once on Ctrl-C. Returns cmd's status.
run_step() {
  local out="$1" rc
  shift
  "$@" > "$out" 2>&1 &
  STEP_PID=$!
  wait "$STEP_PID"
  rc=$?
  STEP_PID=""
  return "$rc"
}

# result_field FILE KEY [DEFAULT]: the value of KEY in the last "RESULT ..." line of
# FILE, or DEFAULT (empty unless given) when there is none.
result_field() {
  awk -v k="$2" -v d="${3:-}" '/^RESULT /{line=$0} END { n = split(line, f, " "); for (i = 2; i <= n; i++) { split(f[i], kv, "="); if (kv[1] == k) { print kv[2]; exit } } print d }' "$1"
}

HZ="$(getconf CLK_TCK)"
# CPU seconds of PID so far: the on-CPU nanoseconds of its threads (schedstat) when the
# kernel has them, as /proc/PID/stat counts in clock ticks (10 ms, too coarse for a
# broker that serves a plaintext fetch with almost no CPU); else user+sys from stat.
cpu_secs() {
  if [ -r "/proc/$1/task/$1/schedstat" ]; then
    cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.3f\n", s / 1e9 }'
    return
  fi
  [ -r "/proc/$1/stat" ] || { echo 0; return; }
  awk -v hz="$HZ" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}
# CPU seconds the whole machine has been busy (user, nice, system, irq, softirq, steal).
sys_busy() { awk -v hz="$HZ" 'NR == 1 { print ($2 + $3 + $4 + $7 + $8 + $9) / hz; exit }' /proc/stat; }
# The loadgen's own CPU seconds, when /usr/bin/time is there to measure them.
TIME_CMD=()
[ -x /usr/bin/time ] && TIME_CMD=(/usr/bin/time -f "LOADGEN_CPU %U %S" -a -o)

# Facts about the machine and the build, for the summaries.
M_DATE="$(date -u '+%Y-%m-%d %H:%M UTC')"
M_CPU="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
M_MEM="$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
M_FS="$(df -PT "$WORK" | awk 'NR == 2 { print $2 " on " $1 }')"
M_GIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo none)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty')"
M_LOAD0="$(cut -d' ' -f1-3 /proc/loadavg)"
M_BUILD="$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null)"
