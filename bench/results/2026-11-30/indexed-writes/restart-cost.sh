#!/usr/bin/env bash
# Server instructions (Callgrind, whole process) per indexed UPDATE on a table of RECORDS rows
# loaded natively. Usage: restart-cost.sh BIN NAME OUT_DIR PORT
# 1. `BIN serve` natively; `peregrine bench indexed --rows RECORDS` loads the table (SAI on low,
#    high, ts); WARM_NATIVE prepared UPDATEs on random rows (updates.py, seed 1) fill the
#    memtable with partial rows and entries, as a write phase does.
# 2. kill -9 (no flush at shutdown: the journal replays what the memtable held), serve again
#    under valgrind --tool=callgrind; 2,000 UPDATEs (seed 2) warm it.
# 3. Counted: OPS UPDATEs (seed 3), dumped as OUT_DIR/NAME.cg.<n>. Compare two builds with
#    `python3 bench/callgrind_diff.py OUT/a.cg.1 OUT/b.cg.1 OPS`.
# Environment: RECORDS (100000), OPS (5000), WARM_NATIVE (50000).
set -euo pipefail
BIN=$1 NAME=$2 OUT=$3 PORT=$4
RECORDS=${RECORDS:-100000} OPS=${OPS:-5000} WARM_NATIVE=${WARM_NATIVE:-50000}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PEREGRINE_VENV:-$HOME/.cache/peregrine/venv}/bin/python"
mkdir -p "$OUT"
d=$(mktemp -d)
wait_port() { for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return; sleep 0.2; done; }
"$BIN" serve --listen "127.0.0.1:$PORT" --data-dir "$d/data" >"$OUT/$NAME.native.log" 2>&1 &
pid=$!; wait_port
"$BIN" bench indexed --endpoint "$NAME=127.0.0.1:$PORT" --rows "$RECORDS" --phases high \
    --phase 1s --settle 0s --concurrency 8 --out "$d" --name load >"$OUT/$NAME-load.txt" 2>&1
"$PY" "$HERE/updates.py" 127.0.0.1 "$PORT" "$RECORDS" "$WARM_NATIVE" 1 >"$OUT/$NAME-warm-native.txt" 2>&1
kill -9 "$pid"; wait "$pid" || true
uptime >"$OUT/$NAME-uptime.txt"
valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$OUT/$NAME.cg" "$BIN" serve --listen "127.0.0.1:$PORT" \
    --data-dir "$d/data" >"$OUT/$NAME.log" 2>&1 &
pid=$!; wait_port
"$PY" "$HERE/updates.py" 127.0.0.1 "$PORT" "$RECORDS" 2000 2 >"$OUT/$NAME-warm.txt" 2>&1
callgrind_control -z "$pid" >/dev/null
"$PY" "$HERE/updates.py" 127.0.0.1 "$PORT" "$RECORDS" "$OPS" 3 >"$OUT/$NAME-updates.txt" 2>&1
callgrind_control -d measured "$pid" >/dev/null
kill "$pid"; wait "$pid" || true
du -sh "$d" >"$OUT/$NAME.du"
rm -rf "$d"
