#!/usr/bin/env bash
# Runs `peregrine bench scan-lane` against a standalone Peregrine under several scan-lane
# settings (one server start per setting, same data dir). Usage:
#   run.sh BIN DATA_DIR RECORDS OUT_DIR
# DATA_DIR must hold stress.standard1 loaded with `peregrine bench load --preset stress-read
# --records RECORDS`. Port 19571 (CQL) and 19572 (admin) are used.
set -euo pipefail
BIN=$1 DATA=$2 RECORDS=$3 OUT=$4
READ_RATE=${READ_RATE:-200}
PHASE=${PHASE:-15s}
ROUNDS=${ROUNDS:-2}
mkdir -p "$OUT"
run_case() { # name, yaml
  local name=$1 yaml=$2 cfg
  cfg=$(mktemp)
  printf '%s\ndata_file_check: off\n' "$yaml" > "$cfg"
  "$BIN" serve --config "$cfg" --listen 127.0.0.1:19571 --data-dir "$DATA" \
    --admin-listen 127.0.0.1:19572 > "$OUT/$name.server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/19571) 2>/dev/null && break; sleep 0.1; done
  "$BIN" bench scan-lane --hosts 127.0.0.1:19571 --records "$RECORDS" --read-rate "$READ_RATE" \
    --phase "$PHASE" --rounds "$ROUNDS" --server-note "$(echo "$yaml" | tr '\n' ' ')" \
    --out "$OUT" --name "$name" 2> "$OUT/$name.bench.log" || true
  kill "$pid"; wait "$pid" || true
  rm -f "$cfg"
}
run_case lane-unlimited   "scan_rows_per_second: 0"
run_case lane-2k          "scan_rows_per_second: 2000"
run_case nolane-like      "scan_rows_per_second: 0
scan_thread_nice: 0"
