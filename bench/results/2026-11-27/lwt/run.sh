#!/usr/bin/env bash
# Issue 17 item 1: conditional writes against plain ones, Peregrine beside Cassandra 5.0.9 in
# one run. Starts a Peregrine (BIN) on 19610; Cassandra must already answer on CASSANDRA
# (host:port) with its server process id CASSANDRA_PID. Loads the cassandra-stress style table
# into both, then `bench compare` (endpoints alternated, medians of ROUNDS) of:
#   stress-update (UPDATE one field of a loaded row) and its conditional twin lwt-update
#   (the same UPDATE ... IF EXISTS), and stress-write (INSERT of new keys) and lwt-write
#   (INSERT ... IF NOT EXISTS).
#   run.sh BIN OUT_DIR     (env: CASSANDRA=127.0.0.1:9942 CASSANDRA_PID=… RECORDS DURATION ROUNDS CONC)
# With PEREGRINE_CPU and CASSANDRA_CPU set, each server (all its threads) is pinned to that core,
# so neither's background work (Cassandra's Paxos tables and GC after its rounds) runs in the
# other's rounds; the bench client is not pinned.
set -euo pipefail
BIN=$1 OUT=$2
CASSANDRA=${CASSANDRA:-127.0.0.1:9942}
: "${CASSANDRA_PID:?CASSANDRA_PID=<pid of the Cassandra server>}"
RECORDS=${RECORDS:-20000} DURATION=${DURATION:-10s} ROUNDS=${ROUNDS:-3} CONC=${CONC:-32}
mkdir -p "$OUT"
DATA=$(mktemp -d)
"$BIN" serve --listen 127.0.0.1:19610 --admin-listen 127.0.0.1:19611 --data-dir "$DATA" > "$OUT/server.log" 2>&1 &
PID=$!
if [ -n "${PEREGRINE_CPU:-}" ] && [ -n "${CASSANDRA_CPU:-}" ]; then
  taskset -a -cp "$PEREGRINE_CPU" "$PID" > /dev/null
  taskset -a -cp "$CASSANDRA_CPU" "$CASSANDRA_PID" > /dev/null
fi
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/19610) 2>/dev/null && break; sleep 0.1; done
for host in 127.0.0.1:19610 "$CASSANDRA"; do
  "$BIN" bench load --preset stress-write --records "$RECORDS" --hosts "$host" --drop --quiet \
    --out "$OUT/load" > "$OUT/load-${host//[:.]/_}.log" 2>&1
done
for preset in stress-update lwt-update stress-write lwt-write; do
  "$BIN" bench compare --preset "$preset" --records "$RECORDS" --duration "$DURATION" --warmup 2s \
    --rounds "$ROUNDS" --concurrency "$CONC" \
    --a "peregrine=127.0.0.1:19610@$PID" --b "cassandra=$CASSANDRA@$CASSANDRA_PID" \
    --out "$OUT" --name "$preset" > "$OUT/$preset.stdout" 2>&1
done
