#!/usr/bin/env bash
# One Peregrine binary through `peregrine bench vector` at 100k (the flags of
# ../vector-defaults/run.sh): a fresh data dir, the server pinned to CPU 0, the bench client to
# CPU 1, the same bench binary for every run (BENCH), so only the server differs.
#   run.sh SERVER DATA OUT ROWS NAME   (PORT, BENCH, EXTRA from the environment)
# PROFILE=1: also `perf record -e cpu-clock -g` on the server for 15 s of the first query phase
# (from 3 s after the inserts end), written to OUT/NAME.perf.data; such runs are not the
# before/after figures.
set -euo pipefail
SERVER=$1 DATA=$2 OUT=$3 ROWS=$4 NAME=$5 PORT=${PORT:-47900} BENCH=${BENCH:-$1}
DIR=$(mktemp -d)
taskset -c 0 "$SERVER" serve --listen 127.0.0.1:$PORT --data-dir "$DIR" > "$OUT/$NAME-server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
echo "start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" > "$OUT/$NAME-load.txt"
if [ "${PROFILE:-0}" = 1 ]; then
  (
    until grep -q "rows/s, " "$OUT/$NAME.log" 2>/dev/null; do sleep 0.5; done
    sleep 3
    perf record -e cpu-clock -g -p $PID -o "$OUT/$NAME.perf.data" -- sleep 15 2> "$OUT/$NAME.perf.log"
  ) &
  PERF=$!
fi
# shellcheck disable=SC2086
taskset -c 1 "$BENCH" bench vector --endpoint "$NAME=127.0.0.1:$PORT@$PID" \
  --base "$DATA/base.fvecs" --queries "$DATA/query.fvecs" --rows "$ROWS" \
  --setting default --phase 20s --concurrency 16 --load-concurrency 2 ${EXTRA:-} \
  --server-note "$NAME: $SERVER; server on CPU 0, bench on CPU 1" \
  --out "$OUT" --name "$NAME" 2> "$OUT/$NAME.log"
echo "end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/$NAME-load.txt"
[ -z "${PERF:-}" ] || wait "$PERF"
