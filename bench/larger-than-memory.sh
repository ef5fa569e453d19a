#!/bin/bash
# Issue 16 item 5: YCSB C and B on a data set 10x the storage cache, beside the same data held in
# the cache.
#
# Peregrine alone on SERVER_CPUS (default CPU 0), the bench client on CLIENT_CPUS (CPU 1). RECORDS
# YCSB rows (1 KB each) are loaded once into a fresh store and left to settle (flushes and
# compactions done). Then, for each cache size in CACHES (default: SMALL_CACHE, the data set's
# tenth, then BIG_CACHE, more than the data), the server restarts on the same data with
# `storage_cache_bytes` set to it, warms with WARM of YCSB C, and runs for each workload in
# WORKLOADS and key distribution in DISTRIBUTIONS:
#   1. closed loop, CONCURRENCY in flight, DURATION: throughput and the client's percentiles;
#   2. open loop at RATE_FRACTION of the first cache's closed-loop throughput for that case (the
#      same rate for every cache), IN_FLIGHT slots, DURATION, latency from each operation's
#      intended start: the p99 of both caches at the same load. RATES ("c-zipfian:60000
#      b-uniform:30000 ...") gives the rates instead, to compare with another run's data set
#      (the in-memory case as its own smaller data set at the same rates).
# The server's RSS is sampled every second from its start to its end (`rss-<cache>.tsv`), and
# the maximum of each phase is reported beside the budgets it is configured with, as are the
# bytes the server read from the device in each phase (`/proc/<pid>/io` read_bytes).
#
# Data on the device: the 10 GB store fits this machine's page cache, so by default block-cache
# misses are served from memory. MEMORY_LIMIT=<bytes> runs the server in a cgroup (v1 memory
# controller, `/sys/fs/cgroup/memory`) limited to that many bytes, which count its page cache
# too, after dropping the page cache (needs root): the data the cache misses is then read
# from the device. The limit is also a hard check of the RSS budget (the kernel kills a server
# that outgrows it: the run then stops with "server died").
#
# Usage: BIN=target/release/peregrine OUT=bench/results/<date>/larger-than-memory \
#        RECORDS=5000000 SMALL_CACHE=536870912 BIG_CACHE=8589934592 bench/larger-than-memory.sh
set -u
BIN=${BIN:-target/release/peregrine}
OUT=${OUT:-bench/results/larger-than-memory}
PORT=${PORT:-19990}
RECORDS=${RECORDS:-10000000}
SMALL_CACHE=${SMALL_CACHE:-1073741824}
BIG_CACHE=${BIG_CACHE:-17179869184}
CACHES=${CACHES:-$SMALL_CACHE $BIG_CACHE}
MEMTABLE=${MEMTABLE:-67108864}
WORKLOADS=${WORKLOADS:-c b}
DISTRIBUTIONS=${DISTRIBUTIONS:-zipfian uniform}
WARM=${WARM:-60s}
DURATION=${DURATION:-30s}
RATE_FRACTION=${RATE_FRACTION:-0.8}
CONCURRENCY=${CONCURRENCY:-64}
IN_FLIGHT=${IN_FLIGHT:-256}
SERVER_CPUS=${SERVER_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
KEEP_DATA=${KEEP_DATA:-0}
admin=$((PORT + 1))
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
d=${DATA:-$OUT/data}
pid=
sampler=

stop_server() {
    [ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    pid= sampler=
}
cleanup() {
    stop_server
    [ "$KEEP_DATA" = 1 ] || rm -rf "$d"
}
trap cleanup EXIT

# start CACHE NAME: the server on the data directory with that block cache, its RSS sampled.
start() {
    local cache=$1 name=$2
    cat >"$OUT/$name.yaml" <<EOF
storage_cache_bytes: $cache
storage_memtable_bytes: $MEMTABLE
EOF
    local cg=
    if [ -n "${MEMORY_LIMIT:-}" ]; then
        cg=/sys/fs/cgroup/memory/peregrine-ltm-$PORT
        mkdir -p "$cg" && echo "$MEMORY_LIMIT" >"$cg/memory.limit_in_bytes" || exit 1
        sync && echo 3 >/proc/sys/vm/drop_caches || exit 1
    fi
    # The shell joins the cgroup (when there is one) and becomes the server.
    sh -c '[ -z "$1" ] || echo $$ >"$1/cgroup.procs"; shift; exec "$@"' sh "$cg" \
        taskset -c "$SERVER_CPUS" "$BIN" serve --config "$OUT/$name.yaml" --listen "127.0.0.1:$PORT" \
        --admin-listen "127.0.0.1:$admin" --data-dir "$d/data" >"$OUT/server-$name.log" 2>&1 &
    pid=$!
    (while kill -0 "$pid" 2>/dev/null; do
        echo "$(date +%s) $(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null)"
        sleep 1
    done) >"$OUT/rss-$name.tsv" &
    sampler=$!
    for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return; sleep 0.2; done
    echo "server did not start" >&2
    exit 1
}
phase() {
    kill -0 "$pid" 2>/dev/null || { echo "server died" >&2; exit 1; }
    echo "$(date +%s) $* $(awk '/^read_bytes/ {print $2}' "/proc/$pid/io")" >>"$OUT/phases.tsv"
}
bench() { taskset -c "$CLIENT_CPUS" "$BIN" bench "$@" --records "$RECORDS" --hosts "127.0.0.1:$PORT" --out "$d" --quiet; }
metrics() { curl -s "http://127.0.0.1:$admin/metrics"; }
ticks() { awk '{print $14+$15}' "/proc/$pid/stat"; }
settle() {
    for _ in $(seq 1 3600); do
        m=$(metrics)
        grep -q '^peregrine_storage_compactions_active 0' <<<"$m" &&
            grep -q '^peregrine_storage_tables{level="0"} [01]$' <<<"$m" && return
        sleep 1
    done
}
# The second of a run with the slowest operation (the bench's JSON timeline): a stall shows there.
worst() {
    python3 - "$d/$1.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["timeline"]
w = max(t, key=lambda s: s["max_ms"])
print("worst second: %d of %d, max %s ms, p99 %s ms, %d ops" % (w["second"], len(t), w["max_ms"], w["p99_ms"], w["total"]))
PY
}
field() { awk -v f="$2" '$1 == "overall" {gsub(",", "", $f); print $f}' "$1"; }

: >"$OUT/phases.tsv"
if [ ! -d "$d/data" ]; then
    mkdir -p "$d"
    start "$SMALL_CACHE" load
    phase load-start
    bench load --workload c --concurrency 32 --name load >"$OUT/load.txt" 2>&1
    phase load-end
    settle
    phase settled
    metrics | grep -E '^peregrine_storage_(tables|compactions_total|disk)' >"$OUT/settled.metrics"
    stop_server
fi
du -sb "$d/data" >"$OUT/data-size.txt"

declare -A rates
for r in ${RATES:-}; do rates[${r%%:*}]=${r##*:}; done
first=1
for cache in $CACHES; do
    start "$cache" "cache-$cache"
    phase "cache-$cache warm"
    bench run --workload c --duration "$WARM" --concurrency "$CONCURRENCY" --name warm >"$OUT/warm-$cache.txt" 2>&1
    for w in $WORKLOADS; do
        for dist in $DISTRIBUTIONS; do
            case=$w-$dist
            phase "cache-$cache closed-$case"
            t0=$(ticks)
            bench run --workload "$w" --distribution "$dist" --duration "$DURATION" --concurrency "$CONCURRENCY" \
                --name "closed-$case" >"$OUT/closed-$case-$cache.txt" 2>&1
            echo "server CPU ticks: $(($(ticks) - t0))" >>"$OUT/closed-$case-$cache.txt"
            worst "closed-$case" >>"$OUT/closed-$case-$cache.txt"
            if [ "$first" = 1 ] && [ -z "${rates[$case]:-}" ]; then
                rates[$case]=$(python3 -c "print(int(float('$(field "$OUT/closed-$case-$cache.txt" 4)') * $RATE_FRACTION))")
            fi
            phase "cache-$cache open-$case"
            metrics >"$OUT/open-$case-$cache.before"
            t0=$(ticks)
            bench run --workload "$w" --distribution "$dist" --duration "$DURATION" --concurrency "$IN_FLIGHT" \
                --target-rate "${rates[$case]}" --name "open-$case" >"$OUT/open-$case-$cache.txt" 2>&1
            echo "server CPU ticks: $(($(ticks) - t0))" >>"$OUT/open-$case-$cache.txt"
            worst "open-$case" >>"$OUT/open-$case-$cache.txt"
            metrics >"$OUT/open-$case-$cache.after"
        done
    done
    phase "cache-$cache end"
    metrics | grep -E '^peregrine_storage_(cache|block)' >"$OUT/cache-$cache.metrics"
    stop_server
    first=0
done

python3 - "$OUT" "$MEMTABLE" $CACHES >"$OUT/summary.txt" <<'EOF'
import os, sys
out, memtable, caches = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def overall(path):
    """The `overall` line of a bench report: ops/s and the percentiles, as printed."""
    for line in open(path):
        if line.split()[:1] == ["overall"]:
            return line.split()
    return None
def buckets(path):
    """The server's `execute` latency histogram (cumulative counts by bucket bound)."""
    import re
    found = {}
    for line in open(path):
        m = re.match(r'peregrine_request_duration_seconds_bucket\{opcode="execute",le="([^"]+)"\} (\S+)', line)
        if m:
            found[m.group(1)] = float(m.group(2))
    return found
data = open(os.path.join(out, "data-size.txt")).read().split()[0]
print(f"data directory: {int(data) / 2**30:.2f} GiB")
cases = sorted({f[len("closed-"):].rsplit("-", 1)[0] for f in os.listdir(out) if f.startswith("closed-")})
for kind in ("closed", "open"):
    print(f"\n{kind} loop (the bench's overall line per cache: op, count, ops/s and latency columns as it prints them)")
    for case in cases:
        for cache in caches:
            p = os.path.join(out, f"{kind}-{case}-{cache}.txt")
            if os.path.exists(p):
                o = overall(p)
                ticks = [l.split()[-1] for l in open(p) if l.startswith("server CPU ticks")]
                extra = f"  server CPU {int(ticks[0]) / 100:.1f} s" if ticks else ""
                extra += "".join(f"  ({l.strip()})" for l in open(p) if l.startswith("worst second"))
                if kind == "open" and os.path.exists(p[:-4] + ".after"):
                    a, b = buckets(p[:-4] + ".before"), buckets(p[:-4] + ".after")
                    n = b["+Inf"] - a["+Inf"]
                    extra += "  server-side within " + ", ".join(
                        f"{float(le) * 1000:g} ms {(b[le] - a[le]) / n * 100:.3f}%" for le in ("0.001", "0.0025", "0.01"))
                print(f"  {case:16} cache {int(cache) / 2**30:6.2f} GiB  {' '.join(o) if o else '(no overall line)'}{extra}")
# Each line: time, the phase's name, the bytes the server had read from the device by then.
phases = [(int(l.split()[0]), " ".join(l.split()[1:-1]), int(l.split()[-1])) for l in open(os.path.join(out, "phases.tsv"))]
print("\nserver RSS, max per phase (MiB), against the cache + 2 memtables; MiB read from the device in the phase")
for i, (t0, name, read0) in enumerate(phases):
    t1 = phases[i + 1][0] if i + 1 < len(phases) else 1 << 62
    server = lambda n: n.split()[0] if n.startswith("cache-") else "load"
    same = i + 1 < len(phases) and server(phases[i + 1][1]) == server(name)
    read = f"  read {(phases[i + 1][2] - read0) / 2**20:8.0f} MiB" if same else ""
    # A phase belongs to the server that ran it: the load's or one cache's.
    cache = name.split()[0] if name.startswith("cache-") else "load"
    p = os.path.join(out, f"rss-{cache}.tsv")
    if os.path.exists(p):
        vals = [int(v) for t, *r in (l.split() for l in open(p)) if r and t0 <= int(t) < t1 for v in r]
        if vals:
            budget = (int(cache.split("-")[1]) if cache != "load" else int(caches[0])) + 2 * memtable
            print(f"  {name:36} max {max(vals) / 1024:8.0f} MiB  budget {budget / 2**20:8.0f} MiB  ({max(vals) * 1024 / budget * 100:.0f}%){read}")
EOF
cat "$OUT/summary.txt"
