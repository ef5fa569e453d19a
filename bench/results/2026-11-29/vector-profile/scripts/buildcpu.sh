#!/usr/bin/env bash
# Native server CPU of CREATE INDEX over ROWS loaded rows until sai_column_indexes says
# built (user + system ticks of 1/100 s from /proc), on a copy of a data dir without index.
#   buildcpu.sh BIN DATA ROWS SRC_DIR [PORT]
set -euo pipefail
BIN=$1 DATA=$2 ROWS=$3 SRC=$4 PORT=${5:-19959}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d /tmp/vec12/bc.XXXX)
cp -a "$SRC/." "$DIR/"
"$BIN" serve --listen 127.0.0.1:$PORT --data-dir "$DIR" > "$DIR.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR" "$DIR.log"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
ticks() { awk '{print $14 + $15}' /proc/$PID/stat; }
a=$(ticks)
~/.cache/peregrine/venv/bin/python "$HERE/cgphases.py" $PORT 0 "$DATA" "$ROWS" build >/dev/null
b=$(ticks)
echo "$BIN $ROWS rows: build $(( b - a )) ticks ($(awk "BEGIN {print ($b - $a) / 100}") CPU s)"
