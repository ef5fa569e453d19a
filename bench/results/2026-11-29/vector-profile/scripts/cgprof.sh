#!/usr/bin/env bash
# Server instructions of the vector phases (cgphases.py) under Callgrind, on a copy of a data
# dir with ROWS rows loaded and no index (made once natively with `cgphases.py ... load`).
#   cgprof.sh BIN DATA ROWS SRC_DIR OUT [PHASES] [PORT]
# VG_EXTRA: more valgrind options (e.g. --cache-sim=yes --LL=33554432,16,64).
# Profiles: OUT/cg.<n> (one per phase, callgrind_annotate reads them), OUT/phases.txt.
set -euo pipefail
BIN=$1 DATA=$2 ROWS=$3 SRC=$4 OUT=$5 PHASES=${6:-build,query,insert} PORT=${7:-19952}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=~/.cache/peregrine/venv/bin/python
mkdir -p "$OUT"
DIR=$(mktemp -d /tmp/vec12/cgrun.XXXX)
cp -a "$SRC/." "$DIR/"
valgrind --tool=callgrind --instr-atstart=no ${VG_EXTRA:-} --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$OUT/cg" "$BIN" serve --listen 127.0.0.1:$PORT --data-dir "$DIR" \
    > "$OUT/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 3000); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.2; done
callgrind_control -i on $PID > /dev/null
$PY "$HERE/cgphases.py" $PORT $PID "$DATA" "$ROWS" "$PHASES" --queries "${QUERIES:-200}" \
    --inserts "${INSERTS:-500}" > "$OUT/phases.txt"
