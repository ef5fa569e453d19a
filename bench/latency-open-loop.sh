#!/bin/bash
# Issue 16 item 4: point-operation latency at a fixed fraction of peak, open loop.
#
# Peregrine alone on SERVER_CPUS (default CPU 0), the bench client on CLIENT_CPUS (CPU 1). A fresh
# store is loaded with RECORDS YCSB rows; then, per workload in WORKLOADS (default "c a b"):
#   1. peak: a closed-loop run (PEAK_DURATION, CONCURRENCY in flight) gives ops/s;
#   2. open loop: FRACTION (default 0.8) of that peak as `--target-rate` for DURATION, latency
#      measured from each operation's intended start (no coordinated omission), IN_FLIGHT slots.
#      FRACTIONS="0.5 0.6 0.8" runs one open loop per fraction after the one peak run, in that
#      order (files open-<workload>-<fraction>.*; with one fraction, open-<workload>.*).
#      RATE=<ops/s> runs the open loop at that rate instead (whatever the peak), so that two
#      builds can be compared at the same load.
# The server's own `execute` histogram (`peregrine_request_duration_seconds`, /metrics) is read
# before and after each open-loop run: the share of requests answered within 1 ms, 2.5 ms and
# 10 ms server-side (its bucket bounds), beside the client's percentiles and max, and the server's
# CPU time during the run split by thread name (request cores, fjall's flush/compaction workers,
# the storage ticker...), read from /proc/<pid>/task/*/stat.
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
FRACTIONS=${FRACTIONS:-$FRACTION}
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
# One line per thread: name (spaces as _) and its user+system ticks; a thread's name is in
# parentheses in field 2 and may hold spaces, so fields are counted from the closing one.
thread_ticks() {
    for f in /proc/"$pid"/task/*/stat; do
        sed -E 's/^[0-9]+ \((.*)\) (.*)$/\1\t\2/' "$f" 2>/dev/null
    done | awk -F'\t' '{split($2, a, " "); gsub(" ", "_", $1); print $1, a[12] + a[13]}'
}

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
    for fraction in $FRACTIONS; do
        name="open-$w"
        [ "$FRACTIONS" = "$fraction" ] || name="open-$w-$fraction"
        rate=${RATE:-$(python3 -c "print(int(float('$peak') * $fraction))")}
        metrics "$OUT/$name.before"
        thread_ticks >"$OUT/$name.threads-before"
        t0=$(ticks)
        bench run --workload "$w" --duration "$DURATION" --concurrency "$IN_FLIGHT" --target-rate "$rate" --name "$name" >"$OUT/$name.txt" 2>&1
        t1=$(ticks)
        thread_ticks >"$OUT/$name.threads-after"
        metrics "$OUT/$name.after"
        cp "$d/$name.json" "$OUT/$name.json" 2>/dev/null
        echo "peak $peak ops/s; fraction $fraction; target $rate ops/s; server CPU ticks during the open-loop run: $((t1 - t0))" >>"$OUT/$name.txt"
        python3 - "$OUT/$name" "$DURATION" >>"$OUT/$name.txt" <<'EOF'
import collections, os, re, sys
base, duration = sys.argv[1], sys.argv[2]
def buckets(path):
    out = {}
    for line in open(path):
        m = re.match(r'peregrine_request_duration_seconds_bucket\{opcode="execute",le="([^"]+)"\} (\S+)', line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out
a, b = buckets(base + ".before"), buckets(base + ".after")
total = b["+Inf"] - a["+Inf"]
print(f"server-side execute requests: {int(total)}")
for le in ("0.0005", "0.001", "0.0025", "0.005", "0.01"):
    n = b[le] - a[le]
    print(f"  within {float(le) * 1000:g} ms: {n / total * 100:.4f}% ({int(total - n)} over)")
# Per thread name: ticks at the end less ticks at the start (threads that ended are not counted).
def threads(path):
    c = collections.Counter()
    for line in open(path):
        if line.strip():
            name, t = line.split()
            c[name] += int(t)
    return c
before, after = threads(base + ".threads-before"), threads(base + ".threads-after")
hz = os.sysconf("SC_CLK_TCK")
m = re.fullmatch(r"(\d+)(ms|s|m)", duration)
secs = int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60}[m.group(2)] if m else None
print("server CPU by thread name during the run (seconds; share of one core):")
for name in sorted(after, key=lambda n: before[n] - after[n]):
    used = max(after[name] - before[name], 0) / hz
    if used > 0:
        share = f" ({used / secs * 100:.1f}%)" if secs else ""
        print(f"  {name}: {used:.2f}{share}")
EOF
    done
done
echo done
