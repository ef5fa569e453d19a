#!/usr/bin/env bash
# `peregrine bench indexed` against two Peregrine builds in one run: each phase runs against
# each build in turn, ROUNDS rounds, so the builds' runs alternate (after, before, after,
# before). Fresh temporary data dirs, removed afterwards. Usage:
#   two-builds.sh AFTER_BIN BEFORE_BIN OUT_DIR ROWS [extra bench args...]
# Environment: SERVER_CPU (unset: the servers run unpinned, with fjall's two workers; set: both
# are pinned to that CPU with taskset, one fjall worker each), CLIENT_CPU (the bench client's
# CPU when SERVER_CPU is set; default the other one), PORT_BASE (47950; the builds listen on
# it and the next port), PHASE (20s), ROUNDS (2), PHASES (write), NAME (two-builds-ROWS).
set -euo pipefail
AFTER=$1 BEFORE=$2 OUT=$3 ROWS=$4
shift 4
PORT=${PORT_BASE:-47950}
PHASE=${PHASE:-20s} ROUNDS=${ROUNDS:-2} PHASES=${PHASES:-write}
NAME=${NAME:-two-builds-$ROWS}
pin=() cpin=() note="unpinned"
if [[ -n ${SERVER_CPU:-} ]]; then
    CLIENT_CPU=${CLIENT_CPU:-$((1 - SERVER_CPU))}
    pin=(taskset -c "$SERVER_CPU") cpin=(taskset -c "$CLIENT_CPU")
    note="both servers pinned to CPU $SERVER_CPU, client on CPU $CLIENT_CPU (taskset)"
fi
mkdir -p "$OUT"
D1=$(mktemp -d) D2=$(mktemp -d)
"${pin[@]}" "$AFTER" serve --listen "127.0.0.1:$PORT" --data-dir "$D1" >"$OUT/$NAME-after.log" 2>&1 &
P1=$!
"${pin[@]}" "$BEFORE" serve --listen "127.0.0.1:$((PORT + 1))" --data-dir "$D2" >"$OUT/$NAME-before.log" 2>&1 &
P2=$!
trap 'kill $P1 $P2 2>/dev/null; wait $P1 $P2 2>/dev/null; rm -rf "$D1" "$D2"' EXIT
for p in $PORT $((PORT + 1)); do
    for _ in $(seq 1 600); do (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done
{ date -u +%FT%TZ; uptime; top -b -n 1 -w 160 | head -20; } >"$OUT/$NAME-machine.txt"
"${cpin[@]}" "$AFTER" bench indexed --endpoint "${FIRST_LABEL:-after}=127.0.0.1:$PORT@$P1" \
    --endpoint "${SECOND_LABEL:-before}=127.0.0.1:$((PORT + 1))@$P2" \
    --rows "$ROWS" --phases "$PHASES" --phase "$PHASE" --rounds "$ROUNDS" \
    --server-note "$note" --out "$OUT" --name "$NAME" "$@" 2>"$OUT/$NAME.log"
{ date -u +%FT%TZ; uptime; top -b -n 1 -w 160 | head -20; } >>"$OUT/$NAME-machine.txt"
cat "$OUT/$NAME.txt"
