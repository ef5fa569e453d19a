#!/usr/bin/env bash
# Two builds side by side, alternated in short runs against stores loaded once: both servers
# on CPU 0 (each its own 500k-row store, flushed and major-compacted), the bench on CPU 1.
# Each round runs WORKLOAD for DURATION against OLD, then NEW, and reports operations per
# second of the server's CPU (utime + stime from /proc). Alternating short rounds against
# live servers spreads a busy machine's drift over both builds.
# Usage: ab-live.sh OLD NEW OUT   (env RECORDS=500000 WORKLOAD=c ROUNDS=6 DURATION=10s WARM=20s PORT=47460)
set -euo pipefail
old=$1 new=$2 out=$3; mkdir -p "$out"
RECORDS=${RECORDS:-500000} W=${WORKLOAD:-c} port=${PORT:-47460}
w=$(mktemp -d -p "${TMPDIR:-/tmp}")
pids=()
trap 'kill ${pids[@]} 2>/dev/null; wait 2>/dev/null; rm -rf $w' EXIT
start() { # BIN PORT NAME
  taskset -c 0 "$1" serve --listen 127.0.0.1:$2 --admin-listen 127.0.0.1:$(($2 + 1)) --data-dir $w/$3 > "$out/$3-server.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && break; sleep 0.1; done
  taskset -c 1 "$1" bench load --workload $W --records $RECORDS --hosts 127.0.0.1:$2 --concurrency 64 --out $w --name load-$3 --quiet > /dev/null 2>&1
  "$1" nodetool -h 127.0.0.1 -p $(($2 + 1)) flush > /dev/null
  "$1" nodetool -h 127.0.0.1 -p $(($2 + 1)) compact > /dev/null
  taskset -c 1 "$1" bench run --workload $W --records $RECORDS --duration ${WARM:-20s} --concurrency 64 --hosts 127.0.0.1:$2 --out $w --name warm-$3 --quiet > /dev/null 2>&1
}
start "$old" $port old; start "$new" $((port + 10)) new
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
for r in $(seq 1 ${ROUNDS:-6}); do
  for side in old new; do
    if [ $side = old ]; then bin=$old p=$port pid=${pids[0]}; else bin=$new p=$((port + 10)) pid=${pids[1]}; fi
    c0=$(cpu $pid)
    ops=$(taskset -c 1 "$bin" bench run --workload $W --records $RECORDS --duration ${DURATION:-10s} --concurrency 64 --hosts 127.0.0.1:$p --out $w --name run --quiet 2>/dev/null | awk '/^overall/{gsub(",","",$2); print $2}')
    c1=$(cpu $pid)
    echo "$W $side round $r: $ops ops, $((c1 - c0)) cs CPU, $(python3 -c "print(round($ops*100/$((c1 - c0))))") ops per server CPU s"
  done
done | tee "$out/rounds.txt"
