#!/usr/bin/env bash
# Seed 000's tables on this machine: Peregrine as a caching proxy in front of a real Cassandra
# 5.0.9 vs the same Cassandra directly, same client, same run, 4 KB payloads:
# 100:0 read with a warm cache and 80:20 read:write, and the ceiling Cassandra's own write rate
# sets for 80:20 (issue 16 item 7): Cassandra alone, 4 KB whole-row writes of loaded keys (0:100),
# W writes a second; 80:20 sends a fifth of its operations to Cassandra as writes, so it can at
# best run 5 W operations a second.
#
#   bench/compare-proxy.sh                       # defaults below
#   DURATION=20s RECORDS=50000 bench/compare-proxy.sh
#
# Cassandra is pinned to CPU $CASSANDRA_CPU and the bench client to CPU $CLIENT_CPU. The proxy
# goes on CPU $PROXY_CPU: by default the server side's core, shared with Cassandra, so the
# server side has one core and the client one core in both cases (Cassandra is idle in the warm
# 100:0 case; in 80:20 the two compete). PROXY_CPU=$CLIENT_CPU puts it on the client's core
# instead (the first runs did that), which handicaps the proxy.
#
# Environment (defaults): RECORDS=50000 DURATION=20s WARMUP=5s ROUNDS=3 CONCURRENCY=64
#   CASSANDRA_PORT=9142 PROXY_PORT=9045 CASSANDRA_CPU=0 CLIENT_CPU=1 PROXY_CPU=$CASSANDRA_CPU
#   CASSANDRA_HEAP=2G
#   PROXY_CACHE_BYTES=1073741824 MAX_STALENESS=1s (the proxy's default bound for writes that
#   bypass it; with every write going through the proxy it can be long, e.g. 60s)
#   PEREGRINE_BIN=target/release/peregrine SKIP_BUILD=0
#   OUT=bench/results/<date>/proxy KEEP=0 YCSB="" (e.g. "c b a": also these YCSB workloads)
#   YCSB_RECORDS=100000
#   MIXED_CONCURRENCY="" (e.g. "256": also 80:20 through the proxy and the ceiling at each of these
#   numbers in flight; at 64 a closed loop's slots wait on writes, so 80:20 is latency-bound well
#   below the ceiling: bench/results/2026-12-01/proxy-s36/README.md)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RECORDS="${RECORDS:-50000}"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-5s}"
ROUNDS="${ROUNDS:-3}"
CONCURRENCY="${CONCURRENCY:-64}"
CASSANDRA_PORT="${CASSANDRA_PORT:-9142}"
PROXY_PORT="${PROXY_PORT:-9045}"
CASSANDRA_CPU="${CASSANDRA_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
PROXY_CPU="${PROXY_CPU:-$CASSANDRA_CPU}"
export CASSANDRA_HEAP="${CASSANDRA_HEAP:-2G}"
PROXY_CACHE_BYTES="${PROXY_CACHE_BYTES:-1073741824}"
MAX_STALENESS="${MAX_STALENESS:-1s}"
YCSB_RECORDS="${YCSB_RECORDS:-100000}"
MIXED_CONCURRENCY="${MIXED_CONCURRENCY:-}"
PEREGRINE_BIN="${PEREGRINE_BIN:-$ROOT/target/release/peregrine}"
SKIP_BUILD="${SKIP_BUILD:-0}"
KEEP="${KEEP:-0}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)/proxy}"

log() { echo "[compare-proxy $(date -u +%H:%M:%S)] $*" >&2; }

scripts/setup.sh >/dev/null
if [[ "$SKIP_BUILD" != 1 ]]; then
    cargo build --release -p peregrine
fi
mkdir -p "$OUT"
work="$(mktemp -d)"
proxy_pid=""
cleanup() {
    [[ -n "$proxy_pid" ]] && kill -TERM "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
    [[ "$KEEP" == 1 ]] || scripts/cassandra.sh stop --port "$CASSANDRA_PORT" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

log "starting Cassandra 5.0.9 on $CASSANDRA_PORT (CPU $CASSANDRA_CPU, heap $CASSANDRA_HEAP)"
scripts/cassandra.sh start --port "$CASSANDRA_PORT" --clean >&2
cpid="$(cat "$HOME/.cache/peregrine/cassandra-run-$CASSANDRA_PORT/cassandra.pid" 2>/dev/null || pgrep -f "cassandra-run-$CASSANDRA_PORT" | head -1)"
taskset -a -cp "$CASSANDRA_CPU" "$cpid" >/dev/null

cat >"$work/proxy.yaml" <<EOF
proxy:
  cache_bytes: $PROXY_CACHE_BYTES
  max_staleness: $MAX_STALENESS
EOF
log "starting the proxy on $PROXY_PORT (CPU $PROXY_CPU) in front of $CASSANDRA_PORT"
taskset -c "$PROXY_CPU" "$PEREGRINE_BIN" serve --config "$work/proxy.yaml" --listen "127.0.0.1:$PROXY_PORT" \
    --admin-listen "127.0.0.1:$((PROXY_PORT + 1))" --data-dir "$work/data" --upstream "127.0.0.1:$CASSANDRA_PORT" >"$OUT/proxy-server.log" 2>&1 &
proxy_pid=$!
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && break; sleep 0.1; done

client() { taskset -c "$CLIENT_CPU" "$PEREGRINE_BIN" bench "$@"; }
log "loading $RECORDS × 4 KB rows into Cassandra"
client load --preset stress-read --payload 4096 --records "$RECORDS" --drop --hosts "127.0.0.1:$CASSANDRA_PORT" \
    --concurrency 256 --out "$OUT" --name load-stress4k --quiet >/dev/null

# Let Cassandra finish the compactions the load started (CPU under 10% for 5 s in a row, at
# most SETTLE_MAX seconds): measured right after a load, Cassandra's reads compete with them
# and its figures swing by 2-3x between runs.
settle() {
    local ticks=$(getconf CLK_TCK) quiet=0 waited=0 a b
    while (( waited < ${SETTLE_MAX:-240} && quiet < 5 )); do
        a=$(awk '{print $14+$15}' "/proc/$cpid/stat"); sleep 1; b=$(awk '{print $14+$15}' "/proc/$cpid/stat")
        if (( (b - a) * 10 < ticks )); then quiet=$((quiet + 1)); else quiet=0; fi
        waited=$((waited + 1))
    done
    log "Cassandra settled after ${waited}s"
}
settle

# Warm both sides before measuring: the proxy's cache with reads of (nearly) every key (5 draws
# per key leave <1% unread; the rounds' warm-ups read the rest), and Cassandra's read path (JIT,
# caches) with as many reads straight to it: measured cold, its first round ran at half speed.
for target in "$PROXY_PORT" "$CASSANDRA_PORT"; do
    log "warming: $((RECORDS * 5)) reads on $target"
    client run --preset stress-read --payload 4096 --records "$RECORDS" --operations "$((RECORDS * 5))" \
        --concurrency "$CONCURRENCY" --hosts "127.0.0.1:$target" --out "$work" --name warm --quiet >/dev/null
done

# With @pids the reports add ops per server CPU second. The proxy's server side is the proxy
# and the Cassandra behind it (misses, writes and refreshes cost Cassandra CPU).
PROXY_EP="proxy=127.0.0.1:$PROXY_PORT@$proxy_pid+$cpid"
CASSANDRA_EP="cassandra=127.0.0.1:$CASSANDRA_PORT@$cpid"
common=(--records "$RECORDS" --payload 4096 --concurrency "$CONCURRENCY" --rounds "$ROUNDS"
    --duration "$DURATION" --warmup "$WARMUP" --out "$OUT" --quiet
    --a "$PROXY_EP" --b "$CASSANDRA_EP")
# The proxy's cache and upstream counters before and after each case (hits, misses, upstream requests).
counters() {
    curl -s "http://127.0.0.1:$((PROXY_PORT + 1))/metrics" | grep -E '^peregrine_proxy_(requests_cache_(hits|misses)_total|upstream_requests_total|cache_invalidations_total)' >"$OUT/$1.proxy-counters" || true
    # Every cache counter (patched writes, stale fills, ...), from the admin endpoint's info.
    curl -s -X POST "http://127.0.0.1:$((PROXY_PORT + 1))/nodetool/info" | python3 -c 'import json, sys
for k, v in json.load(sys.stdin)["cache"].items():
    if k.startswith("cache_") and not k.startswith("cache_ssd"): print(k, v)' >>"$OUT/$1.proxy-counters" 2>/dev/null || true
}
counters before-100-0
log "100:0 read, warm cache (the warm-up of each proxy round fills the cache)"
client compare --preset stress-read --name proxy-4k-read-100-0 "${common[@]}" >"$OUT/proxy-4k-read-100-0.stdout"
counters after-100-0
log "80:20 read:write"
client compare --preset stress-mixed --ratio 80:20 --name proxy-4k-mixed-80-20 "${common[@]}" >"$OUT/proxy-4k-mixed-80-20.stdout"
counters after-80-20
log "the 80:20 ceiling: Cassandra alone, 4 KB writes of loaded keys (0:100)"
client run --preset stress-mixed --ratio 0:100 --payload 4096 --records "$RECORDS" --concurrency "$CONCURRENCY" \
    --duration "$DURATION" --warmup "$WARMUP" --hosts "127.0.0.1:$CASSANDRA_PORT" --out "$OUT" \
    --name cassandra-4k-write-ceiling --quiet >"$OUT/cassandra-4k-write-ceiling.stdout"
# Optional: 80:20 through the proxy and the ceiling again at other numbers in flight.
for c in $MIXED_CONCURRENCY; do
    log "80:20 through the proxy and the ceiling at $c in flight"
    client run --preset stress-mixed --ratio 80:20 --payload 4096 --records "$RECORDS" --concurrency "$c" \
        --duration "$DURATION" --warmup "$WARMUP" --hosts "127.0.0.1:$PROXY_PORT" --out "$OUT" \
        --name "proxy-4k-mixed-80-20-c$c" --quiet >"$OUT/proxy-4k-mixed-80-20-c$c.stdout"
    client run --preset stress-mixed --ratio 0:100 --payload 4096 --records "$RECORDS" --concurrency "$c" \
        --duration "$DURATION" --warmup "$WARMUP" --hosts "127.0.0.1:$CASSANDRA_PORT" --out "$OUT" \
        --name "cassandra-4k-write-ceiling-c$c" --quiet >"$OUT/cassandra-4k-write-ceiling-c$c.stdout"
done
# Optional YCSB workloads through the proxy (e.g. YCSB="c b a"): 1 KB rows of 10 fields, the
# default zipfian key choice; their updates patch the cache in place.
cases=(proxy-4k-read-100-0 proxy-4k-mixed-80-20)
if [[ -n "${YCSB:-}" ]]; then
    log "loading $YCSB_RECORDS YCSB rows into Cassandra"
    client load --workload a --records "$YCSB_RECORDS" --drop --hosts "127.0.0.1:$CASSANDRA_PORT" \
        --concurrency 256 --out "$OUT" --name load-ycsb --quiet >/dev/null
    settle
    for w in $YCSB; do
        log "YCSB $w"
        client compare --workload "$w" --records "$YCSB_RECORDS" --concurrency "$CONCURRENCY" \
            --rounds "$ROUNDS" --duration "$DURATION" --warmup "$WARMUP" --out "$OUT" --quiet \
            --a "$PROXY_EP" --b "$CASSANDRA_EP" \
            --name "proxy-ycsb-$w" >"$OUT/proxy-ycsb-$w.stdout"
        cases+=("proxy-ycsb-$w")
    done
fi
"$PEREGRINE_BIN" bench --help >/dev/null
{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "git_rev: $(git rev-parse HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
    echo "pinning: Cassandra on CPU $CASSANDRA_CPU, proxy on CPU $PROXY_CPU, bench client on CPU $CLIENT_CPU"
    echo "parameters: RECORDS=$RECORDS DURATION=$DURATION WARMUP=$WARMUP ROUNDS=$ROUNDS CONCURRENCY=$CONCURRENCY proxy cache_bytes=$PROXY_CACHE_BYTES max_staleness=$MAX_STALENESS"
    echo
    for f in "${cases[@]}"; do echo "== $f"; cat "$OUT/$f.txt"; echo; done
    echo "== cassandra-4k-write-ceiling"; cat "$OUT/cassandra-4k-write-ceiling.txt"; echo
    # The sustained ops/s of a `bench run` report ($4 of its overall line) or, with a second
    # argument, of a `bench compare` report (the proxy's column of its sustained line).
    sustained() {
        if [[ -z "${2:-}" ]]; then
            awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$1"
        else
            awk '$1 == "overall" {o = 1} o && $1 == "ops/s" && $2 == "sustained" {gsub(",", "", $3); print $3; exit}' "$1"
        fi
    }
    # "LABEL: 80:20 through the proxy M ops/s; Cassandra writes alone W/s; where M stands against 5 W".
    at_ceiling() {
        python3 -c "w, m = float('$3'), float('$2'); print(f'$1 80:20 through the proxy {m:,.0f} ops/s; Cassandra writes alone {w:,.0f}/s, ceiling 5 W = {5 * w:,.0f} ops/s; proxy at {m / (5 * w):.2f} of it')" 2>/dev/null ||
            echo "($1 ceiling figures not found)"
    }
    at_ceiling "at $CONCURRENCY in flight:" "$(sustained "$OUT/proxy-4k-mixed-80-20.txt" compare)" \
        "$(sustained "$OUT/cassandra-4k-write-ceiling.txt")"
    for c in $MIXED_CONCURRENCY; do
        at_ceiling "at $c in flight:" "$(sustained "$OUT/proxy-4k-mixed-80-20-c$c.txt")" \
            "$(sustained "$OUT/cassandra-4k-write-ceiling-c$c.txt")"
    done
} >"$OUT/summary.txt"
log "done: $OUT/summary.txt"
