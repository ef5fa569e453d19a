#!/usr/bin/env bash
# Indexed UPDATEs under Callgrind with its cache simulator, whole server process.
# Usage: cgsim-updates.sh BIN NAME OUT_DIR PORT
# The build serves under valgrind (--cache-sim=yes; LL set to the host's 32 MiB 16-way L3 by LL=,
# since this VM reports a 384 MiB direct-mapped one, which valgrind takes as 512 MiB), is loaded by
# `peregrine bench indexed` (RECORDS rows, SAI on low, high, ts; its load goes through the
# server under valgrind, so the memtable is as a load leaves it), then counted over OPS
# prepared `UPDATE ... SET low = ?, high = ?, ts = ? WHERE id = ?` on random rows, 16 in
# flight, all three values moved to random new ones (updates.py). Writes OUT_DIR/NAME.cg.
# Environment: RECORDS (200000), OPS (20000), LL (33554432,16,64: size, ways, line).
set -euo pipefail
BIN=$1 NAME=$2 OUT=$3 PORT=$4
RECORDS=${RECORDS:-200000} OPS=${OPS:-20000} LL=${LL:-33554432,16,64}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PEREGRINE_VENV:-$HOME/.cache/peregrine/venv}/bin/python"
mkdir -p "$OUT"
d=$(mktemp -d)
uptime >"$OUT/$NAME-uptime.txt"
valgrind --tool=callgrind --cache-sim=yes --LL="$LL" --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$OUT/$NAME.cg" "$BIN" serve --listen "127.0.0.1:$PORT" \
    --admin-listen "127.0.0.1:$((PORT + 1))" --data-dir "$d/data" >"$OUT/$NAME.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 1 1200); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done
"$BIN" bench indexed --endpoint "$NAME=127.0.0.1:$PORT" --rows "$RECORDS" --phases high \
    --phase 1s --settle 0s --concurrency 8 --out "$d" --name load >"$OUT/$NAME-load.txt" 2>&1
curl -s "http://127.0.0.1:$((PORT + 1))/metrics" | grep -E "^peregrine_storage_(tables|memtable)" >"$OUT/$NAME-before-updates.metrics" || true
callgrind_control -z "$pid" >/dev/null
"$PY" "$HERE/updates.py" 127.0.0.1 "$PORT" "$RECORDS" "$OPS" >"$OUT/$NAME-updates.txt" 2>&1
callgrind_control -d measured "$pid" >/dev/null
uptime >>"$OUT/$NAME-uptime.txt"
