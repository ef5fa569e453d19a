#!/usr/bin/env bash
# Issue 13: where the encrypted worst case's extra time goes, in counts that a busy machine does
# not change: per YCSB C read, block cache misses (the server's /metrics), read syscalls and
# bytes read (/proc/PID/io), page faults and user/system CPU (/proc/PID/stat), of two servers of
# one binary, plain and with encryption_at_rest, both with a small block cache (the worst case
# of bench/results/2026-11-28/encryption/), plus the size of their data files.
#   run.sh BIN OUT_DIR   (env: RECORDS=200000 OPS=200000 CACHE=67108864 CONC=32)
set -euo pipefail
BIN=$1 OUT=$2
RECORDS=${RECORDS:-200000} OPS=${OPS:-200000} CACHE=${CACHE:-67108864} CONC=${CONC:-32}
mkdir -p "$OUT"
D=$(mktemp -d)
trap 'kill $P1 $P2 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
printf '1 %s\n' "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" > "$D/keys"
chmod 600 "$D/keys"
printf "admin_listen: 127.0.0.1:7398\nstorage_cache_bytes: $CACHE\n" > "$D/plain.yaml"
printf "admin_listen: 127.0.0.1:7399\nstorage_cache_bytes: $CACHE\nencryption_at_rest:\n  enabled: true\n  key_file: %s/keys\n" "$D" > "$D/enc.yaml"
"$BIN" serve --config "$D/plain.yaml" --listen 127.0.0.1:19142 --data-dir "$D/plain" > "$OUT/plain.log" 2>&1 & P1=$!
"$BIN" serve --config "$D/enc.yaml" --listen 127.0.0.1:19143 --data-dir "$D/enc" > "$OUT/enc.log" 2>&1 & P2=$!
for port in 19142 19143; do
  for _ in $(seq 1 600); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
done
metric() { curl -s "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {s += $2} END {printf "%d", s}'; }
# snapshot NAME PID ADMIN_PORT: one line of counters
snapshot() {
  local io stat
  io=$(awk '{a[$1]=$2} END {printf "%d %d %d", a["syscr:"], a["rchar:"], a["read_bytes:"]}' "/proc/$2/io")
  stat=$(awk '{printf "%d %d %d %d", $10, $12, $14, $15}' "/proc/$2/stat")
  echo "$1 $io $stat $(metric "$3" peregrine_storage_block_cache_hits_total) $(metric "$3" peregrine_storage_block_cache_misses_total)"
}
settle() {  # until no compaction or flush is active or pending (at most 300 s)
  for _ in $(seq 1 300); do
    local busy
    busy=$(curl -s "http://127.0.0.1:$1/metrics" | awk '$1 ~ /^peregrine_storage_(compactions_active|compactions_pending|flushes_pending)$/ {s += $2} END {print s + 0}')
    [ "$busy" = 0 ] && return
    sleep 1
  done
}
for side in plain:19142:7398:$P1 enc:19143:7399:$P2; do
  IFS=: read -r name port admin pid <<< "$side"
  "$BIN" bench load --workload c --records "$RECORDS" --hosts "127.0.0.1:$port" --concurrency 64 \
    --out "$D" --name "load-$name" --quiet > /dev/null
  settle "$admin"
  # A warm pass first, so both measure the steady state of their cache.
  "$BIN" bench run --workload c --records "$RECORDS" --operations "$OPS" --hosts "127.0.0.1:$port" \
    --concurrency "$CONC" --out "$D" --name "warm-$name" --quiet > /dev/null
  before=$(snapshot "$name" "$pid" "$admin")
  "$BIN" bench run --workload c --records "$RECORDS" --operations "$OPS" --hosts "127.0.0.1:$port" \
    --concurrency "$CONC" --out "$OUT" --name "c-$name" --quiet > /dev/null
  after=$(snapshot "$name" "$pid" "$admin")
  echo "$before" >> "$OUT/counters.txt"; echo "$after" >> "$OUT/counters.txt"
done
echo "data files: plain $(du -sb "$D/plain" | cut -f1) bytes, enc $(du -sb "$D/enc" | cut -f1) bytes" | tee "$OUT/sizes.txt"
python3 - "$OUT/counters.txt" "$OPS" <<'PY' | tee "$OUT/per-read.txt"
import sys
rows = [l.split() for l in open(sys.argv[1])]
ops = int(sys.argv[2]); tick = 100.0
names = ["read syscalls", "bytes read (rchar)", "bytes from disk", "minor faults", "major faults",
         "user CPU us", "system CPU us", "block cache hits", "block cache misses"]
print(f"per YCSB C read ({ops} reads):")
print(f"{'':22} {'plain':>12} {'enc':>12}")
per = {}
for i in range(0, len(rows), 2):
    b, a = rows[i], rows[i + 1]
    d = [int(x) - int(y) for x, y in zip(a[1:], b[1:])]
    d[5] = d[5] * 1e6 / tick; d[6] = d[6] * 1e6 / tick
    per[a[0]] = [x / ops for x in d]
for j, n in enumerate(names):
    print(f"{n:22} {per['plain'][j]:12.3f} {per['enc'][j]:12.3f}")
PY
