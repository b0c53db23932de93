#!/usr/bin/env bash
# bench/http_bench.sh — the HTTP listener under load (docs/design/http-stack.md): requests
# per second and latency percentiles of GET /healthz and of small SQL queries
# (POST /v1/sql: SELECT 1, a COUNT over a topic of RECORDS JSON records, and the last 20
# records),
# with keep-alive and with a new connection per request, at 1 and CONCURRENCY clients.
#
# Uses ApacheBench (`ab`, Debian's apache2-utils; scripts/install-deps.sh bench) as the
# client, and `sluice produce` to fill the topic. Builds nothing: give the build dir
# (default build/) as the argument or BUILD_DIR. Binds to 127.0.0.1; the broker is
# stopped and the scratch dir deleted on exit.

set -u -o pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KEEP=0
BUILD_DIR="${BUILD_DIR:-}"
for a in "$@"; do
  case "$a" in
    --keep) KEEP=1 ;;
    -h|--help)
      echo "usage: bench/http_bench.sh [--keep] [BUILD_DIR]"
      echo "env: REQUESTS [20000] (per run; SQL runs do a tenth) CONCURRENCY [8] RECORDS [10000]"
      exit 0 ;;
    -*) echo "http_bench.sh: unknown option '$a'" >&2; exit 2 ;;
    *) BUILD_DIR="$a" ;;
  esac
done
: "${BUILD_DIR:=$ROOT/build}"
: "${SLUICE:=$BUILD_DIR/sluice}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"
: "${REQUESTS:=20000}"
: "${CONCURRENCY:=8}"
: "${RECORDS:=10000}"
[ -x "$SLUICE" ] || { echo "http_bench.sh: $SLUICE is missing" >&2; exit 2; }
command -v ab > /dev/null || { echo "http_bench.sh: needs ab (apache2-utils)" >&2; exit 2; }
WORK="$(mktemp -d "$BENCH_DIR/sluice-httpbench.XXXXXX")" || exit 2
DATA_DIR="$WORK/data" LOGS="$WORK/logs"
mkdir -p "$DATA_DIR" "$LOGS"
BENCH_NAME=http_bench.sh
STEP_PID="" BROKER_PID=""
source "$ROOT/bench/lib.sh"

echo "machine: $(nproc) x $M_CPU, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
start_sluice "$LOGS/sluice.log" --data-dir "$DATA_DIR" --listen 127.0.0.1:0 \
  --http 127.0.0.1:0 || exit 1
HTTP=""
for _ in $(seq 1 500); do
  HTTP="$(sed -n 's/^listening http \([0-9.]*:[0-9]*\)$/\1/p' "$LOGS/sluice.log" | head -1)"
  [ -n "$HTTP" ] && break
  sleep 0.02
done
[ -n "$HTTP" ] || { echo "http_bench.sh: no HTTP listener" >&2; exit 1; }

run_step "$LOGS/topic.log" timeout -k 5 60 "$SLUICE" topic create events --partitions 1 \
  --bootstrap "$ADDR" || { cat "$LOGS/topic.log" >&2; exit 1; }
seq 1 "$RECORDS" | awk '{ printf "{\"n\":%d,\"kind\":\"k%d\"}\n", $1, $1 % 7 }' \
  | timeout -k 5 120 "$SLUICE" produce events --bootstrap "$ADDR" > "$LOGS/produce.log" 2>&1 \
  || { cat "$LOGS/produce.log" >&2; exit 1; }

printf 'SELECT 1' > "$WORK/one.sql"
printf 'SELECT count(*) FROM events' > "$WORK/count.sql"
printf 'SELECT "offset", value FROM events ORDER BY "offset" DESC LIMIT 20' > "$WORK/read.sql"

# One ab run: prints a table row "name conc keepalive req/s p50 p99 failed" (failed: errors
# and non-2xx answers).
ab_run() {
  local name="$1" conc="$2" keepalive="$3" n="$4"
  shift 4
  local out="$LOGS/ab-$name-$conc-$keepalive.txt" ka=()
  [ "$keepalive" = keep-alive ] && ka=(-k)
  timeout -k 5 300 ab -q -n "$n" -c "$conc" "${ka[@]}" "$@" > "$out" 2>&1 \
    || { warn "ab $name failed: $(tail -3 "$out")"; return; }
  awk -v name="$name" -v conc="$conc" -v ka="$keepalive" '
    /^Requests per second:/ { rps = $4 }
    /^Failed requests:/ { failed = $3 }
    # A different length than the first answer is not a failure (SQL answers carry their time).
    /^   \(Connect:/ { if (match($0, /Length: [0-9]+/)) failed -= substr($0, RSTART + 8, RLENGTH - 8) }
    /^Non-2xx responses:/ { failed += $3 }
    /^  50%/ { p50 = $2 }
    /^  99%/ { p99 = $2 }
    END { printf "| %s | %s | %s | %.0f | %s | %s | %d |\n", name, conc, ka, rps, p50, p99, failed }' "$out"
}

echo "| request | clients | connection | requests/s | p50 ms | p99 ms | failed |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
sql_n=$((REQUESTS / 10))
for conc in 1 "$CONCURRENCY"; do
  for ka in keep-alive close; do
    ab_run healthz "$conc" "$ka" "$REQUESTS" "http://$HTTP/healthz"
    ab_run sql-select1 "$conc" "$ka" "$sql_n" -p "$WORK/one.sql" -T application/sql \
      "http://$HTTP/v1/sql?format=json"
    ab_run sql-count "$conc" "$ka" "$sql_n" -p "$WORK/count.sql" -T application/sql \
      "http://$HTTP/v1/sql?format=json"
    ab_run sql-read20 "$conc" "$ka" "$sql_n" -p "$WORK/read.sql" -T application/sql \
      "http://$HTTP/v1/sql?format=json"
  done
done
echo "broker CPU: $(cpu_secs "$BROKER_PID") s over the runs" >&2
exit "$FAILED"
