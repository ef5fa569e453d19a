#!/usr/bin/env bash
# Point reads at a fixed rate beside a full scan (`bench scan-lane`) for several scan_thread_nice
# values, release build, server on CPU 0 and the client on CPU 1. One load, one server start a case.
# Usage: lane-nice.sh BIN OUT [NICE...]   (env RECORDS=1000000 READ_RATE=5000 PHASE=15s ROUNDS=2 PORT=47420)
set -euo pipefail
bin=$1 out=$2; shift 2; mkdir -p "$out"
nices=("$@"); [ ${#nices[@]} -eq 0 ] && nices=(10 5 0)
RECORDS=${RECORDS:-1000000} PORT=${PORT:-47420}; admin=$((PORT + 1))
w=$(mktemp -d -p "${TMPDIR:-/tmp}")
trap 'rm -rf $w' EXIT
start() { taskset -c 0 "$bin" serve ${1:+--config "$1"} --listen 127.0.0.1:$PORT --admin-listen 127.0.0.1:$admin --data-dir $w/data >> "$out/server.log" 2>&1 & sp=$!
  for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done; }
start ""
taskset -c 1 "$bin" bench load --preset stress-read --records $RECORDS --hosts 127.0.0.1:$PORT --concurrency 64 --out $w --name load --quiet > /dev/null 2>&1
"$bin" nodetool -h 127.0.0.1 -p $admin flush > /dev/null
"$bin" nodetool -h 127.0.0.1 -p $admin compact > /dev/null
kill $sp; wait $sp || true
for n in "${nices[@]}"; do
  printf 'scan_thread_nice: %s\n' "$n" > $w/c.yaml
  start $w/c.yaml
  taskset -c 1 "$bin" bench scan-lane --hosts 127.0.0.1:$PORT --records $RECORDS --read-rate ${READ_RATE:-5000} \
    --phase ${PHASE:-15s} --rounds ${ROUNDS:-2} --server-note "scan_thread_nice: $n" --seed 1 \
    --out "$out" --name "nice$n" > "$out/nice$n.stdout" 2>&1 || true
  kill $sp; wait $sp || true
  echo "== nice $n"; grep -iE "p99|ratio|rows/s" "$out/nice$n.stdout" | head -12
done
