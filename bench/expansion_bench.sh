#!/usr/bin/env bash
# bench/expansion_bench.sh — expansion throughput and its cost to producers, for one SQL
# engine or several in one run.
#
# Starts one broker (`sluice serve --http --sql-engine E`) per engine of --engines, each
# on a scratch data dir of its own, all at once, and measures, with 10-field JSON values
# from `sluice-loadgen --value-json10` (about 236 bytes each):
#
#   1. backfill: BACKFILL_RECORDS events into a PARTITIONS-partition topic with no
#      expansion, then `sluice expansion create --backfill`; the time from the create
#      to state "running" with backfill done == total (polled every 100 ms) gives the
#      expansion rate in rows/s; repeated BACKFILL_REPEATS times over the same events
#      (the previous target dropped first);
#   2. flat-out produce, acks=all, for PRODUCE_SECS into a topic without an expansion
#      and into one with a live expansion (created before the run, no backfill):
#      records/s, MB/s, p50/p99/p99.9;
#   3. steady produce, acks=all, STEADY_RPS records/s for STEADY_SECS, linger.ms=1,
#      without and with an expansion: latency percentiles.
#   2 and 3 are repeated REPEATS times on fresh topics, the order of the two cases
#   alternating from one repeat to the next.
# With several engines every measurement takes turns between their brokers, the order
# reversed from one repeat to the next, and each starts only once every broker is quiet
# (a DuckDB checkpoint after a backfill must not run inside the next engine's turn): the
# machine may be noisy, so compare the engines by the ratios of one run. Besides wall
# time it counts the CPU seconds of the broker measured (its threads' schedstat), of the
# load generator and of everything else on the machine. It prints a summary with the
# ratios.
#
# Builds nothing: give the build dir (default build/) as the argument or BUILD_DIR.
# Everything binds to 127.0.0.1; the brokers are stopped and the scratch dir deleted on
# exit, Ctrl-C included. See docs/benchmarks.md ("Expansions").

set -u -o pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<USAGE
usage: bench/expansion_bench.sh [--quick] [--keep] [--no-flatten] [--engines LIST] [BUILD_DIR]

  BUILD_DIR       where sluice and bench/sluice-loadgen are [\$BUILD_DIR or $ROOT/build]
  --quick         small sizes, to smoke-test the script (~1 minute with two engines)
  --keep          keep the scratch dir (broker data, logs) at exit
  --no-flatten    keep the struct field as JSON text instead of flattening it
  --engines LIST  the SQL engines (sluice serve --sql-engine) to measure, comma-separated,
                  one broker each, taking turns [duckdb]; `sqlite` runs SLUICE_SQLITE's
                  broker (the SQLite engine was removed from Sluice on 2026-12-07)

environment (defaults in brackets):
  SLUICE, LOADGEN    binaries                  [BUILD_DIR/sluice, BUILD_DIR/bench/sluice-loadgen]
  SLUICE_SQLITE      the broker of engine sqlite: a build of Sluice from before the SQLite
                     engine's removal (e.g. commit 8d69d4b) [none: sqlite refused]
  BENCH_DIR          parent of the scratch dir [\${TMPDIR:-/tmp}]
  PARTITIONS         partitions of every topic [4]
  BACKFILL_RECORDS   events backfilled         [2000000]
  BACKFILL_REPEATS   backfills per engine      [2]
  BACKFILL_CAP_SECS  give up on a backfill after this long [300]
  PRODUCE_SECS       each flat-out produce run [10]
  STEADY_RPS         steady rate, records/s    [20000]
  STEADY_SECS        each steady run           [15]
  REPEATS            repeats of runs 2 and 3 (0: the backfill only) [2]
  LOADGEN_ARGS       extra args for every loadgen run [none]
  SERVE_ARGS         extra args for every broker [none]
USAGE
}

KEEP=0
QUICK=0
FLATTEN=1
ENGINES=duckdb
BUILD_DIR="${BUILD_DIR:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --keep) KEEP=1 ;;
    --no-flatten) FLATTEN=0 ;;
    --engines) [ $# -ge 2 ] || { usage >&2; exit 2; }; ENGINES="$2"; shift ;;
    --engines=*) ENGINES="${1#--engines=}" ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "expansion_bench.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) BUILD_DIR="$1" ;;
  esac
  shift
done
IFS=, read -ra ENG <<<"$ENGINES"
[ ${#ENG[@]} -gt 0 ] || { echo "expansion_bench.sh: --engines names no engine" >&2; exit 2; }
for e in "${ENG[@]}"; do
  case "$e" in sqlite|duckdb) ;; *) echo "expansion_bench.sh: unknown engine '$e' (sqlite or duckdb)" >&2; exit 2 ;; esac
done
if [ "$QUICK" = 1 ]; then
  : "${BACKFILL_RECORDS:=200000}" "${BACKFILL_REPEATS:=1}" "${PRODUCE_SECS:=3}" "${STEADY_SECS:=3}" "${REPEATS:=1}"
fi
: "${BUILD_DIR:=$ROOT/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$PWD/$BUILD_DIR" ;; esac
: "${SLUICE:=$BUILD_DIR/sluice}"
: "${LOADGEN:=$BUILD_DIR/bench/sluice-loadgen}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${PARTITIONS:=4}"
: "${BACKFILL_RECORDS:=2000000}"
: "${BACKFILL_REPEATS:=2}"
: "${BACKFILL_CAP_SECS:=300}"
: "${PRODUCE_SECS:=10}"
: "${STEADY_RPS:=20000}"
: "${STEADY_SECS:=15}"
: "${REPEATS:=2}"
: "${LOADGEN_ARGS:=}"
: "${SERVE_ARGS:=}"
[ "$BACKFILL_REPEATS" -ge 1 ] 2>/dev/null || { echo "expansion_bench.sh: BACKFILL_REPEATS must be 1 or more" >&2; exit 2; }

[ -n "${EPOCHREALTIME:-}" ] || { echo "expansion_bench.sh: needs bash 5 (EPOCHREALTIME)" >&2; exit 2; }
# The broker binary of an engine: this build's, or for sqlite an older build's.
serve_bin() { if [ "$1" = sqlite ]; then echo "$SLUICE_SQLITE"; else echo "$SLUICE"; fi; }
if [[ ",$ENGINES," == *,sqlite,* ]]; then
  [ -n "${SLUICE_SQLITE:-}" ] || { echo "expansion_bench.sh: engine sqlite needs SLUICE_SQLITE, a build of Sluice from before the SQLite engine was removed (2026-12-07), e.g. git worktree add /tmp/s 8d69d4b && (cd /tmp/s && cmake --preset release && cmake --build build -j2 --target sluice)" >&2; exit 2; }
  [ -x "$SLUICE_SQLITE" ] || { echo "expansion_bench.sh: SLUICE_SQLITE=$SLUICE_SQLITE is not executable" >&2; exit 2; }
fi
for b in "$SLUICE" "$LOADGEN"; do
  [ -x "$b" ] || { echo "expansion_bench.sh: $b is missing (build it, or give BUILD_DIR / SLUICE / LOADGEN)" >&2; exit 2; }
done
if ! "$LOADGEN" --help | grep -q -- --value-json10; then
  echo "expansion_bench.sh: $LOADGEN has no --value-json10; rebuild sluice-loadgen" >&2
  exit 2
fi

mkdir -p "$BENCH_DIR" || exit 2
WORK="$(mktemp -d "$BENCH_DIR/sluice-expbench.XXXXXX")" || { echo "expansion_bench.sh: mktemp failed" >&2; exit 2; }
LOGS="$WORK/logs"
mkdir -p "$LOGS"
BENCH_NAME=expansion_bench.sh
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------

echo "machine: $(nproc) x ${M_CPU:-?}, $M_MEM, $(uname -r); data dir on $M_FS; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "sluice: $SLUICE (build type ${M_BUILD:-unknown}), git $M_GIT; engines: ${ENG[*]}${SLUICE_SQLITE:+; sqlite served by $SLUICE_SQLITE}" >&2
case "$M_BUILD" in Release|RelWithDebInfo) ;; *) echo "expansion_bench.sh: note: not a release build" >&2 ;; esac

# ---------------------------------------------------------------------------
# Brokers: one per engine. E, PID, ADDR and HTTP name the one being measured (use_engine).
# ---------------------------------------------------------------------------

PIDS=() ADDRS=() HTTPS=()
stop_brokers() { for p in "${PIDS[@]}"; do stop_pid "$p"; done; }
CLEANUP_HOOK=stop_brokers
launcher=()
command -v stdbuf >/dev/null 2>&1 && launcher=(stdbuf -oL -eL)
for i in "${!ENG[@]}"; do
  e="${ENG[$i]}"
  mkdir -p "$WORK/data-$e"
  # shellcheck disable=SC2086 # SERVE_ARGS is deliberately word-split
  "${launcher[@]}" "$(serve_bin "$e")" serve --data-dir "$WORK/data-$e" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
    --sql-engine "$e" $SERVE_ARGS > "$LOGS/sluice-$e.log" 2>&1 &
  PIDS[i]=$!
done
for i in "${!ENG[@]}"; do
  e="${ENG[$i]}" a="" h=""
  for _ in $(seq 1 300); do
    a="$(sed -n 's/^listening kafka //p' "$LOGS/sluice-$e.log" | head -1)"
    h="$(sed -n 's/^listening http //p' "$LOGS/sluice-$e.log" | head -1)"
    [ -n "$a" ] && [ -n "$h" ] && break
    kill -0 "${PIDS[$i]}" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$a" ] || [ -z "$h" ]; then
    echo "expansion_bench.sh: the $e broker did not start; log tail:" >&2
    tail -20 "$LOGS/sluice-$e.log" >&2
    exit 1
  fi
  ADDRS[i]="$a" HTTPS[i]="$h"
  echo "broker ($e) pid ${PIDS[$i]}: kafka $a, http $h" >&2
done

use_engine() {  # use_engine INDEX
  E="${ENG[$1]}" PID="${PIDS[$1]}" ADDR="${ADDRS[$1]}" HTTP="${HTTPS[$1]}"
}
# The engines' indexes in repeat R's order: as given, reversed on even repeats.
engine_order() {
  local r="$1" i
  if [ $((r % 2)) = 1 ]; then printf '%s\n' "${!ENG[@]}"; else for ((i = ${#ENG[@]} - 1; i >= 0; i--)); do echo "$i"; done; fi
}

broker_alive() {
  kill -0 "$PID" 2>/dev/null && return 0
  echo "expansion_bench.sh: the $E broker exited; log tail:" >&2
  tail -20 "$LOGS/sluice-$E.log" >&2
  exit 1
}

# all_quiet: waits (up to 60 s) until no broker used more than 2% of a core over half a
# second, so that one engine's background work (DuckDB's checkpoints) stays out of the
# next measurement. quiet_cpu PID: the same for one broker; prints its CPU seconds then.
quiet_pid() {
  local pid="$1" a b
  for _ in $(seq 1 120); do
    a="$(cpu_secs "$pid")"
    sleep 0.5
    b="$(cpu_secs "$pid")"
    [ "$(calc "print ($b - $a < 0.01) ? 1 : 0")" = 1 ] && { echo "$b"; return 0; }
  done
  echo "$b"
  return 1
}
all_quiet() { for p in "${PIDS[@]}"; do quiet_pid "$p" >/dev/null || warn "pid $p still busy after 60 s"; done; }

topic_create() {
  run_step "$LOGS/$E-topic-$1.log" timeout -k 5 60 "$SLUICE" topic create "$1" \
    --partitions "$PARTITIONS" --bootstrap "$ADDR" \
    || { cat "$LOGS/$E-topic-$1.log" >&2; echo "expansion_bench.sh: cannot create topic $1 ($E)" >&2; exit 1; }
}

# The schema of --value-json10's records: 10 fields, one a struct of 3.
SCHEMA="$WORK/json10.schema.json"
cat > "$SCHEMA" <<'JSON'
{"fields": [
  {"name": "id", "type": "int64"},
  {"name": "ts", "type": "timestamp_ms"},
  {"name": "user", "type": "string"},
  {"name": "amount", "type": "float64"},
  {"name": "qty", "type": "int64"},
  {"name": "active", "type": "bool"},
  {"name": "country", "type": "string"},
  {"name": "tags", "type": "json"},
  {"name": "address", "type": "struct", "fields": [
    {"name": "city", "type": "string"},
    {"name": "zip", "type": "int64"},
    {"name": "street", "type": "string"}]},
  {"name": "note", "type": "string"}
]}
JSON
FLATTEN_ARG=()
[ "$FLATTEN" = 1 ] && FLATTEN_ARG=(--flatten)

expansion_create() {  # expansion_create TOPIC TARGET [--backfill]
  run_step "$LOGS/$E-create-$2.log" timeout -k 5 60 "$SLUICE" expansion create --server "$HTTP" \
    --topic "$1" --target "$2" --schema "$SCHEMA" "${FLATTEN_ARG[@]}" "${@:3}" \
    || { cat "$LOGS/$E-create-$2.log" >&2; echo "expansion_bench.sh: cannot create expansion $2 ($E)" >&2; exit 1; }
}

# exp_field TARGET KEY: from the API's list, a number or word after "KEY": in TARGET's
# entry (for "backfill", "total" and "done" are looked up inside it).
exp_list() { timeout -k 2 10 "$SLUICE" expansion list --server "$HTTP" --json 2>/dev/null; }
exp_entry() { sed 's/{"target":/\n&/g' | grep -F "{\"target\":\"$1\""; }
num_after() { sed -n "s/.*\"$1\":\"\{0,1\}\([A-Za-z0-9_.-]*\).*/\1/p" | head -1; }
# http_get PATH: the body of GET http://$HTTP/PATH, with bash's /dev/tcp (no process).
http_get() {
  local fd line body="" in_body=0
  exec {fd}<>"/dev/tcp/${HTTP%:*}/${HTTP##*:}" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" "$HTTP" >&"$fd"
  while IFS= read -r line <&"$fd" || [ -n "$line" ]; do
    if [ "$in_body" = 1 ]; then body+="$line"; elif [ "$line" = $'\r' ] || [ -z "$line" ]; then in_body=1; fi
  done
  exec {fd}<&-
  printf '%s' "$body"
}
# A descriptor nothing is ever written to: `read -t` on it is a sleep without a process.
exec {NAP_FD}<> <(:)

loadgen() {  # loadgen LOGNAME TOPIC args...
  local name="$1" topic="$2"
  shift 2
  local timed=()
  [ ${#TIME_CMD[@]} -gt 0 ] && timed=("${TIME_CMD[@]}" "$LOGS/$name.log")
  # shellcheck disable=SC2086 # LOADGEN_ARGS is deliberately word-split
  run_step "$LOGS/$name.log" timeout -s INT -k 30 600 "${timed[@]}" "$LOADGEN" --bootstrap "$ADDR" \
    --topic "$topic" --mode produce --acks -1 --value-json10 "$@" $LOADGEN_ARGS
}

# ---------------------------------------------------------------------------
# 1. Backfill
# ---------------------------------------------------------------------------

log "1. backfill: $BACKFILL_RECORDS JSON events, $PARTITIONS partitions, then create --backfill, x$BACKFILL_REPEATS per engine"
FILL_SIZE=""
for i in "${!ENG[@]}"; do
  use_engine "$i"
  topic_create bf
  loadgen "$E-bf-fill" bf --records "$BACKFILL_RECORDS" \
    || warn "filling the topic failed ($E): $(tail -3 "$LOGS/$E-bf-fill.log")"
  FILL_SIZE="$(result_field "$LOGS/$E-bf-fill.log" record_size)"
  echo "  filled ($E): $(result_field "$LOGS/$E-bf-fill.log" records) records of $FILL_SIZE B on average, $(result_field "$LOGS/$E-bf-fill.log" rps) records/s" >&2
  broker_alive
done
sync

# The broker's own view of backfill TARGET, without the polling: from its log line for
# the create ("expanding topic") to "backfill done" (timestamps to the millisecond).
log_secs() { sed -n "s/^[0-9-]*T\([0-9:.]*\)Z .*$1: $2.*/\1/p" "$LOGS/sluice-$E.log" | head -1 \
  | awk -F: '{ print $1 * 3600 + $2 * 60 + $3 }'; }

# backfill TARGET: one backfill of topic bf into TARGET on engine E; appends "E rps
# log_rps secs cpu_to_done cpu_to_quiet other" to $LOGS/backfill.rows.
backfill() {
  local target="$1" c0 c1 cq b0 b1 t0 t1="" t entry state="" done=0 total=0 polls=0 cap_at
  c0="$(cpu_secs "$PID")" b0="$(sys_busy)"
  t0="$EPOCHREALTIME"
  expansion_create bf "$target" --backfill
  # Polled with shell builtins only: on this kind of VM a process start costs several ms
  # of CPU, and a poll made of `sluice expansion list` and a few seds took a sizeable
  # share of a core away from the expander.
  cap_at=$(( ${EPOCHREALTIME%.*} + BACKFILL_CAP_SECS ))
  while :; do
    entry="$(http_get "/v1/expansions/$target")"
    t="$EPOCHREALTIME"
    polls=$((polls + 1))
    [[ $entry =~ \"state\":\"([a-z]+)\" ]] && state="${BASH_REMATCH[1]}"
    [[ $entry =~ \"backfill\":\{\"total\":([0-9]+),\"done\":([0-9]+)\} ]] \
      && total="${BASH_REMATCH[1]}" done="${BASH_REMATCH[2]}"
    if [ "$state" = running ] && [ "$done" = "$total" ]; then t1="$t"; break; fi
    if [ "$state" = failed ]; then warn "backfill failed ($E): $entry"; break; fi
    if [ "${t%.*}" -ge "$cap_at" ]; then warn "backfill not done after ${BACKFILL_CAP_SECS}s ($E: $done/$total)"; break; fi
    kill -0 "$PID" 2>/dev/null || broker_alive
    read -r -t 0.1 -u "$NAP_FD"  # sleeps 100 ms without starting a process
  done
  c1="$(cpu_secs "$PID")" b1="$(sys_busy)"
  # What the backfill left the broker to do (DuckDB's checkpoint of the rows) is its cost too.
  cq="$(quiet_pid "$PID")"
  [ -n "$t1" ] || { echo "$E n/a n/a n/a n/a n/a n/a" >> "$LOGS/backfill.rows"; return; }
  local secs rps cpu other l0 l1 log_rps="n/a"
  secs="$(calc "printf \"%.2f\", $t1 - $t0")"
  rps="$(calc "printf \"%.0f\", $total / ($t1 - $t0)")"
  cpu="$(calc "printf \"%.2f\", $c1 - $c0")"
  # Everything else the machine ran meanwhile (the status polls included): other
  # sessions' work here means the figure is for a shared machine.
  other="$(calc "printf \"%.1f\", $b1 - $b0 - ($c1 - $c0)")"
  l0="$(log_secs "$target" "expanding topic")" l1="$(log_secs "$target" "backfill done")"
  [ -n "$l0" ] && [ -n "$l1" ] \
    && log_rps="$(calc "d = $l1 - $l0; if (d < 0) d += 86400; printf \"%.0f\", $total / d")"
  echo "$E $rps $log_rps $secs $cpu $(calc "printf \"%.2f\", $cq - $c0") $other" >> "$LOGS/backfill.rows"
  echo "  backfill ($E): $done of $total rows in $secs s ($polls polls) = $rps rows/s ($log_rps by the broker's log); broker CPU $cpu s to done ($(calc "printf \"%.0f\", $total / $cpu") rows per CPU-second), $(calc "printf \"%.2f\", $cq - $c0") s until quiet; other CPU on the machine $other s" >&2
  # Every row there, and every field typed as the schema says.
  local check
  check="$(timeout -k 2 60 "$SLUICE" sql --server "$HTTP" -f csv \
    "SELECT count(*), sum(_missing_fields), sum(_excess_fields), sum(_type_errors), sum(_parse_error) FROM $target" 2>&1 | tr -d '\r' | tail -1)"
  echo "  target check (rows, missing, excess, type errors, parse errors): $check" >&2
  [ "$check" = "$BACKFILL_RECORDS,0,0,0,0" ] || warn "target check ($E): expected $BACKFILL_RECORDS,0,0,0,0, got '$check'"
  broker_alive
}

: > "$LOGS/backfill.rows"
for r in $(seq 1 "$BACKFILL_REPEATS"); do
  for i in $(engine_order "$r"); do
    use_engine "$i"
    all_quiet
    backfill "bench.bf$r"
    run_step "$LOGS/$E-drop-bf$r.log" timeout -k 5 60 "$SLUICE" expansion drop "bench.bf$r" --drop-target \
      --server "$HTTP" || warn "dropping bench.bf$r ($E) failed: $(tail -3 "$LOGS/$E-drop-bf$r.log")"
  done
done

# ---------------------------------------------------------------------------
# 2. and 3. Produce with and without an expansion
# ---------------------------------------------------------------------------

# One run: run_case KIND(plain|exp) LOGNAME TOPIC loadgen-args...; appends
# "ENGINE KIND rps mbps p50 p99 p999 max cpu loadgen-cpu other-cpu" to $LOGS/LOGNAME.rows.
run_case() {
  local kind="$1" name="$2" topic="$3" c0 c1 b0 b1 entry rows lag delivered
  shift 3
  topic_create "$topic"
  [ "$kind" = exp ] && expansion_create "$topic" "bench.$topic"
  sync
  all_quiet
  c0="$(cpu_secs "$PID")" b0="$(sys_busy)"
  loadgen "$E-$name-$topic" "$topic" "$@" || warn "$name into $topic ($E) failed: $(tail -3 "$LOGS/$E-$name-$topic.log")"
  c1="$(cpu_secs "$PID")" b1="$(sys_busy)"
  local f="$LOGS/$E-$name-$topic.log" lg other
  lg="$(awk '/^LOADGEN_CPU / { print $2 + $3 }' "$f" | tail -1)"
  other="n/a"
  [ -n "$lg" ] && other="$(calc "printf \"%.1f\", $b1 - $b0 - ($c1 - $c0) - $lg")"
  delivered="$(result_field "$f" records)"
  if [ "$kind" = exp ]; then
    # Producers are answered once their rows are committed: nothing may lag now.
    entry="$(exp_list | exp_entry "bench.$topic")"
    rows="$(num_after rows_written <<<"$entry")"
    lag="$(num_after lag <<<"$entry")"
    if [ "$lag" != 0 ] || [ "${rows:-0}" -lt "${delivered:-0}" ]; then
      warn "bench.$topic ($E): rows_written $rows, lag $lag after $delivered acknowledged records"
    fi
  fi
  printf '%s %s %s %s %s %s %s %s %s %s %s\n' "$E" "$kind" "$(result_field "$f" rps)" "$(result_field "$f" mbps)" \
    "$(result_field "$f" p50_ms)" "$(result_field "$f" p99_ms)" "$(result_field "$f" p999_ms)" \
    "$(result_field "$f" max_ms)" "$(calc "printf \"%.1f\", $c1 - $c0")" "${lg:-n/a}" "$other" >> "$LOGS/$name.rows"
  printf '  %-6s %-5s %-6s %9s rec/s %7s MB/s  p50 %8s  p99 %8s  p99.9 %8s ms  CPU s: broker %s, loadgen %s, other %s\n' \
    "$E" "$kind" "$topic" "$(result_field "$f" rps)" "$(result_field "$f" mbps)" "$(result_field "$f" p50_ms)" \
    "$(result_field "$f" p99_ms)" "$(result_field "$f" p999_ms)" "$(calc "printf \"%.1f\", $c1 - $c0")" \
    "${lg:-n/a}" "$other" >&2
  broker_alive
}

# each_case NAME R loadgen-args...: repeat R's runs of every engine, plain and exp.
each_case() {
  local name="$1" r="$2" i kind order
  shift 2
  order="plain exp"; [ $((r % 2)) = 0 ] && order="exp plain"
  for i in $(engine_order "$r"); do
    use_engine "$i"
    for kind in $order; do run_case "$kind" "$name" "${name:0:1}${kind:0:1}$r" "$@"; done
  done
}

: > "$LOGS/flat.rows"
: > "$LOGS/steady.rows"
log "2. flat-out produce, acks=all, ${PRODUCE_SECS}s per run, without / with a live expansion, x$REPEATS"
for r in $(seq 1 "$REPEATS"); do
  each_case flat "$r" --records 1000000000 --duration-s "$PRODUCE_SECS"
done

log "3. steady produce, acks=all, $STEADY_RPS records/s, linger.ms=1, ${STEADY_SECS}s per run, without / with, x$REPEATS"
for r in $(seq 1 "$REPEATS"); do
  each_case steady "$r" --records 1000000000 --duration-s "$STEADY_SECS" --rate-rps "$STEADY_RPS" --linger-ms 1
done

# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

# col FILE ENGINE KIND N: the Nth column (3 = rps ... 9 = broker CPU, 10 = loadgen CPU,
# 11 = other CPU) of ENGINE's KIND runs, " / "-joined; mean: their mean. For
# backfill.rows KIND is ignored and N counts from 2 (rps).
col() { awk -v e="$2" -v k="$3" -v n="$4" '$1 == e && ($2 == k || k == "") { s = s (s == "" ? "" : " / ") $n } END { print s }' "$1"; }
mean() { awk -v e="$2" -v k="$3" -v n="$4" '$1 == e && ($2 == k || k == "") && $n != "n/a" { s += $n; c++ } END { if (c) printf "%.3f", s / c; else print "n/a" }' "$1"; }
ratio() { calc "if (\"$1\" == \"n/a\" || \"$2\" == \"n/a\" || $2 + 0 == 0) print \"n/a\"; else printf \"%.2f\", $1 / $2"; }

B="$LOGS/backfill.rows" F="$LOGS/flat.rows" S="$LOGS/steady.rows"
N_ENG=${#ENG[@]}
# md_row LABEL CELL...: one markdown table row.
md_row() { local s="|" c; for c in "$@"; do s+=" $c |"; done; echo "$s"; }
# engine_cols FILE KIND N: ENGINE's figures per engine, then each engine's mean over the
# first's (the cross-engine ratios).
engine_cols() {
  local cells=() i
  for i in "${!ENG[@]}"; do cells+=("$(col "$1" "${ENG[$i]}" "$2" "$3")"); done
  for ((i = 1; i < N_ENG; i++)); do
    cells+=("**$(ratio "$(mean "$1" "${ENG[$i]}" "$2" "$3")" "$(mean "$1" "${ENG[0]}" "$2" "$3")")**")
  done
  printf '%s\n' "${cells[@]}"
}
header() {  # header LABEL SUFFIX...: engines' columns then the ratio columns
  local label="$1" cells=() i
  for i in "${!ENG[@]}"; do cells+=("${ENG[$i]}"); done
  for ((i = 1; i < N_ENG; i++)); do cells+=("${ENG[$i]} / ${ENG[0]} (means)"); done
  md_row "$label" "${cells[@]}"
  local seps=("---")
  for _ in "${cells[@]}"; do seps+=("---:"); done
  md_row "${seps[@]}"
}
brow() { local label="$1"; shift; mapfile -t cells < <(engine_cols "$B" "" "$1"); md_row "$label" "${cells[@]}"; }

# Per engine: the ratios with / without expansion.
ratio_cells() {  # ratio_cells FILE N: exp / plain per engine
  local i
  for i in "${!ENG[@]}"; do echo "$(ratio "$(mean "$1" "${ENG[$i]}" exp "$2")" "$(mean "$1" "${ENG[$i]}" plain "$2")")"; done
}
# Produce tables: a column per engine and case.
pcols() {  # pcols FILE N
  local i k
  for i in "${!ENG[@]}"; do for k in plain exp; do col "$1" "${ENG[$i]}" "$k" "$2"; done; done
}
pheader() {
  local cells=("$1") seps=("---") i
  for i in "${!ENG[@]}"; do cells+=("${ENG[$i]} without" "${ENG[$i]} with"); seps+=("---:" "---:"); done
  md_row "${cells[@]}"
  md_row "${seps[@]}"
}
prow() { local label="$1" f="$2" n="$3"; mapfile -t cells < <(pcols "$f" "$n"); md_row "$label" "${cells[@]}"; }

{
cat <<MD

## Expansions benchmark — $M_DATE

Machine: $(nproc) x ${M_CPU:-?}, $M_MEM, $(uname -r); data dir: $M_FS; sluice git $M_GIT, build type ${M_BUILD:-unknown}.
Load average (1, 5, 15 min) at the start: $M_LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure).
Engines: ${ENG[*]} (\`sluice serve --sql-engine E\`, one broker each, taking turns, the order reversed every repeat).
Records: \`sluice-loadgen --value-json10\`, $FILL_SIZE B on average, $PARTITIONS partitions, acks=all.
Expansion: 10 fields (int64 x2, timestamp_ms, float64, string x3, bool, json, struct of 3$([ "$FLATTEN" = 1 ] && echo ", flattened" || echo " kept as JSON")).

MD
header "backfill of $BACKFILL_RECORDS events, per repeat"
brow "rows/s, create to done, polled" 2
brow "rows/s by the broker's log lines (no polling delay)" 3
brow "seconds, create to done" 4
brow "broker CPU s to done" 5
brow "broker CPU s until quiet (what followed, e.g. a checkpoint, included)" 6
brow "CPU s of anything else on the machine meanwhile" 7
echo
pheader "flat-out, ${PRODUCE_SECS}s, per run"
prow "records/s" "$F" 3
prow "MB/s" "$F" 4
prow "p50 ms" "$F" 5
prow "p99 ms" "$F" 6
prow "p99.9 ms" "$F" 7
prow "CPU s: broker" "$F" 9
prow "CPU s: loadgen" "$F" 10
prow "CPU s: anything else on the machine" "$F" 11
echo
pheader "steady $STEADY_RPS records/s, ${STEADY_SECS}s, linger.ms=1, per run"
prow "achieved records/s" "$S" 3
prow "p50 ms" "$S" 5
prow "p99 ms" "$S" 6
prow "p99.9 ms" "$S" 7
prow "max ms" "$S" 8
prow "CPU s: broker" "$S" 9
prow "CPU s: loadgen" "$S" 10
prow "CPU s: anything else on the machine" "$S" 11
echo
cells=("with / without expansion (means)") seps=("---")
for e in "${ENG[@]}"; do cells+=("$e"); seps+=("---:"); done
md_row "${cells[@]}"; md_row "${seps[@]}"
mapfile -t c < <(ratio_cells "$F" 3); md_row "flat-out records/s (target >= 0.5)" "${c[@]}"
mapfile -t c < <(ratio_cells "$F" 6); md_row "flat-out p99" "${c[@]}"
mapfile -t c < <(ratio_cells "$S" 6); md_row "steady p99" "${c[@]}"
echo
for e in "${ENG[@]}"; do
  bf="$(mean "$B" "$e" "" 2)"
  echo "RESULT mode=expansion engine=$e backfill_rows=$BACKFILL_RECORDS backfill_rps=$bf backfill_log_rps=$(mean "$B" "$e" "" 3) backfill_cpu_s=$(mean "$B" "$e" "" 5) backfill_cpu_quiet_s=$(mean "$B" "$e" "" 6) flat_plain_rps=$(mean "$F" "$e" plain 3) flat_exp_rps=$(mean "$F" "$e" exp 3) flat_ratio=$(ratio "$(mean "$F" "$e" exp 3)" "$(mean "$F" "$e" plain 3)") steady_plain_p99_ms=$(mean "$S" "$e" plain 6) steady_exp_p99_ms=$(mean "$S" "$e" exp 6) steady_plain_p999_ms=$(mean "$S" "$e" plain 7) steady_exp_p999_ms=$(mean "$S" "$e" exp 7) ok=$((1 - FAILED))"
done
}
stop_brokers
PIDS=()
exit "$FAILED"
