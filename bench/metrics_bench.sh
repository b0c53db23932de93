#!/usr/bin/env bash
# bench/metrics_bench.sh — the cost of GET /metrics on the produce path: flat-out produce
# with and without a scrape every second, same broker, same run.
#
# Starts one broker (with --http) on a scratch data dir and measures with
# `sluice-loadgen` (librdkafka): flat-out acks=all produce of RECORD_SIZE-byte records
# into a fresh PARTITIONS-partition topic for PRODUCE_SECS, once while a scraper GETs
# /metrics every SCRAPE_INTERVAL seconds (as Prometheus would) and once without, REPEATS
# times, the order alternating from one repeat to the next. Prints records/s, MB/s, p50,
# p99 and the broker's CPU seconds per GB of each run, and the scraped / unscraped
# ratios of the medians (issue 38's target: within 2%). The counters themselves are
# always on; what the comparison isolates is the scrape (rendering every family,
# reading the partitions' offsets, asking the event loop for topics and groups).
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
      echo "usage: bench/metrics_bench.sh [--keep] [BUILD_DIR]"
      echo "env: PARTITIONS [4] RECORD_SIZE [1024] PRODUCE_SECS [8] REPEATS [3] SCRAPE_INTERVAL [1]"
      echo "     SCRAPE_PATH [/metrics] (/healthz: the scraper's own cost, without the metrics)"
      echo "     EXTRA_TOPICS [0] (more topics of PARTITIONS partitions each, for larger scrapes)"
      echo "     LOADGEN_ARGS []"
      exit 0 ;;
    -*) echo "metrics_bench.sh: unknown option '$a'" >&2; exit 2 ;;
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
: "${SCRAPE_INTERVAL:=1}"
: "${SCRAPE_PATH:=/metrics}"
: "${EXTRA_TOPICS:=0}"
: "${LOADGEN_ARGS:=}"
for b in "$SLUICE" "$LOADGEN"; do
  [ -x "$b" ] || { echo "metrics_bench.sh: $b is missing" >&2; exit 2; }
done
command -v curl > /dev/null || { echo "metrics_bench.sh: needs curl" >&2; exit 2; }
WORK="$(mktemp -d "$BENCH_DIR/sluice-metricsbench.XXXXXX")" || exit 2
DATA_DIR="$WORK/data" LOGS="$WORK/logs"
mkdir -p "$DATA_DIR" "$LOGS"
BENCH_NAME=metrics_bench.sh
STEP_PID="" BROKER_PID="" SCRAPER_PID=""
stop_scraper() { stop_pid "$SCRAPER_PID"; SCRAPER_PID=""; }
CLEANUP_HOOK=stop_scraper
source "$ROOT/bench/lib.sh"

echo "machine: $(nproc) x $M_CPU, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "sluice: $SLUICE, git $M_GIT" >&2
start_sluice "$LOGS/sluice.log" --data-dir "$DATA_DIR" --listen 127.0.0.1:0 \
  --http 127.0.0.1:0 || exit 1
HTTP=""
for _ in $(seq 1 500); do
  HTTP="$(sed -n 's/^listening http \([0-9.]*:[0-9]*\)$/\1/p' "$LOGS/sluice.log" | head -1)"
  [ -n "$HTTP" ] && break
  sleep 0.02
done
[ -n "$HTTP" ] || { echo "metrics_bench.sh: no HTTP listener" >&2; exit 1; }
for i in $(seq 1 "$EXTRA_TOPICS"); do
  run_step "$LOGS/extra.log" timeout -k 5 60 "$SLUICE" topic create "extra-$i" \
    --partitions "$PARTITIONS" --bootstrap "$ADDR" || { cat "$LOGS/extra.log" >&2; exit 1; }
done

# The scraper: GET /metrics every SCRAPE_INTERVAL seconds; counts scrapes and bytes.
scraper() {
  local n=0 bytes=0 b
  while :; do
    b="$(curl -s -o /dev/null -w '%{size_download}' "http://$HTTP$SCRAPE_PATH")" || b=0
    n=$((n + 1)) bytes=$((bytes + b))
    echo "$n $bytes" > "$LOGS/scrapes"
    sleep "$SCRAPE_INTERVAL"
  done
}

# run NAME SCRAPE: one produce run into a fresh topic; prints "rps mbps p50 p99 cpu",
# cpu being the broker's CPU seconds per GB of payload over the run.
run() {
  local topic="metrics-$1" out="$LOGS/$1.log"
  run_step "$LOGS/topic-$1.log" timeout -k 5 60 "$SLUICE" topic create "$topic" \
    --partitions "$PARTITIONS" --bootstrap "$ADDR" || { cat "$LOGS/topic-$1.log" >&2; exit 1; }
  if [ "$2" = yes ]; then
    scraper &
    SCRAPER_PID=$!
  fi
  local res
  res="$(produce_figures "$out" --topic "$topic")" || exit 1
  if [ "$2" = yes ]; then
    stop_scraper
    echo "  scrapes (count, bytes): $(cat "$LOGS/scrapes" 2>/dev/null)" >&2
  fi
  echo "$res"
  run_step "$LOGS/delete-$1.log" timeout -k 5 60 "$SLUICE" topic delete "$topic" --bootstrap "$ADDR" || true
}

declare -a PLAIN SCRAPED
for r in $(seq 1 "$REPEATS"); do
  if [ $((r % 2)) = 1 ]; then order="no yes"; else order="yes no"; fi
  for s in $order; do
    res="$(run "r$r-$s" "$s")"
    echo "repeat $r scraped=$s: rps mbps p50_ms p99_ms cpu_s_per_gb = $res" >&2
    if [ "$s" = yes ]; then SCRAPED+=("$res"); else PLAIN+=("$res"); fi
  done
done
curl -s "http://$HTTP/metrics" > "$LOGS/last-scrape.txt"
echo "last scrape: $(wc -c < "$LOGS/last-scrape.txt") bytes, $(grep -vc '^#' "$LOGS/last-scrape.txt") samples" >&2
# The scrape's own cost, free of the produce runs' noise: the broker's CPU over
# SCRAPES back-to-back scrapes of an idle broker, per scrape.
: "${SCRAPES:=200}"
c0="$(cpu_secs "$BROKER_PID")"
t0="$(date +%s.%N)"
for _ in $(seq 1 "$SCRAPES"); do curl -s -o /dev/null "http://$HTTP/metrics"; done
SCRAPE_CPU_MS="$(calc "printf \"%.3f\", ($(cpu_secs "$BROKER_PID") - $c0) * 1000 / $SCRAPES")"
SCRAPE_MS="$(calc "printf \"%.3f\", ($(date +%s.%N) - $t0) * 1000 / $SCRAPES")"

col() { median_col "$@"; }
echo
echo "| run | records/s | MB/s | p50 ms | p99 ms | broker CPU s/GB |"
echo "|---|---|---|---|---|---|"
for k in unscraped scraped; do
  if [ "$k" = unscraped ]; then set -- "${PLAIN[@]}"; else set -- "${SCRAPED[@]}"; fi
  echo "| $k (median of $REPEATS) | $(col 1 "$@") | $(col 2 "$@") | $(col 3 "$@") | $(col 4 "$@") | $(col 5 "$@") |"
done
echo
echo "one scrape: $SCRAPE_CPU_MS ms of broker CPU, $SCRAPE_MS ms end to end (mean of $SCRAPES)"
echo "scraped / unscraped: throughput $(calc "printf \"%.3f\", $(col 1 "${SCRAPED[@]}") / $(col 1 "${PLAIN[@]}")"), p99 $(calc "printf \"%.3f\", $(col 4 "${SCRAPED[@]}") / $(col 4 "${PLAIN[@]}")"), broker CPU per GB $(calc "printf \"%.3f\", $(col 5 "${SCRAPED[@]}") / $(col 5 "${PLAIN[@]}")")"
exit "$FAILED"
