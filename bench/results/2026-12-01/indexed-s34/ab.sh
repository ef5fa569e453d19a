#!/usr/bin/env bash
# Two Peregrine builds in one `peregrine bench indexed` run (phases alternate between them), both
# pinned to CPU 0, the client on CPU 1, all at nice -10 (needs root). No Cassandra: its figures
# come from run.sh's runs.
#   ab.sh NEW_BIN OLD_BIN OUT_DIR ROWS [extra bench args...]
# Environment: PHASE (15s), ROUNDS (2), PHASES (high,low,range), PORT (19563, and +1).
set -euo pipefail
NEW=$1 OLD=$2 OUT=$3 ROWS=$4
shift 4
PORT=${PORT:-19563} PHASE=${PHASE:-15s} ROUNDS=${ROUNDS:-2} PHASES=${PHASES:-high,low,range}
mkdir -p "$OUT"
D1=$(mktemp -d) D2=$(mktemp -d)
nice -n -10 taskset -c 0 "$NEW" serve --listen "127.0.0.1:$PORT" --data-dir "$D1" >"$OUT/ab-new-$ROWS.log" 2>&1 &
P1=$!
nice -n -10 taskset -c 0 "$OLD" serve --listen "127.0.0.1:$((PORT + 1))" --data-dir "$D2" >"$OUT/ab-old-$ROWS.log" 2>&1 &
P2=$!
trap 'kill $P1 $P2 2>/dev/null; wait $P1 $P2 2>/dev/null; rm -rf "$D1" "$D2"' EXIT
for p in $PORT $((PORT + 1)); do
    for _ in $(seq 1 600); do (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done
nice -n -10 taskset -c 1 "$NEW" bench indexed --endpoint "new=127.0.0.1:$PORT@$P1" \
    --endpoint "old=127.0.0.1:$((PORT + 1))@$P2" \
    --rows "$ROWS" --phases "$PHASES" --phase "$PHASE" --rounds "$ROUNDS" --seed 34 \
    --server-note "new: $NEW, old: $OLD; both pinned to CPU 0, client on CPU 1, all at nice -10" \
    --out "$OUT" --name "ab-$ROWS" "$@" 2>"$OUT/ab-$ROWS.log"
