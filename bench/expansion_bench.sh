#!/usr/bin/env bash
# bench/expansion_bench.sh — expansion throughput and its cost to producers.
#
# Starts one broker (`sluice serve --http`) on a scratch data dir and measures, with
# 10-field JSON values from `sluice-loadgen --value-json10` (about 236 bytes each):
#
#   1. backfill: BACKFILL_RECORDS events into a PARTITIONS-partition topic with no
#      expansion, then `sluice expansion create --backfill`; the time from the create
#      to state "running" with backfill done == total (polled every 100 ms) gives the
#      expansion rate in rows/s;
#   2. flat-out produce, acks=all, for PRODUCE_SECS into a topic without an expansion
#      and into one with a live expansion (created before the run, no backfill):
#      records/s, MB/s, p50/p99/p99.9;
#   3. steady produce, acks=all, STEADY_RPS records/s for STEADY_SECS, linger.ms=1,
#      without and with an expansion: latency percentiles.
#   2 and 3 are repeated REPEATS times on fresh topics, the order of the two cases
#   alternating from one repeat to the next. It prints a summary with the ratios.
#
# Builds nothing: give the build dir (default build/) as the argument or BUILD_DIR.
# Everything binds to 127.0.0.1; the broker is stopped and the scratch dir deleted on
# exit, Ctrl-C included. See docs/benchmarks.md ("Expansions").

set -u -o pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
  cat <<EOF
usage: bench/expansion_bench.sh [--quick] [--keep] [--no-flatten] [BUILD_DIR]

  BUILD_DIR     where sluice and bench/sluice-loadgen are [\$BUILD_DIR or $ROOT/build]
  --quick       small sizes, to smoke-test the script (~40 s)
  --keep        keep the scratch dir (broker data, logs) at exit
  --no-flatten  keep the struct field as JSON text instead of flattening it

environment (defaults in brackets):
  SLUICE, LOADGEN    binaries                  [BUILD_DIR/sluice, BUILD_DIR/bench/sluice-loadgen]
  BENCH_DIR          parent of the scratch dir [\${TMPDIR:-/tmp}]
  PARTITIONS         partitions of every topic [4]
  BACKFILL_RECORDS   events backfilled         [2000000]
  BACKFILL_CAP_SECS  give up on the backfill after this long [300]
  PRODUCE_SECS       each flat-out produce run [10]
  STEADY_RPS         steady rate, records/s    [20000]
  STEADY_SECS        each steady run           [15]
  REPEATS            repeats of runs 2 and 3 (0: the backfill only) [2]
  LOADGEN_ARGS       extra args for every loadgen run [none]
EOF
}

KEEP=0
QUICK=0
FLATTEN=1
BUILD_DIR="${BUILD_DIR:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1 ;;
    --keep) KEEP=1 ;;
    --no-flatten) FLATTEN=0 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "expansion_bench.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *) BUILD_DIR="$1" ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then
  : "${BACKFILL_RECORDS:=200000}" "${PRODUCE_SECS:=3}" "${STEADY_SECS:=3}" "${REPEATS:=1}"
fi
: "${BUILD_DIR:=$ROOT/build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$PWD/$BUILD_DIR" ;; esac
: "${SLUICE:=$BUILD_DIR/sluice}"
: "${LOADGEN:=$BUILD_DIR/bench/sluice-loadgen}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${PARTITIONS:=4}"
: "${BACKFILL_RECORDS:=2000000}"
: "${BACKFILL_CAP_SECS:=300}"
: "${PRODUCE_SECS:=10}"
: "${STEADY_RPS:=20000}"
: "${STEADY_SECS:=15}"
: "${REPEATS:=2}"
: "${LOADGEN_ARGS:=}"

[ -n "${EPOCHREALTIME:-}" ] || { echo "expansion_bench.sh: needs bash 5 (EPOCHREALTIME)" >&2; exit 2; }
for b in "$SLUICE" "$LOADGEN"; do
  [ -x "$b" ] || { echo "expansion_bench.sh: $b is missing (build it, or give BUILD_DIR / SLUICE / LOADGEN)" >&2; exit 2; }
done
if ! "$LOADGEN" --help | grep -q -- --value-json10; then
  echo "expansion_bench.sh: $LOADGEN has no --value-json10; rebuild sluice-loadgen" >&2
  exit 2
fi

mkdir -p "$BENCH_DIR" || exit 2
WORK="$(mktemp -d "$BENCH_DIR/sluice-expbench.XXXXXX")" || { echo "expansion_bench.sh: mktemp failed" >&2; exit 2; }
DATA_DIR="$WORK/data"
LOGS="$WORK/logs"
mkdir -p "$DATA_DIR" "$LOGS"
BENCH_NAME=expansion_bench.sh
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

# ---------------------------------------------------------------------------
# Machine
# ---------------------------------------------------------------------------

echo "machine: $(nproc) x ${M_CPU:-?}, $M_MEM, $(uname -r); data dir on $M_FS; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "sluice: $SLUICE (build type ${M_BUILD:-unknown}), git $M_GIT" >&2
case "$M_BUILD" in Release|RelWithDebInfo) ;; *) echo "expansion_bench.sh: note: not a release build" >&2 ;; esac

# ---------------------------------------------------------------------------
# Broker
# ---------------------------------------------------------------------------

launcher=()
command -v stdbuf >/dev/null 2>&1 && launcher=(stdbuf -oL -eL)
"${launcher[@]}" "$SLUICE" serve --data-dir "$DATA_DIR" --listen 127.0.0.1:0 --http 127.0.0.1:0 \
  > "$LOGS/sluice.log" 2>&1 &
BROKER_PID=$!
ADDR="" HTTP=""
for _ in $(seq 1 300); do
  ADDR="$(sed -n 's/^listening kafka //p' "$LOGS/sluice.log" | head -1)"
  HTTP="$(sed -n 's/^listening http //p' "$LOGS/sluice.log" | head -1)"
  [ -n "$ADDR" ] && [ -n "$HTTP" ] && break
  kill -0 "$BROKER_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$ADDR" ] || [ -z "$HTTP" ]; then
  echo "expansion_bench.sh: broker did not start; log tail:" >&2
  tail -20 "$LOGS/sluice.log" >&2
  exit 1
fi
echo "broker pid $BROKER_PID: kafka $ADDR, http $HTTP" >&2

broker_alive() {
  kill -0 "$BROKER_PID" 2>/dev/null && return 0
  echo "expansion_bench.sh: the broker exited; log tail:" >&2
  tail -20 "$LOGS/sluice.log" >&2
  exit 1
}

topic_create() {
  run_step "$LOGS/topic-$1.log" timeout -k 5 60 "$SLUICE" topic create "$1" \
    --partitions "$PARTITIONS" --bootstrap "$ADDR" \
    || { cat "$LOGS/topic-$1.log" >&2; echo "expansion_bench.sh: cannot create topic $1" >&2; exit 1; }
}

# The schema of --value-json10's records: 10 fields, one a struct of 3.
SCHEMA="$WORK/json10.schema.json"
cat > "$SCHEMA" <<'EOF'
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
EOF
FLATTEN_ARG=()
[ "$FLATTEN" = 1 ] && FLATTEN_ARG=(--flatten)

expansion_create() {  # expansion_create TOPIC TARGET [--backfill]
  run_step "$LOGS/create-$2.log" timeout -k 5 60 "$SLUICE" expansion create --server "$HTTP" \
    --topic "$1" --target "$2" --schema "$SCHEMA" "${FLATTEN_ARG[@]}" "${@:3}" \
    || { cat "$LOGS/create-$2.log" >&2; echo "expansion_bench.sh: cannot create expansion $2" >&2; exit 1; }
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

log "1. backfill: $BACKFILL_RECORDS JSON events, $PARTITIONS partitions, then create --backfill"
topic_create bf
loadgen bf-fill bf --records "$BACKFILL_RECORDS" \
  || warn "filling the topic failed: $(tail -3 "$LOGS/bf-fill.log")"
FILL_RPS="$(result_field "$LOGS/bf-fill.log" rps)"
FILL_SIZE="$(result_field "$LOGS/bf-fill.log" record_size)"
echo "  filled: $(result_field "$LOGS/bf-fill.log" records) records of $FILL_SIZE B on average, $FILL_RPS records/s" >&2
broker_alive
sync
sleep 1

C0="$(cpu_secs "$BROKER_PID")" B0="$(sys_busy)"
T0="$EPOCHREALTIME"
expansion_create bf bench.bf --backfill
T_CREATED="$EPOCHREALTIME"
BF_STATE="" BF_DONE=0 BF_TOTAL=0 T1="" POLLS=0
# Polled with shell builtins only: on this kind of VM a process start costs several ms
# of CPU, and a poll made of `sluice expansion list` and a few seds took a sizeable
# share of a core away from the expander.
CAP_AT=$(( ${EPOCHREALTIME%.*} + BACKFILL_CAP_SECS ))
while :; do
  ENTRY="$(http_get "/v1/expansions/bench.bf")"
  T="$EPOCHREALTIME"
  POLLS=$((POLLS + 1))
  [[ $ENTRY =~ \"state\":\"([a-z]+)\" ]] && BF_STATE="${BASH_REMATCH[1]}"
  [[ $ENTRY =~ \"backfill\":\{\"total\":([0-9]+),\"done\":([0-9]+)\} ]] \
    && BF_TOTAL="${BASH_REMATCH[1]}" BF_DONE="${BASH_REMATCH[2]}"
  if [ "$BF_STATE" = running ] && [ "$BF_DONE" = "$BF_TOTAL" ]; then T1="$T"; break; fi
  if [ "$BF_STATE" = failed ]; then warn "backfill failed: $ENTRY"; break; fi
  if [ "${T%.*}" -ge "$CAP_AT" ]; then warn "backfill not done after ${BACKFILL_CAP_SECS}s ($BF_DONE/$BF_TOTAL)"; break; fi
  kill -0 "$BROKER_PID" 2>/dev/null || broker_alive
  read -r -t 0.1 -u "$NAP_FD"  # sleeps 100 ms without starting a process
done
C1="$(cpu_secs "$BROKER_PID")" B1="$(sys_busy)"
BF_SECS="n/a" BF_RPS="n/a" BF_CPU="n/a" BF_RPCPU="n/a" BF_LOG_SECS="n/a" BF_LOG_RPS="n/a" BF_OTHER="n/a"
if [ -n "$T1" ]; then
  BF_SECS="$(calc "printf \"%.2f\", $T1 - $T0")"
  BF_RPS="$(calc "printf \"%.0f\", $BF_TOTAL / ($T1 - $T0)")"
  BF_CPU="$(calc "printf \"%.1f\", $C1 - $C0")"
  BF_RPCPU="$(calc "printf \"%.0f\", $BF_TOTAL / ($C1 - $C0)")"
  # Everything else the machine ran meanwhile (the status polls included): other
  # sessions' work here means the figure is for a shared machine.
  BF_OTHER="$(calc "printf \"%.1f\", $B1 - $B0 - ($C1 - $C0)")"
  # The broker's own view, without the polling: from its log line for the create
  # ("expanding topic") to "backfill done" (timestamps to the millisecond).
  log_secs() { sed -n "s/^[0-9-]*T\([0-9:.]*\)Z .*bench\.bf: $1.*/\1/p" "$LOGS/sluice.log" | head -1 \
    | awk -F: '{ print $1 * 3600 + $2 * 60 + $3 }'; }
  L0="$(log_secs "expanding topic")" L1="$(log_secs "backfill done")"
  if [ -n "$L0" ] && [ -n "$L1" ]; then
    BF_LOG_SECS="$(calc "d = $L1 - $L0; if (d < 0) d += 86400; printf \"%.3f\", d")"
    BF_LOG_RPS="$(calc "printf \"%.0f\", $BF_TOTAL / $BF_LOG_SECS")"
  fi
fi
echo "  backfill: $BF_DONE of $BF_TOTAL rows in $BF_SECS s ($POLLS polls; create took $(calc "printf \"%.2f\", $T_CREATED - $T0") s) = $BF_RPS rows/s; broker CPU $BF_CPU s ($BF_RPCPU rows per CPU-second); other CPU on the machine $BF_OTHER s" >&2
echo "  backfill by the broker's log (create to 'backfill done'): $BF_LOG_SECS s = $BF_LOG_RPS rows/s" >&2
# Every row there, and every field typed as the schema says.
CHECK="$(timeout -k 2 60 "$SLUICE" sql --server "$HTTP" -f csv \
  "SELECT count(*), sum(_missing_fields), sum(_excess_fields), sum(_type_errors), sum(_parse_error) FROM bench.bf" 2>&1 | tr -d '\r' | tail -1)"
echo "  target check (rows, missing, excess, type errors, parse errors): $CHECK" >&2
[ "$CHECK" = "$BACKFILL_RECORDS,0,0,0,0" ] || warn "target check: expected $BACKFILL_RECORDS,0,0,0,0, got '$CHECK'"
broker_alive

# ---------------------------------------------------------------------------
# 2. and 3. Produce with and without an expansion
# ---------------------------------------------------------------------------

# One run: run_case KIND(plain|exp) LOGNAME TOPIC loadgen-args...; appends
# "KIND rps mbps p50 p99 p999 max cpu" to $LOGS/LOGNAME.rows.
run_case() {
  local kind="$1" name="$2" topic="$3" c0 c1 entry rows lag delivered
  shift 3
  topic_create "$topic"
  [ "$kind" = exp ] && expansion_create "$topic" "bench.$topic"
  sync
  c0="$(cpu_secs "$BROKER_PID")" b0="$(sys_busy)"
  loadgen "$name-$topic" "$topic" "$@" || warn "$name into $topic failed: $(tail -3 "$LOGS/$name-$topic.log")"
  c1="$(cpu_secs "$BROKER_PID")" b1="$(sys_busy)"
  local f="$LOGS/$name-$topic.log" lg other
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
      warn "bench.$topic: rows_written $rows, lag $lag after $delivered acknowledged records"
    fi
  fi
  printf '%s %s %s %s %s %s %s %s %s %s\n' "$kind" "$(result_field "$f" rps)" "$(result_field "$f" mbps)" \
    "$(result_field "$f" p50_ms)" "$(result_field "$f" p99_ms)" "$(result_field "$f" p999_ms)" \
    "$(result_field "$f" max_ms)" "$(calc "printf \"%.1f\", $c1 - $c0")" "${lg:-n/a}" "$other" >> "$LOGS/$name.rows"
  printf '  %-5s %-6s %9s rec/s %7s MB/s  p50 %8s  p99 %8s  p99.9 %8s ms  CPU s: broker %s, loadgen %s, other %s\n' \
    "$kind" "$topic" "$(result_field "$f" rps)" "$(result_field "$f" mbps)" "$(result_field "$f" p50_ms)" \
    "$(result_field "$f" p99_ms)" "$(result_field "$f" p999_ms)" "$(calc "printf \"%.1f\", $c1 - $c0")" \
    "${lg:-n/a}" "$other" >&2
  broker_alive
}

: > "$LOGS/flat.rows"
: > "$LOGS/steady.rows"
log "2. flat-out produce, acks=all, ${PRODUCE_SECS}s per run, without / with a live expansion, x$REPEATS"
for r in $(seq 1 "$REPEATS"); do
  order="plain exp"; [ $((r % 2)) = 0 ] && order="exp plain"
  for kind in $order; do
    run_case "$kind" flat "f${kind:0:1}$r" --records 1000000000 --duration-s "$PRODUCE_SECS"
  done
done

log "3. steady produce, acks=all, $STEADY_RPS records/s, linger.ms=1, ${STEADY_SECS}s per run, without / with, x$REPEATS"
for r in $(seq 1 "$REPEATS"); do
  order="plain exp"; [ $((r % 2)) = 0 ] && order="exp plain"
  for kind in $order; do
    run_case "$kind" steady "s${kind:0:1}$r" --records 1000000000 --duration-s "$STEADY_SECS" \
      --rate-rps "$STEADY_RPS" --linger-ms 1
  done
done

# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------

# col FILE KIND N: the Nth column (2 = rps ... 8 = broker CPU, 9 = loadgen CPU, 10 = other
# CPU) of KIND's runs, " / "-joined.
col() { awk -v k="$2" -v n="$3" '$1 == k { s = s (s == "" ? "" : " / ") $n } END { print s }' "$1"; }
mean() { awk -v k="$2" -v n="$3" '$1 == k { s += $n; c++ } END { if (c) printf "%.3f", s / c; else print "n/a" }' "$1"; }
ratio() { calc "if ($2 + 0 == 0) print \"n/a\"; else printf \"%.2f\", $1 / $2"; }

F="$LOGS/flat.rows" S="$LOGS/steady.rows"
FLAT_RATIO="$(ratio "$(mean "$F" exp 2)" "$(mean "$F" plain 2)")"
FLAT_P99_RATIO="$(ratio "$(mean "$F" exp 5)" "$(mean "$F" plain 5)")"
STEADY_P99_RATIO="$(ratio "$(mean "$S" exp 5)" "$(mean "$S" plain 5)")"
BF_TARGET="$(calc "if (\"$BF_RPS\" == \"n/a\") print \"n/a\"; else printf \"%.0f%% of 200,000 rows/s: %s\", 100 * $BF_RPS / 200000, ($BF_RPS >= 200000 ? \"met\" : \"NOT met\")")"
FLAT_TARGET="$(calc "if (\"$FLAT_RATIO\" == \"n/a\") print \"n/a\"; else print ($FLAT_RATIO >= 0.5 ? \"met\" : \"NOT met\")")"

cat <<EOF

## Expansions benchmark — $M_DATE

Machine: $(nproc) x ${M_CPU:-?}, $M_MEM, $(uname -r); data dir: $M_FS; sluice git $M_GIT, build type ${M_BUILD:-unknown}.
Load average (1, 5, 15 min) at the start: $M_LOAD0; at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure).
Records: \`sluice-loadgen --value-json10\`, $FILL_SIZE B on average, $PARTITIONS partitions, acks=all.
Expansion: 10 fields (int64 x2, timestamp_ms, float64, string x3, bool, json, struct of 3$([ "$FLATTEN" = 1 ] && echo ", flattened" || echo " kept as JSON")).

| measure | figure |
|---|---:|
| backfill of $BF_TOTAL events: create to done, polled | $BF_SECS s, **$BF_RPS rows/s** ($BF_TARGET) |
| the same from the broker's log lines (no polling delay) | $BF_LOG_SECS s, $BF_LOG_RPS rows/s |
| broker CPU during the backfill | $BF_CPU s ($BF_RPCPU rows per CPU-second) |
| CPU used by anything else meanwhile (of $(nproc) x $BF_SECS s) | $BF_OTHER s |

| flat-out, ${PRODUCE_SECS}s, per run | without expansion | with expansion | with / without (means) |
|---|---:|---:|---:|
| records/s | $(col "$F" plain 2) | $(col "$F" exp 2) | **$FLAT_RATIO** (target >= 0.5: $FLAT_TARGET) |
| MB/s | $(col "$F" plain 3) | $(col "$F" exp 3) | |
| p50 ms | $(col "$F" plain 4) | $(col "$F" exp 4) | |
| p99 ms | $(col "$F" plain 5) | $(col "$F" exp 5) | $FLAT_P99_RATIO |
| p99.9 ms | $(col "$F" plain 6) | $(col "$F" exp 6) | |
| CPU s: broker | $(col "$F" plain 8) | $(col "$F" exp 8) | |
| CPU s: loadgen | $(col "$F" plain 9) | $(col "$F" exp 9) | |
| CPU s: anything else on the machine | $(col "$F" plain 10) | $(col "$F" exp 10) | |

| steady $STEADY_RPS records/s, ${STEADY_SECS}s, linger.ms=1, per run | without expansion | with expansion | with / without (means) |
|---|---:|---:|---:|
| achieved records/s | $(col "$S" plain 2) | $(col "$S" exp 2) | |
| p50 ms | $(col "$S" plain 4) | $(col "$S" exp 4) | |
| p99 ms | $(col "$S" plain 5) | $(col "$S" exp 5) | $STEADY_P99_RATIO |
| p99.9 ms | $(col "$S" plain 6) | $(col "$S" exp 6) | |
| max ms | $(col "$S" plain 7) | $(col "$S" exp 7) | |
| CPU s: broker | $(col "$S" plain 8) | $(col "$S" exp 8) | |
| CPU s: loadgen | $(col "$S" plain 9) | $(col "$S" exp 9) | |
| CPU s: anything else on the machine | $(col "$S" plain 10) | $(col "$S" exp 10) | |

RESULT mode=expansion backfill_rows=$BF_TOTAL backfill_s=$BF_SECS backfill_rps=$BF_RPS backfill_log_rps=$BF_LOG_RPS flat_plain_rps=$(mean "$F" plain 2) flat_exp_rps=$(mean "$F" exp 2) flat_ratio=$FLAT_RATIO steady_plain_p99_ms=$(mean "$S" plain 5) steady_exp_p99_ms=$(mean "$S" exp 5) steady_plain_p999_ms=$(mean "$S" plain 6) steady_exp_p999_ms=$(mean "$S" exp 6) ok=$((1 - FAILED))
EOF
stop_pid "$BROKER_PID"
BROKER_PID=""
exit "$FAILED"
