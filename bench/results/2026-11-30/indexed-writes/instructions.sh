#!/usr/bin/env bash
# Server instructions (Callgrind, whole process) per indexed UPDATE and per YCSB C read of one
# release build. Usage: instructions.sh BIN NAME OUT_DIR [updates|ycsbc]... writes
# OUT_DIR/<what>-NAME.cg.1; compare two builds with
# `python3 bench/callgrind_diff.py OUT/<what>-old.cg.1 OUT/<what>-new.cg.1 <operations>`.
# updates: the build serves under valgrind, loaded by `peregrine bench indexed` (RECORDS rows,
#   SAI on low, high, ts), then counted over OPS prepared
#   `UPDATE ... SET low = ?, high = ?, ts = ? WHERE id = ?` on random rows (all three indexed
#   values change; 16 in flight; ../../2026-11-29/indexed-blind-rows/updates.py).
# ycsbc: YCSB load of YCSB_RECORDS, 20,000 warm-up reads, then YCSB_OPS measured reads at
#   concurrency 32 (the method of ../index-seek/README.md).
# Environment: RECORDS (100000), OPS (5000), YCSB_RECORDS (200000), YCSB_OPS (50000),
# PORT_BASE (47600).
set -euo pipefail
BIN=$1 NAME=$2 OUT=$3
shift 3
RECORDS=${RECORDS:-100000} OPS=${OPS:-5000} PORT_BASE=${PORT_BASE:-47600}
YCSB_RECORDS=${YCSB_RECORDS:-200000} YCSB_OPS=${YCSB_OPS:-50000}
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PEREGRINE_VENV:-$HOME/.cache/peregrine/venv}/bin/python"
mkdir -p "$OUT"
serve() { # name bin port dir: starts the server under valgrind (pid in $pid), waits till it listens
    valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
        --callgrind-out-file="$OUT/$1.cg" "$2" serve --listen "127.0.0.1:$3" \
        --data-dir "$4/data" >"$OUT/$1.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$3") 2>/dev/null && break; sleep 0.2; done
}
updates() { # name bin port
    local d pid
    d=$(mktemp -d)
    serve "$1" "$2" "$3" "$d"
    "$2" bench indexed --endpoint "$1=127.0.0.1:$3" --rows "$RECORDS" --phases high \
        --phase 1s --settle 0s --concurrency 8 --out "$d" --name load >"$OUT/$1-load.txt" 2>&1
    callgrind_control -z "$pid" >/dev/null
    "$PY" "$HERE/../../2026-11-29/indexed-blind-rows/updates.py" 127.0.0.1 "$3" "$RECORDS" "$OPS" \
        >"$OUT/$1-updates.txt" 2>&1
    callgrind_control -d measured "$pid" >/dev/null
    kill "$pid"; wait "$pid" || true
    rm -rf "$d"
}
ycsbc() { # name bin port
    local d pid
    d=$(mktemp -d)
    serve "$1" "$2" "$3" "$d"
    local run=("$2" bench run --workload c --records "$YCSB_RECORDS" --concurrency 32 --hosts "127.0.0.1:$3" --out "$d" --quiet)
    "$2" bench load --workload c --records "$YCSB_RECORDS" --hosts "127.0.0.1:$3" --concurrency 32 \
        --out "$d" --name load --quiet >"$OUT/$1-load.txt" 2>&1
    "${run[@]}" --operations 20000 --name warm >/dev/null 2>&1
    callgrind_control -z "$pid" >/dev/null
    "${run[@]}" --operations "$YCSB_OPS" --name run >"$OUT/$1-run.txt" 2>&1
    callgrind_control -d measured "$pid" >/dev/null
    kill "$pid"; wait "$pid" || true
    rm -rf "$d"
}
port=$PORT_BASE
for what in "${@:-updates}"; do
    case $what in
        updates | ycsbc) ;;
        *) echo "unknown: $what" >&2; exit 2 ;;
    esac
    uptime >"$OUT/$what-$NAME-uptime.txt"
    "$what" "$what-$NAME" "$BIN" "$port" &
    port=$((port + 1))
done
wait
