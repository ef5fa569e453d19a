#!/bin/bash
# Issue 16 item 7: a cold pass through the proxy (every read a cache miss) against the same pass
# straight to Cassandra.
#
# A real Cassandra 5.0.9 (scripts/cassandra.sh, fresh, on CASS_CPUS: default CPU 0, so its JVM
# sizes its pools for one core) holds RECORDS YCSB rows. The proxy (BIN, its default DRAM cache)
# and the bench client share CLIENT_CPUS (CPU 1). After WARM_PASSES direct passes (Cassandra's
# JIT, its caches and the page cache), ROUNDS rounds each start a fresh proxy (an empty cache)
# and run two passes of RECORDS reads with `--distribution sequential` (each key once, in the
# scrambled key order YCSB gives them), one through the proxy and one direct, the order
# alternating round by round. Reported per pass: ops/s, the CPU seconds of Cassandra and of the
# proxy, and the proxy's hits and misses (a cold pass is all misses).
#
# PROXY_BIN (default BIN) is the proxy's binary. With PROXY_BIN_B, another proxy build, each
# round also makes a pass through a fresh proxy of that build (`proxyb-<r>`), the rounds
# alternating "proxy direct proxyb" and "proxyb direct proxy": an A/B of two proxy builds on one
# settled Cassandra, each pass of A beside a pass of B.
#
# Usage: BIN=target/release/peregrine OUT=bench/results/<date>/proxy-cold-pass bench/proxy-cold-pass.sh
#        PROXY_BIN=old/peregrine PROXY_BIN_B=new/peregrine BIN=... OUT=... bench/proxy-cold-pass.sh
set -u
BIN=${BIN:-target/release/peregrine}
PROXY_BIN=${PROXY_BIN:-$BIN}
PROXY_BIN_B=${PROXY_BIN_B:-}
OUT=${OUT:-bench/results/proxy-cold-pass}
CPORT=${CPORT:-9976}
PPORT=${PPORT:-19980}
RECORDS=${RECORDS:-100000}
ROUNDS=${ROUNDS:-3}
WARM_PASSES=${WARM_PASSES:-2}
CONCURRENCY=${CONCURRENCY:-32}
CASS_CPUS=${CASS_CPUS:-0}
CLIENT_CPUS=${CLIENT_CPUS:-1}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
BIN=$(abs "$BIN")
PROXY_BIN=$(abs "$PROXY_BIN")
[ -n "$PROXY_BIN_B" ] && PROXY_BIN_B=$(abs "$PROXY_BIN_B")
root=$(cd "$(dirname "$0")/.." && pwd)
d=$OUT/data
rm -rf "$d"; mkdir -p "$d"
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    "$root/scripts/cassandra.sh" stop --port "$CPORT" >/dev/null 2>&1
    rm -rf "$d"
}
trap cleanup EXIT

taskset -c "$CASS_CPUS" "$root/scripts/cassandra.sh" start --port "$CPORT" --clean >"$OUT/cassandra-start.txt" 2>&1 || {
    echo "Cassandra did not start" >&2; exit 1; }
cpid=$(pgrep -f "cassandra-run-$CPORT" | head -1)
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
bench() { taskset -c "$CLIENT_CPUS" "$BIN" bench "$@" --records "$RECORDS" --out "$d" --quiet; }
bench load --workload c --drop --hosts "127.0.0.1:$CPORT" --concurrency 64 --name load >"$OUT/load.txt" 2>&1
# Read and write system calls of a process so far (`/proc/<pid>/io`; Cassandra reads and
# writes its sockets with read(2)/write(2)-family calls, which these count).
calls() { awk '/^sysc[rw]/ {printf "%s ", $2}' "/proc/$1/io"; }
pass() { # NAME PORT: one sequential pass; prints ops/s, both processes' CPU seconds, and
         # Cassandra's read and write calls per operation
    local name=$1 port=$2 c0 p0=0 p1=0 io0 io1
    c0=$(ticks "$cpid"); [ -n "$pid" ] && p0=$(ticks "$pid")
    io0=$(calls "$cpid")
    bench run --workload c --distribution sequential --operations "$RECORDS" --concurrency "$CONCURRENCY" \
        --hosts "127.0.0.1:$port" --name "$name" >"$OUT/$name.txt" 2>&1
    local c1; c1=$(ticks "$cpid"); [ -n "$pid" ] && p1=$(ticks "$pid")
    io1=$(calls "$cpid")
    local ops; ops=$(awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$OUT/$name.txt")
    echo "$name ops/s $ops cassandra_cpu_s $(awk "BEGIN {print ($c1 - $c0) / 100}") proxy_cpu_s $(awk "BEGIN {print ($p1 - $p0) / 100}")" \
        "cassandra_reads_per_op $(echo "$io0 $io1" | awk -v n="$RECORDS" '{printf "%.3f", ($3 - $1) / n}')" \
        "cassandra_writes_per_op $(echo "$io0 $io1" | awk -v n="$RECORDS" '{printf "%.3f", ($4 - $2) / n}')"
}
for i in $(seq 1 "$WARM_PASSES"); do pass "warm-$i" "$CPORT" >>"$OUT/passes.txt"; done
proxy_pass() { # NAME BIN: a pass through a fresh proxy of BIN (an empty cache)
    taskset -c "$CLIENT_CPUS" "$2" serve --upstream "127.0.0.1:$CPORT" --listen "127.0.0.1:$PPORT" \
        --admin-listen "127.0.0.1:$((PPORT + 1))" --data-dir "$d/$1" >"$OUT/$1.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PPORT") 2>/dev/null && break; sleep 0.2; done
    pass "$1" "$PPORT"
    curl -s "http://127.0.0.1:$((PPORT + 1))/metrics" | grep -E "^peregrine_proxy_cache_(hits|misses)" >"$OUT/$1.metrics"
    kill "$pid"; wait "$pid" 2>/dev/null; pid=
}
for r in $(seq 1 "$ROUNDS"); do
    if [ -n "$PROXY_BIN_B" ]; then
        if [ $((r % 2)) = 1 ]; then order="proxy direct proxyb"; else order="proxyb direct proxy"; fi
    elif [ $((r % 2)) = 1 ]; then order="proxy direct"; else order="direct proxy"; fi
    for p in $order; do
        case $p in
            proxy) proxy_pass "proxy-$r" "$PROXY_BIN" ;;
            proxyb) proxy_pass "proxyb-$r" "$PROXY_BIN_B" ;;
            direct) pass "direct-$r" "$CPORT" ;;
        esac >>"$OUT/passes.txt"
    done
done
python3 - "$OUT" "$ROUNDS" >"$OUT/summary.txt" <<'EOF'
import sys, statistics
out, rounds = sys.argv[1], int(sys.argv[2])
p = {l.split()[0]: l.split() for l in open(f"{out}/passes.txt")}
calls = lambda p: f"{float(p[8]):.2f}+{float(p[10]):.2f}"
for proxy in ("proxy", "proxyb"):
    if f"{proxy}-1" not in p:
        continue
    print(f"{proxy}:")
    print(f"round  direct ops/s  {proxy} ops/s  {proxy}/direct  cassandra CPU s direct/{proxy}  {proxy} CPU s  {proxy} hits/misses  cassandra reads+writes per op direct/{proxy}")
    ratios = []
    for r in range(1, rounds + 1):
        d, x = p[f"direct-{r}"], p[f"{proxy}-{r}"]
        m = dict(l.split() for l in open(f"{out}/{proxy}-{r}.metrics"))
        hits = sum(float(v) for k, v in m.items() if "hits" in k)
        misses = sum(float(v) for k, v in m.items() if "misses" in k)
        ratio = float(x[2]) / float(d[2])
        ratios.append(ratio)
        print(f"{r:5}  {float(d[2]):12,.0f}  {float(x[2]):11,.0f}  {ratio:12.3f}  {float(d[4]):.2f} / {float(x[4]):.2f}  {float(x[6]):11.2f}  {hits:.0f}/{misses:.0f}  {calls(d)} / {calls(x)}")
    print(f"median {proxy}/direct: {statistics.median(ratios):.3f}")
EOF
cat "$OUT/summary.txt"
