#!/usr/bin/env bash
# Server instructions per indexed UPDATE (Callgrind), before and after blind writes to indexed
# tables. Usage: instructions.sh BIN OUT_DIR
# One release binary serves twice under valgrind, at the same time: "old" with
# IDX11B_READ_INDEXED=1 (a measurement-only switch of that build, not committed: writes to
# indexed tables read their row as main does), "new" without. Each is loaded by
# `peregrine bench indexed` (RECORDS rows, `id bigint PRIMARY KEY, low int, high bigint, ts
# bigint, payload text`, SAI on low, high, ts; the load's INSERTs write every column, so they
# read the row in both), then counted over OPS prepared
# `UPDATE ... SET low = ?, high = ?, ts = ? WHERE id = ?` (all three indexed values change; 16
# in flight, Python driver) on random rows. Whole process, every thread (flushes and
# compactions included). Environment: RECORDS (100000), OPS (5000), PORT_BASE (19960).
set -euo pipefail
BIN=$1 OUT=$2
RECORDS=${RECORDS:-100000} OPS=${OPS:-5000} PORT_BASE=${PORT_BASE:-19960}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PEREGRINE_VENV:-$HOME/.cache/peregrine/venv}/bin/python"
mkdir -p "$OUT"
profile() {
    local name=$1 port=$2 d pid
    d=$(mktemp -d)
    env $3 valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
        --callgrind-out-file="$OUT/$name.cg" "$BIN" serve --listen "127.0.0.1:$port" \
        --data-dir "$d/data" >"$OUT/$name.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
    "$BIN" bench indexed --endpoint "$name=127.0.0.1:$port" --rows "$RECORDS" --phases high \
        --phase 1s --settle 0s --concurrency 8 --out "$d" --name load >"$OUT/$name-load.txt" 2>&1
    callgrind_control -z "$pid" >/dev/null
    "$PY" "$HERE/updates.py" 127.0.0.1 "$port" "$RECORDS" "$OPS" >"$OUT/$name-updates.txt" 2>&1
    callgrind_control -d measured "$pid" >/dev/null
    kill "$pid"; wait "$pid" || true
    rm -rf "$d"
}
profile old "$PORT_BASE" IDX11B_READ_INDEXED=1 &
profile new "$((PORT_BASE + 1))" IDX11B_UNUSED=1 &
wait
python3 "$HERE/../../../callgrind_diff.py" "$OUT/old.cg.1" "$OUT/new.cg.1" "$OPS"
