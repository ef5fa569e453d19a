#!/usr/bin/env bash
# Before/after of two builds of Peregrine in one run, on the cases a change must not slow:
# YCSB C against standalone, and 4 KB reads (100:0, warm cache) through the proxy in front of a
# real Cassandra 5.0.9. `peregrine bench compare` alternates the two builds round by round.
#
#   OLD=/path/to/old/peregrine NEW=/path/to/new/peregrine bench/compare-builds.sh
#
# Both servers of a pair sit on CPU $SERVER_CPU (only one is measured at a time) with Cassandra;
# the bench client (NEW's) is on CPU $CLIENT_CPU.
# Environment (defaults): YCSB_RECORDS=100000 RECORDS=50000 DURATION=20s WARMUP=5s ROUNDS=3
#   CONCURRENCY=64 SERVER_CPU=0 CLIENT_CPU=1 CASSANDRA_PORT=9742 PORT_BASE=9751 CASSANDRA_HEAP=2G
#   OUT=bench/results/<date>/builds
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
: "${OLD:?OLD=path of the old peregrine binary}" "${NEW:?NEW=path of the new peregrine binary}"
YCSB_RECORDS="${YCSB_RECORDS:-100000}"
RECORDS="${RECORDS:-50000}"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-5s}"
ROUNDS="${ROUNDS:-3}"
CONCURRENCY="${CONCURRENCY:-64}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
CASSANDRA_PORT="${CASSANDRA_PORT:-9742}"
# Ports of the four Peregrine servers: PORT_BASE .. PORT_BASE+3.
PORT_BASE="${PORT_BASE:-9751}"
p_old=$PORT_BASE p_new=$((PORT_BASE + 1)) p_old_proxy=$((PORT_BASE + 2)) p_new_proxy=$((PORT_BASE + 3))
export CASSANDRA_HEAP="${CASSANDRA_HEAP:-2G}"
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)/builds}"
log() { echo "[compare-builds $(date -u +%H:%M:%S)] $*" >&2; }

mkdir -p "$OUT"
work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    scripts/cassandra.sh stop --port "$CASSANDRA_PORT" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# serve NAME BIN PORT [ARGS...]: a server pinned to the server CPU; its pid in $last_pid.
serve() {
    local name="$1" bin="$2" port="$3"; shift 3
    taskset -c "$SERVER_CPU" "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/$name" "$@" \
        >"$OUT/$name-server.log" 2>&1 &
    last_pid=$!
    pids+=("$last_pid")
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.1; done
    log "$name did not listen on $port"; exit 1
}
client() { taskset -c "$CLIENT_CPU" "$NEW" bench "$@"; }
rounds=(--rounds "$ROUNDS" --duration "$DURATION" --warmup "$WARMUP" --concurrency "$CONCURRENCY"
    --out "$OUT" --quiet)

log "YCSB C on standalone: old and new builds"
serve old "$OLD" "$p_old"; old_pid=$last_pid
serve new "$NEW" "$p_new"; new_pid=$last_pid
client compare --workload c --records "$YCSB_RECORDS" --load "${rounds[@]}" --name standalone-ycsb-c \
    --a "new=127.0.0.1:$p_new@$new_pid" --b "old=127.0.0.1:$p_old@$old_pid" >"$OUT/standalone-ycsb-c.stdout"

log "Cassandra 5.0.9 on $CASSANDRA_PORT, old and new proxies in front of it"
scripts/cassandra.sh start --port "$CASSANDRA_PORT" --clean >&2
cpid="$(cat "$HOME/.cache/peregrine/cassandra-run-$CASSANDRA_PORT/cassandra.pid")"
taskset -a -cp "$SERVER_CPU" "$cpid" >/dev/null
# An hour's staleness: this case measures cache hits, and with 60 s a slow warm pass let the
# first entries expire during the rounds (every read then went upstream, 2026-11-28).
printf 'proxy:\n  cache_bytes: 1073741824\n  max_staleness: 3600s\n' >"$work/proxy.yaml"
serve old-proxy "$OLD" "$p_old_proxy" --config "$work/proxy.yaml" --upstream "127.0.0.1:$CASSANDRA_PORT"
old_proxy=$last_pid
serve new-proxy "$NEW" "$p_new_proxy" --config "$work/proxy.yaml" --upstream "127.0.0.1:$CASSANDRA_PORT"
new_proxy=$last_pid
client load --preset stress-read --payload 4096 --records "$RECORDS" --drop \
    --hosts "127.0.0.1:$CASSANDRA_PORT" --concurrency 256 --out "$work" --name load --quiet >/dev/null
# Let Cassandra finish the compactions the load started (CPU under 10% for 5 s in a row, at
# most 240 s): the proxies share its core, and the first rounds measured 20-40% low without this.
ticks=$(getconf CLK_TCK) quiet=0 waited=0
while (( waited < 240 && quiet < 5 )); do
    a=$(awk '{print $14+$15}' "/proc/$cpid/stat"); sleep 1; b=$(awk '{print $14+$15}' "/proc/$cpid/stat")
    if (( (b - a) * 10 < ticks )); then quiet=$((quiet + 1)); else quiet=0; fi
    waited=$((waited + 1))
done
log "Cassandra settled after ${waited}s"
for port in "$p_old_proxy" "$p_new_proxy"; do
    log "warming the proxy on $port"
    client run --preset stress-read --payload 4096 --records "$RECORDS" --operations "$((RECORDS * 5))" \
        --concurrency "$CONCURRENCY" --hosts "127.0.0.1:$port" --out "$work" --name warm --quiet >/dev/null
done
client compare --preset stress-read --payload 4096 --records "$RECORDS" "${rounds[@]}" \
    --name proxy-4k-read-100-0 --a "new-proxy=127.0.0.1:$p_new_proxy@$new_proxy+$cpid" \
    --b "old-proxy=127.0.0.1:$p_old_proxy@$old_proxy+$cpid" >"$OUT/proxy-4k-read-100-0.stdout"
log "reports in $OUT"
