#!/usr/bin/env bash
# Proxy CPU per operation, main (BEFORE) vs the lazy pass-through branch (AFTER), same session,
# same Cassandra, the two proxies alternating round by round (`peregrine bench compare`).
#
#   BEFORE=/path/peregrine-main AFTER=/path/peregrine-lazy CASSANDRA_PORT=9961 \
#       bench/results/2026-11-27/lazy/run.sh
#
# Cases (4 KB payload, one column, `stress` presets):
#   mixed-80-20 : stress-mixed 80:20 read:write, cache 1 GB, max_staleness 60s, warm cache
#   miss-heavy  : stress-read 100:0 through a 1 MB cache (~250 of RECORDS entries fit):
#                 nearly every read misses, goes upstream and is offered to the cache
# Each proxy's CPU is read from /proc/<pid>/stat (utime+stime) before and after each compare,
# and divided by the operations the bench counted for that proxy (all rounds, warm-ups
# included, read from the compare's JSON); the bench's own "ops per server CPU second" of
# the median round is in each <case>.txt as well.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)"
OUT="${OUT:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"   # run 2: OUT=<this dir>/run2
BEFORE="${BEFORE:?main build}"
AFTER="${AFTER:?branch build}"
CASSANDRA_PORT="${CASSANDRA_PORT:-9961}"
RECORDS="${RECORDS:-20000}"
DURATION="${DURATION:-15s}"
WARMUP="${WARMUP:-5s}"
ROUNDS="${ROUNDS:-3}"
CONCURRENCY="${CONCURRENCY:-64}"
PY="${PY:-$HOME/.cache/peregrine/venv/bin/python}"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
log() { echo "[lazy-bench $(date -u +%H:%M:%S)] $*" >&2; }
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }

# start_proxy NAME BINARY CACHE_BYTES -> sets PORT_<NAME>, PID_<NAME>
start_proxy() {
    local name=$1 bin=$2 bytes=$3 port
    port=$(free_port)
    mkdir -p "$work/$name"
    printf 'proxy:\n  cache_bytes: %s\n  max_staleness: 60s\n' "$bytes" >"$work/$name/proxy.yaml"
    "$bin" serve --config "$work/$name/proxy.yaml" --listen "127.0.0.1:$port" \
        --data-dir "$work/$name/data" --upstream "127.0.0.1:$CASSANDRA_PORT" >"$OUT/$name.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    printf -v "PORT_$name" '%s' "$port"
    printf -v "PID_$name" '%s' "$pid"
    log "$name: $bin on $port (pid $pid, cache $bytes B)"
}

client() { "$AFTER" bench "$@"; }

log "loading $RECORDS x 4 KB rows into Cassandra on $CASSANDRA_PORT"
client load --preset stress-read --payload 4096 --records "$RECORDS" --drop \
    --hosts "127.0.0.1:$CASSANDRA_PORT" --concurrency 128 --out "$work" --name load --quiet >/dev/null

# case NAME PRESET-ARGS... : compares before_NAME and after_NAME, records CPU per op
run_case() {
    local name=$1; shift
    local pb=PID_before_$name pa=PID_after_$name ppb=PORT_before_$name ppa=PORT_after_$name
    local b0 a0 b1 a1
    b0=$(cpu_ticks "${!pb}"); a0=$(cpu_ticks "${!pa}")
    client compare "$@" --records "$RECORDS" --payload 4096 --concurrency "$CONCURRENCY" \
        --rounds "$ROUNDS" --duration "$DURATION" --warmup "$WARMUP" --out "$OUT" --quiet \
        --a "before=127.0.0.1:${!ppb}@${!pb}" --b "after=127.0.0.1:${!ppa}@${!pa}" \
        --name "$name" >"$OUT/$name.stdout"
    b1=$(cpu_ticks "${!pb}"); a1=$(cpu_ticks "${!pa}")
    echo "$name before_ticks $((b1 - b0)) after_ticks $((a1 - a0)) clk_tck $(getconf CLK_TCK)" >>"$OUT/cpu.txt"
}

: >"$OUT/cpu.txt"
start_proxy before_mixed "$BEFORE" 1073741824
start_proxy after_mixed "$AFTER" 1073741824
for p in "$PORT_before_mixed" "$PORT_after_mixed"; do
    log "warming the cache of $p: $((RECORDS * 5)) reads"
    client run --preset stress-read --payload 4096 --records "$RECORDS" --operations "$((RECORDS * 5))" \
        --concurrency "$CONCURRENCY" --hosts "127.0.0.1:$p" --out "$work" --name warm --quiet >/dev/null
done
log "mixed-80-20"
run_case mixed --preset stress-mixed --ratio 80:20
kill -TERM "$PID_before_mixed" "$PID_after_mixed"

start_proxy before_miss "$BEFORE" 1048576
start_proxy after_miss "$AFTER" 1048576
log "miss-heavy"
run_case miss --preset stress-read
log "done"
