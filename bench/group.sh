#!/usr/bin/env bash
# Consumer-group rebalance latency: starts a broker with the initial rebalance delay set
# to 0 on a free loopback port and a scratch data dir, runs sluice-groupbench for groups
# of 3 and 50 members, prints the results, and stops the broker.
#
#   bench/group.sh [ROUNDS]      (default 30 rounds per group size)
#
# Environment: SLUICE, GROUPBENCH (binaries; default build/), BENCH_DIR (scratch, /tmp).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS="${1:-30}"
: "${SLUICE:=$ROOT/build/sluice}"
: "${GROUPBENCH:=$ROOT/build/bench/sluice-groupbench}"
: "${BENCH_DIR:=${TMPDIR:-/tmp}}"

for b in "$SLUICE" "$GROUPBENCH"; do
  [ -x "$b" ] || { echo "group.sh: $b is missing; run 'make build' first" >&2; exit 2; }
done
WORK="$(mktemp -d "$BENCH_DIR/sluice-groupbench.XXXXXX")"
BROKER_PID=""
cleanup() {
  if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
    kill -TERM "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$SLUICE" serve --data-dir "$WORK/data" --listen 127.0.0.1:0 --log-level warn \
  --group-initial-rebalance-delay-ms 0 >"$WORK/stdout" 2>"$WORK/stderr" &
BROKER_PID=$!
ADDR=""
for _ in $(seq 1 100); do
  ADDR="$(sed -n 's/^listening kafka //p' "$WORK/stdout" | head -1)"
  [ -n "$ADDR" ] && break
  sleep 0.1
done
[ -n "$ADDR" ] || { echo "group.sh: broker did not start" >&2; cat "$WORK/stderr" >&2; exit 1; }

echo "machine: $(nproc) cores, $(uname -r); broker $ADDR"
for n in 3 50; do
  timeout 300 "$GROUPBENCH" --bootstrap "$ADDR" --members "$n" --rounds "$ROUNDS" --group "bench-$n"
done
