#!/usr/bin/env bash
# run.sh's Peregrine half: the same server and bench flags, Peregrine only.
set -euo pipefail
SERVER=$1 DATA=$2 OUT=$3 ROWS=$4 PORT=19561
DIR=$(mktemp -d)
taskset -c 0 "$SERVER" serve --listen 127.0.0.1:$PORT --data-dir "$DIR" > "$OUT/peregrine-$ROWS.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
taskset -c 1 "$SERVER" bench vector --endpoint "peregrine=127.0.0.1:$PORT@$PID" \
  --base "$DATA/base.fvecs" --queries "$DATA/query.fvecs" --rows "$ROWS" \
  --setting default --phase 20s --concurrency 16 --load-concurrency 2 \
  --server-note "peregrine: $SERVER ($("$SERVER" --version)); server on CPU 0 (beside Cassandra's index build), bench on CPU 1" \
  --out "$OUT" --name "vector-$ROWS" 2> "$OUT/vector-$ROWS.log"
