#!/usr/bin/env bash
# Runs `peregrine bench vector` against a fresh standalone Peregrine and a running Cassandra
# 5.0.9 in one invocation, both servers pinned to CPU 0 and the bench client to CPU 1, with the
# servers' pids so that queries per server CPU second and server memory are reported. Usage:
#   run.sh SERVER_BIN BENCH_BIN DATA_DIR OUT_DIR ROWS [extra bench args...]
# DATA_DIR holds base.fvecs and query.fvecs (bench/vectors/make_dataset.sh makes them).
# Cassandra: CASS_PORT (default 9955), started beforehand with
#   scripts/cassandra.sh start --port $CASS_PORT --clean
# (its pid is read from ~/.cache/peregrine/cassandra-run-$CASS_PORT/cassandra.pid).
# Peregrine: `SERVER_BIN serve` on PEREGRINE_PORT (default 19561) with a fresh temporary data
# dir, removed afterwards. Environment: PHASE (20s), CONC (16), LOAD_CONC (2), SETTINGS
# ("default optimize_for=RECALL").
set -euo pipefail
SERVER=$1 BENCH=$2 DATA=$3 OUT=$4 ROWS=$5
shift 5
CASS_PORT=${CASS_PORT:-9955}
PORT=${PEREGRINE_PORT:-19561}
PHASE=${PHASE:-20s}
CONC=${CONC:-16}
LOAD_CONC=${LOAD_CONC:-2}
SETTINGS=${SETTINGS:-default optimize_for=RECALL}
CASS_PID=$(cat "$HOME/.cache/peregrine/cassandra-run-$CASS_PORT/cassandra.pid")
taskset -a -cp 0 "$CASS_PID" > /dev/null
mkdir -p "$OUT"
DIR=$(mktemp -d)
taskset -c 0 "$SERVER" serve --listen 127.0.0.1:$PORT --data-dir "$DIR" > "$OUT/peregrine-$ROWS.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
settings=()
for s in $SETTINGS; do settings+=(--setting "$s"); done
taskset -c 1 "$BENCH" bench vector --endpoint "peregrine=127.0.0.1:$PORT@$PID" \
  --endpoint "cassandra=127.0.0.1:$CASS_PORT@$CASS_PID" \
  --base "$DATA/base.fvecs" --queries "$DATA/query.fvecs" --rows "$ROWS" \
  "${settings[@]}" --phase "$PHASE" --concurrency "$CONC" --load-concurrency "$LOAD_CONC" \
  --server-note "peregrine: $SERVER ($("$SERVER" --version 2>/dev/null || true)), cassandra 5.0.9 heap ${CASSANDRA_HEAP:-1G}; both servers on CPU 0, bench on CPU 1" \
  --out "$OUT" --name "vector-$ROWS" "$@" 2> "$OUT/vector-$ROWS.log"
