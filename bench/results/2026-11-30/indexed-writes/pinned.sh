#!/usr/bin/env bash
# `peregrine bench indexed` against two Peregrine builds and a running Cassandra 5.0.9, every
# server pinned to one core (taskset, all threads) and the bench client to the other, so that
# operations per server CPU second compare one core's worth of each.
# Usage: pinned.sh NEW_BIN OLD_BIN OUT_DIR ROWS [extra bench args...]
# Cassandra: CASS_PORT (9952), started beforehand with scripts/cassandra.sh start --port 9952.
# Peregrine: ports PORT_BASE, PORT_BASE+1 (47760), fresh temporary data dirs, removed after.
# Environment: PHASE (20s), ROUNDS (2), PHASES (write,range), SERVER_CPU (1), CLIENT_CPU (0),
# CASS_CPU (SERVER_CPU; give it the client's CPU to keep Cassandra's background work, which
# goes on after its phase, off the core of the Peregrine phase that follows).
set -euo pipefail
NEW=$1 OLD=$2 OUT=$3 ROWS=$4
shift 4
CASS_PORT=${CASS_PORT:-9952} PORT=${PORT_BASE:-47760}
PHASE=${PHASE:-20s} ROUNDS=${ROUNDS:-2} PHASES=${PHASES:-write,range}
SCPU=${SERVER_CPU:-1} CCPU=${CLIENT_CPU:-0}
CASS_CPU=${CASS_CPU:-$SCPU}
CASS_PID=$(cat "$HOME/.cache/peregrine/cassandra-run-$CASS_PORT/cassandra.pid")
taskset -a -p -c "$CASS_CPU" "$CASS_PID" >/dev/null
mkdir -p "$OUT"
D1=$(mktemp -d) D2=$(mktemp -d)
taskset -c "$SCPU" "$NEW" serve --listen "127.0.0.1:$PORT" --data-dir "$D1" >"$OUT/new-$ROWS.log" 2>&1 &
P1=$!
taskset -c "$SCPU" "$OLD" serve --listen "127.0.0.1:$((PORT + 1))" --data-dir "$D2" >"$OUT/old-$ROWS.log" 2>&1 &
P2=$!
trap 'kill $P1 $P2 2>/dev/null; wait $P1 $P2 2>/dev/null; rm -rf "$D1" "$D2"' EXIT
for p in $PORT $((PORT + 1)); do
    for _ in $(seq 1 600); do (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done
uptime >"$OUT/uptime-$ROWS.txt"
taskset -c "$CCPU" "$NEW" bench indexed --endpoint "new=127.0.0.1:$PORT@$P1" \
    --endpoint "old=127.0.0.1:$((PORT + 1))@$P2" \
    --endpoint "cassandra=127.0.0.1:$CASS_PORT@$CASS_PID" \
    --rows "$ROWS" --phases "$PHASES" --phase "$PHASE" --rounds "$ROUNDS" \
    --server-note "peregrines pinned to CPU $SCPU, cassandra to CPU $CASS_CPU (taskset), client on CPU $CCPU; cassandra 5.0.9, heap ${CASSANDRA_HEAP:-4G}" \
    --out "$OUT" --name "pinned-$ROWS" "$@" 2>"$OUT/pinned-$ROWS.log"
uptime >>"$OUT/uptime-$ROWS.txt"
