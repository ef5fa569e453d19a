#!/usr/bin/env bash
# Runs `peregrine bench indexed` against a fresh standalone Peregrine and a running Cassandra
# 5.0.9 in one invocation (each phase against each server in turn), with both servers' pids so
# that operations per server CPU second are reported. Usage:
#   run.sh BIN OUT_DIR ROWS [extra bench args...]
# Cassandra: CASS_PORT (default 9982), started beforehand with
#   scripts/cassandra.sh start --port $CASS_PORT --clean
# (its pid is read from ~/.cache/peregrine/cassandra-run-$CASS_PORT/cassandra.pid).
# Peregrine: `BIN serve` on port PEREGRINE_PORT (default 19591), a fresh temporary data dir,
# removed afterwards. Environment: PHASE (20s), CONC (32), ROUNDS (2), PHASES
# (high,low,range,write), SWEEP (e.g. "10 1000": afterwards the range phase again on the same
# tables, `--reuse`, returning that many rows per query).
set -euo pipefail
BIN=$1 OUT=$2 ROWS=$3
shift 3
CASS_PORT=${CASS_PORT:-9982}
PORT=${PEREGRINE_PORT:-19591}
PHASE=${PHASE:-20s}
CONC=${CONC:-32}
ROUNDS=${ROUNDS:-2}
PHASES=${PHASES:-high,low,range,write}
CASS_PID=$(cat "$HOME/.cache/peregrine/cassandra-run-$CASS_PORT/cassandra.pid")
mkdir -p "$OUT"
DATA=$(mktemp -d)
"$BIN" serve --listen 127.0.0.1:$PORT --data-dir "$DATA" > "$OUT/peregrine-$ROWS.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
"$BIN" bench indexed --endpoint "peregrine=127.0.0.1:$PORT@$PID" \
  --endpoint "cassandra=127.0.0.1:$CASS_PORT@$CASS_PID" \
  --rows "$ROWS" --phases "$PHASES" --phase "$PHASE" --concurrency "$CONC" --rounds "$ROUNDS" \
  --server-note "peregrine: $("$BIN" --version 2>/dev/null || echo "$BIN"), $(nproc) CPUs; cassandra 5.0.9, heap ${CASSANDRA_HEAP:-1G}" \
  --out "$OUT" --name "indexed-$ROWS" "$@" 2> "$OUT/indexed-$ROWS.log"
# SWEEP="10 1000": then the range phase again on the same tables (--reuse) returning that many
# rows per query: does an indexed query cost what it returns?
for n in ${SWEEP:-}; do
  "$BIN" bench indexed --endpoint "peregrine=127.0.0.1:$PORT@$PID" \
    --endpoint "cassandra=127.0.0.1:$CASS_PORT@$CASS_PID" \
    --rows "$ROWS" --reuse --phases range --range-rows "$n" --phase "$PHASE" \
    --concurrency "$CONC" --rounds "$ROUNDS" \
    --out "$OUT" --name "indexed-$ROWS-range$n" "$@" 2> "$OUT/indexed-$ROWS-range$n.log"
done
