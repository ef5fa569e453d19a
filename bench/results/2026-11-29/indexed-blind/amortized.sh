#!/usr/bin/env bash
# Peregrine alone: what an indexed UPDATE costs in server CPU including the clean-up of the
# entries it leaves stale (the background sweep), against the build that deletes them inline.
# Usage: amortized.sh BIN OUT_DIR NAME   (1M rows; PHASE 20s, ROUNDS 2, 32 in flight)
# 1. `BIN serve` on a fresh data dir; `BIN bench indexed --phases write` against it alone
#    (each write phase is followed by the bench's restore of the rows it changed: more UPDATEs).
# 2. Waits until the server's index-build thread (the sweep's) is idle; reads the process CPU.
# 3. Restarts the server on the same data: the start-up sweep removes every stale entry left;
#    its CPU is the thread's once idle. Prints: process CPU after the load, sweep CPU in the
#    run, start-up sweep CPU (clock ticks of /proc/<pid>/stat, 100 per second).
set -euo pipefail
BIN=$1 OUT=$2 NAME=$3 PORT=${PEREGRINE_PORT:-19954}
mkdir -p "$OUT"; DATA=$(mktemp -d)
proc_ticks() { awk '{print $14+$15}' /proc/$1/stat; }
build_ticks() { for t in /proc/$1/task/*; do [ "$(cat $t/comm)" = index-build ] && awk '{print $14+$15}' $t/stat; done; }
idle() { local a b; a=$(build_ticks $1); while sleep 5; b=$(build_ticks $1); [ "$a" != "$b" ]; do a=$b; done; echo "$b"; }
start() { "$BIN" serve --listen 127.0.0.1:$PORT --data-dir "$DATA" >> "$OUT/$NAME-server.log" 2>&1 & PID=$!
  for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done; }
start; trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
T0=$(idle $PID)
"$BIN" bench indexed --endpoint "peregrine=127.0.0.1:$PORT@$PID" --rows 1000000 --phases write \
  --phase 20s --concurrency 32 --rounds 2 --out "$OUT" --name "$NAME" 2> "$OUT/$NAME.log"
T1=$(idle $PID); P1=$(proc_ticks $PID)
kill $PID; wait $PID 2>/dev/null || true
start; T2=$(idle $PID)
echo "$NAME: process ticks at end $P1; index-build ticks: start $T0, end of run $T1; after restart $T2 (uptime: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/$NAME.cpu"
