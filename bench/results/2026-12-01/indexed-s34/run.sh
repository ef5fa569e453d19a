#!/usr/bin/env bash
# `peregrine bench indexed` (issue 11 item 7) against a fresh standalone Peregrine and a running
# Cassandra 5.0.9 in one invocation: both servers pinned to CPU 0 (Cassandra's threads with
# taskset -a), the bench client on CPU 1, every process of the run at nice -10 so that work at
# nice 19 elsewhere (a helper's builds) gets only the cycles the run leaves idle. Needs root.
#   CASSANDRA_HEAP=4G scripts/cassandra.sh start --port 9955 --clean
#   run.sh BIN OUT_DIR ROWS [extra bench args...]
# Environment: CASS_PORT (9955), PORT (19562), PHASE (15s), ROUNDS (2), PHASES (all four).
set -euo pipefail
BIN=$1 OUT=$2 ROWS=$3
shift 3
CASS_PORT=${CASS_PORT:-9955} PORT=${PORT:-19562}
PHASE=${PHASE:-15s} ROUNDS=${ROUNDS:-2} PHASES=${PHASES:-high,low,range,write}
CASS_PID=$(cat "$HOME/.cache/peregrine/cassandra-run-$CASS_PORT/cassandra.pid")
taskset -a -p -c 0 "$CASS_PID" >/dev/null
for t in /proc/"$CASS_PID"/task/*; do renice -n -10 -p "${t##*/}" >/dev/null; done
mkdir -p "$OUT"
DIR=$(mktemp -d)
nice -n -10 taskset -c 0 "$BIN" serve --listen "127.0.0.1:$PORT" --data-dir "$DIR" >"$OUT/peregrine-$ROWS.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 600); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
{ date -u; uptime; } >"$OUT/uptime-$ROWS.txt"
nice -n -10 taskset -c 1 "$BIN" bench indexed --endpoint "peregrine=127.0.0.1:$PORT@$PID" \
    --endpoint "cassandra=127.0.0.1:$CASS_PORT@$CASS_PID" \
    --rows "$ROWS" --phases "$PHASES" --phase "$PHASE" --rounds "$ROUNDS" --seed 34 \
    --server-note "both servers pinned to CPU 0 (taskset), client on CPU 1, all at nice -10; cassandra 5.0.9, heap ${CASSANDRA_HEAP:-4G}; $("$BIN" --version 2>/dev/null || true)" \
    --out "$OUT" --name "indexed-$ROWS" "$@" 2>"$OUT/indexed-$ROWS.log"
{ date -u; uptime; } >>"$OUT/uptime-$ROWS.txt"
