#!/usr/bin/env bash
# Side-by-side: Peregrine (standalone) vs real Apache Cassandra 5.0.9 on this machine.
#
#   bench/compare-cassandra.sh            # full run with the defaults below
#   DURATION=20s RECORDS=100000 bench/compare-cassandra.sh   # a quick one
#
# What it does, in order:
#   1. scripts/setup.sh (Cassandra jars, Python venv) and `cargo build --release -p peregrine`;
#   2. starts Cassandra via scripts/cassandra.sh (CQL port $CASSANDRA_PORT) and Peregrine
#      (`peregrine serve --listen 127.0.0.1:$PEREGRINE_PORT --data-dir …`), both pinned to
#      core $SERVER_CPU with taskset; the bench client is pinned to core $CLIENT_CPU;
#   3. loads the same data into both: YCSB usertable ($RECORDS × 10 × 100 B) and the
#      cassandra-stress style table ($STRESS_RECORDS × one 4 KB value), on empty data
#      directories, then waits until Cassandra has finished compacting what it loaded;
#   4. runs YCSB A, B, C, F, D, E (YCSB's recommended order: D and E insert) and the 4 KB
#      100:0 read and 80:20 mixed cases with `peregrine bench compare`, which alternates the
#      two servers for $ROUNDS rounds each and reports medians and the gain column;
#   5. writes every table, JSON and HTML report to bench/results/<UTC date>/, plus summary.txt
#      (all tables), index.html (links) and environment.txt (versions, pinning, heap);
#   6. stops both servers (unless KEEP=1).
#
# Environment (defaults): RECORDS=1000000 STRESS_RECORDS=200000 DURATION=60s WARMUP=10s
#   ROUNDS=3 CONCURRENCY=64 CONNECTIONS=2 PEREGRINE_PORT=9042 CASSANDRA_PORT=9142
#   SERVER_CPU=0 CLIENT_CPU=1 CASSANDRA_HEAP=1G (passed to scripts/cassandra.sh)
#   OUT=bench/results/<date> KEEP=0 WORKLOADS="a b c f d e" SKIP_LOAD=0
#   SKIP_STRESS=0 (1: neither load nor run the two 4 KB cases)
#   SETTLE_MAX=900 (seconds to wait, after the loads, for Cassandra's compactions to finish)
#   PREWARM=0 (e.g. 180s: after settling, run YCSB C against each server, untimed, this long,
#   so Cassandra's JIT has compiled its read path before the first round; session 21 saw its
#   reads per CPU second still climbing after three 65 s rounds)
#   BENCH="target/release/peregrine bench" (any command line that takes the bench subcommands)
#   PEREGRINE_BIN=target/release/peregrine  SKIP_BUILD=0 (1: use the binaries as they are)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

RECORDS="${RECORDS:-1000000}"
STRESS_RECORDS="${STRESS_RECORDS:-200000}"
DURATION="${DURATION:-60s}"
WARMUP="${WARMUP:-10s}"
ROUNDS="${ROUNDS:-3}"
CONCURRENCY="${CONCURRENCY:-64}"
CONNECTIONS="${CONNECTIONS:-2}"
PEREGRINE_PORT="${PEREGRINE_PORT:-9042}"
CASSANDRA_PORT="${CASSANDRA_PORT:-9142}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
export CASSANDRA_HEAP="${CASSANDRA_HEAP:-1G}"
WORKLOADS="${WORKLOADS:-a b c f d e}"
SKIP_STRESS="${SKIP_STRESS:-0}"
KEEP="${KEEP:-0}"
SKIP_LOAD="${SKIP_LOAD:-0}"
SETTLE_MAX="${SETTLE_MAX:-900}"
PREWARM="${PREWARM:-0}"
DATE="$(date -u +%Y-%m-%d)"
OUT="${OUT:-$ROOT/bench/results/$DATE}"
PEREGRINE_DATA="${PEREGRINE_DATA:-$HOME/.cache/peregrine/compare-peregrine-data}"
PEREGRINE_BIN="${PEREGRINE_BIN:-$ROOT/target/release/peregrine}"
BENCH="${BENCH:-$PEREGRINE_BIN bench}"
SKIP_BUILD="${SKIP_BUILD:-0}"

log() { echo "[compare $(date -u +%H:%M:%S)] $*" >&2; }
die() { echo "[compare] error: $*" >&2; exit 1; }

command -v taskset >/dev/null || die "taskset not found (util-linux)"
ncpu="$(nproc)"
(( SERVER_CPU < ncpu && CLIENT_CPU < ncpu )) || die "need CPUs $SERVER_CPU and $CLIENT_CPU; this machine has $ncpu"
[[ "$SERVER_CPU" != "$CLIENT_CPU" ]] || log "warning: servers and client share CPU $SERVER_CPU"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

# ------------------------------------------------------------------ 1. tools and build
log "setup (Cassandra jars, venv)"
scripts/setup.sh >&2
if [[ "$SKIP_BUILD" != 1 ]]; then
    log "building peregrine (release)"
    cargo build --release -p peregrine >&2
fi
[[ -x "$PEREGRINE_BIN" ]] || die "$PEREGRINE_BIN missing (build with cargo build --release -p peregrine)"

# ------------------------------------------------------------------ 2. servers
# shellcheck source=bench/servers.sh
source "$ROOT/bench/servers.sh"
start_servers "$([[ "$SKIP_LOAD" != 1 ]] && echo 1 || echo 0)"

{
    echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "git_rev: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo none)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo ' (dirty)')"
    echo "peregrine: $("$PEREGRINE_BIN" --version 2>/dev/null || echo unknown), port $PEREGRINE_PORT, data $PEREGRINE_DATA"
    echo "cassandra: 5.0.9, port $CASSANDRA_PORT, heap $CASSANDRA_HEAP, Java 17, assertions off (-da)"
    echo "pinning: servers on CPU $SERVER_CPU, bench client on CPU $CLIENT_CPU (taskset)"
    echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
    echo "parameters: RECORDS=$RECORDS STRESS_RECORDS=$STRESS_RECORDS DURATION=$DURATION WARMUP=$WARMUP ROUNDS=$ROUNDS PREWARM=$PREWARM CONCURRENCY=$CONCURRENCY CONNECTIONS=$CONNECTIONS"
} >"$OUT/environment.txt"
cat "$OUT/environment.txt" >&2

# ------------------------------------------------------------------ 3. load
client() { taskset -c "$CLIENT_CPU" $BENCH "$@"; }
P="peregrine=127.0.0.1:$PEREGRINE_PORT@$PEREGRINE_PID"  # @pid: the report adds ops per server CPU second
C="cassandra=127.0.0.1:$CASSANDRA_PORT@$CASSANDRA_PID"
COMMON=(--concurrency "$CONCURRENCY" --connections "$CONNECTIONS" --out "$OUT")

if [[ "$SKIP_LOAD" != 1 ]]; then
    for ep in "peregrine 127.0.0.1:$PEREGRINE_PORT" "cassandra 127.0.0.1:$CASSANDRA_PORT"; do
        read -r name host <<<"$ep"
        log "loading YCSB usertable into $name: $RECORDS records"
        client load --workload a --records "$RECORDS" --drop --hosts "$host" --label "$name" \
            --concurrency 256 --out "$OUT" --name "load-ycsb-$name" --quiet >/dev/null
        [[ "$SKIP_STRESS" == 1 ]] && continue
        log "loading 4 KB stress table into $name: $STRESS_RECORDS records"
        client load --preset stress-read --payload 4096 --records "$STRESS_RECORDS" --drop --hosts "$host" \
            --label "$name" --concurrency 256 --out "$OUT" --name "load-stress4k-$name" --quiet >/dev/null
    done
fi

# Cassandra compacts what it just loaded, on the same pinned core: rounds that overlap it
# would measure the compaction too. (Waiting does not end the climb of its rounds seen in
# session 21, 7.3k -> 19.4k -> 24.3k YCSB C reads per CPU s after a 15 s settle: that is its
# JIT warming up; see bench/results/2026-11-29/compare-quiet-s21-settled.)
log "waiting for Cassandra's compactions to finish (at most ${SETTLE_MAX}s)"
settle_cassandra "$SETTLE_MAX"

if [[ "$PREWARM" != 0 ]]; then
    for ep in "cassandra 127.0.0.1:$CASSANDRA_PORT" "peregrine 127.0.0.1:$PEREGRINE_PORT"; do
        read -r name host <<<"$ep"
        log "pre-warming $name: YCSB C for $PREWARM, untimed"
        client run --workload c --records "$RECORDS" --duration "$PREWARM" --hosts "$host" \
            --label "$name" "${COMMON[@]}" --name "prewarm-$name" --quiet >/dev/null
    done
fi

# ------------------------------------------------------------------ 4. runs
summary="$OUT/summary.txt"
cat "$OUT/environment.txt" >"$summary"
echo >>"$summary"

run_compare() {
    local name="$1"; shift
    log "compare $name: $ROUNDS rounds × $DURATION per server (+$WARMUP warm-up each)"
    client compare --a "$P" --b "$C" --rounds "$ROUNDS" --duration "$DURATION" --warmup "$WARMUP" \
        "${COMMON[@]}" --name "$name" --quiet "$@" >"$OUT/$name.stdout"
    { echo "== $name"; cat "$OUT/$name.txt"; echo; } >>"$summary"
}

for w in $WORKLOADS; do
    run_compare "ycsb-$w" --workload "$w" --records "$RECORDS"
done
if [[ "$SKIP_STRESS" != 1 ]]; then
    run_compare "stress-4k-read-100-0" --preset stress-read --payload 4096 --records "$STRESS_RECORDS"
    run_compare "stress-4k-mixed-80-20" --preset stress-mixed --ratio 80:20 --payload 4096 --records "$STRESS_RECORDS"
fi

# ------------------------------------------------------------------ 5. index
{
    echo '<!doctype html><html><head><meta charset="utf-8"><title>Peregrine vs Cassandra '"$DATE"'</title>'
    echo '<style>body{font-family:sans-serif;margin:2em}pre{background:#f6f6f6;padding:1em}</style></head><body>'
    echo "<h1>Peregrine vs Cassandra 5.0.9, $DATE</h1><ul>"
    for f in "$OUT"/ycsb-*.html "$OUT"/stress-4k-*.html; do
        [[ -f "$f" ]] && echo "<li><a href=\"$(basename "$f")\">$(basename "$f" .html)</a></li>"
    done
    echo "</ul><pre>"
    sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' "$summary"
    echo "</pre></body></html>"
} >"$OUT/index.html"

log "done: $summary and $OUT/index.html"
cat "$summary"
