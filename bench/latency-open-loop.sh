#!/bin/bash
# Issue 16 item 4: point-operation latency at a fixed fraction of peak, open loop.
#
# Peregrine alone on SERVER_CPUS (default CPU 0), the bench client on CLIENT_CPUS (CPU 1). A fresh
# store is loaded with RECORDS YCSB rows; then, per workload in WORKLOADS (default "c a b"):
#   1. peak: a closed-loop run (PEAK_DURATION, CONCURRENCY in flight) gives ops/s;
#   2. open loop: FRACTION (default 0.8) of that peak as `--target-rate` for DURATION, latency
#      measured from each operation's intended start (no coordinated omission), IN_FLIGHT slots.
# The server's own `execute` histogram (`peregrine_request_duration_seconds`, /metrics) is read
# before and after each open-loop run: the share of requests answered within 1 ms, 2.5 ms and
# 10 ms server-side (its bucket bounds), beside the client's percentiles and max.
#
# Usage: BIN=target/release/peregrine OUT=bench/results/<date>/latency bench/latency-open-loop.sh
set -u
BIN=${BIN:-target/release/peregrine}
OUT=${OUT:-bench/results/latency}
PORT=${PORT:-19980}
RECORDS=${RECORDS:-500000}
WORKLOADS=${WORKLOADS:-c a b}
PEAK_DURATION=${PEAK_DURATION:-20s}
DURATION=${DURATION:-60s}
FRACTION=${FRACTION:-0.8}
CONCURRENCY=${CONCURRENCY:-64}
IN_FLIGHT=${IN_FLIGHT:-256}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
admin=$((PORT + 1))
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
d="$OUT/data"
rm -rf "$d"
mkdir -p "$d"

serve() { exec taskset -c "$SERVER_CPUS" "$BIN" serve --listen "127.0.0.1:$PORT" --admin-listen "127.0.0.1:$admin" --data-dir "$d/data"; }
serve >"$OUT/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.2; done

bench() { taskset -c "$CLIENT_CPUS" "$BIN" bench "$@" --records "$RECORDS" --hosts "127.0.0.1:$PORT" --out "$d" --quiet; }
metrics() { curl -s "http://127.0.0.1:$admin/metrics" >"$1"; }
ticks() { awk '{print $14+$15}' "/proc/$pid/stat"; }

bench load --workload c --concurrency 32 --name load >"$OUT/load.txt" 2>&1
# Settle: the load's flushes and compactions (and the idle compaction) finish before measuring.
for _ in $(seq 1 600); do
    metrics "$OUT/settle.metrics"
    if grep -q '^peregrine_storage_compactions_active 0' "$OUT/settle.metrics" &&
        grep -q '^peregrine_storage_tables{level="0"} [01]$' "$OUT/settle.metrics"; then
        break
    fi
    sleep 1
done
bench run --workload c --duration 20s --concurrency "$CONCURRENCY" --name warm >/dev/null 2>&1

for w in $WORKLOADS; do
    bench run --workload "$w" --duration "$PEAK_DURATION" --concurrency "$CONCURRENCY" --name "peak-$w" >"$OUT/peak-$w.txt" 2>&1
    peak=$(awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$OUT/peak-$w.txt")
    rate=$(python3 -c "print(int(float('$peak') * $FRACTION))")
    metrics "$OUT/open-$w.before"
    t0=$(ticks)
    bench run --workload "$w" --duration "$DURATION" --concurrency "$IN_FLIGHT" --target-rate "$rate" --name "open-$w" >"$OUT/open-$w.txt" 2>&1
    t1=$(ticks)
    metrics "$OUT/open-$w.after"
    cp "$d/open-$w.json" "$OUT/open-$w.json" 2>/dev/null
    echo "peak $peak ops/s; target $rate ops/s; server CPU ticks during the open-loop run: $((t1 - t0))" >>"$OUT/open-$w.txt"
    python3 - "$OUT/open-$w.before" "$OUT/open-$w.after" >>"$OUT/open-$w.txt" <<'EOF'
import re, sys
def buckets(path):
    out = {}
    for line in open(path):
        m = re.match(r'peregrine_request_duration_seconds_bucket\{opcode="execute",le="([^"]+)"\} (\S+)', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out
a, b = buckets(sys.argv[1]), buckets(sys.argv[2])
total = b["+Inf"] - a["+Inf"]
print(f"server-side execute requests: {int(total)}")
for le in ("0.0005", "0.001", "0.0025", "0.005", "0.01"):
    n = b[le] - a[le]
    print(f"  within {float(le) * 1000:g} ms: {n / total * 100:.4f}% ({int(total - n)} over)")
EOF
done
echo done
