#!/usr/bin/env bash
# One Peregrine binary through `peregrine bench vector` (the flags of
# ../../2026-11-29/vector-100k/scripts/pere.sh): a fresh data dir, the server pinned to CPU 0,
# the bench client to CPU 1, the bench's own binary (the same for every run: BENCH, default
# the server) so only the server differs.
#   run.sh SERVER DATA OUT ROWS NAME   (PORT, BENCH from the environment)
set -euo pipefail
SERVER=$1 DATA=$2 OUT=$3 ROWS=$4 NAME=$5 PORT=${PORT:-47550} BENCH=${BENCH:-$1}
DIR=$(mktemp -d)
taskset -c 0 "$SERVER" serve --listen 127.0.0.1:$PORT --data-dir "$DIR" > "$OUT/$NAME-server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/$NAME-load.txt"
taskset -c 1 "$BENCH" bench vector --endpoint "$NAME=127.0.0.1:$PORT@$PID" \
  --base "$DATA/base.fvecs" --queries "$DATA/query.fvecs" --rows "$ROWS" \
  --setting default --phase 20s --concurrency 16 --load-concurrency 2 \
  --server-note "$NAME: $SERVER; server on CPU 0, bench on CPU 1, other agents' load on both" \
  --out "$OUT" --name "$NAME" 2> "$OUT/$NAME.log"
echo "end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/$NAME-load.txt"
