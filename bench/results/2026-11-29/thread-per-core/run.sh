#!/usr/bin/env bash
# thread_per_core: true against the default work-stealing runtime (issue 16 item 6): the same
# binary twice, one server per setting, measured by `peregrine bench compare` alternating the two
# round by round, on the cases the issue names.
#
#   BIN=/path/to/release/peregrine bench/results/2026-11-29/thread-per-core/run.sh OUT
#
# SERVER_CPUS (default 0: one server core) is the CPU list both servers are pinned to; the client
# is pinned to CLIENT_CPUS (default 1). With SERVER_CPUS=0,1 CLIENT_CPUS=0,1 all share both cores
# (compare ops per server CPU second then). Environment (defaults): RECORDS=200000 (YCSB, 1 KB),
# RECORDS_4K=50000, DURATION=20s, WARMUP=5s, ROUNDS=4, CONCURRENCY=64, CONNECTIONS=2,
# CASES="c a 4k" (a runs on the table c loaded; 4k: --preset stress-read --payload 4096,
# 100:0), PORT_BASE=9771.
set -euo pipefail
: "${BIN:?BIN=path of a release peregrine}"
OUT="${1:?OUT directory}"
SERVER_CPUS="${SERVER_CPUS:-0}" CLIENT_CPUS="${CLIENT_CPUS:-1}"
RECORDS="${RECORDS:-200000}" RECORDS_4K="${RECORDS_4K:-50000}"
DURATION="${DURATION:-20s}" WARMUP="${WARMUP:-5s}" ROUNDS="${ROUNDS:-4}"
CONCURRENCY="${CONCURRENCY:-64}" CONNECTIONS="${CONNECTIONS:-2}" CASES="${CASES:-c a 4k}"
PORT_BASE="${PORT_BASE:-9771}"
mkdir -p "$OUT"
work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

# serve NAME PORT THREAD_PER_CORE: a server pinned to SERVER_CPUS; its pid in $last_pid.
serve() {
    local name="$1" port="$2"
    printf 'thread_per_core: %s\n' "$3" >"$work/$name.yaml"
    taskset -c "$SERVER_CPUS" "$BIN" serve --config "$work/$name.yaml" --listen "127.0.0.1:$port" \
        --data-dir "$work/$name" >"$OUT/$name-server.log" 2>&1 &
    last_pid=$!
    pids+=("$last_pid")
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.1; done
    echo "$name did not listen on $port" >&2; exit 1
}
serve shared "$PORT_BASE" false; shared=$last_pid
serve percore "$((PORT_BASE + 1))" true; percore=$last_pid
a="percore=127.0.0.1:$((PORT_BASE + 1))@$percore" b="shared=127.0.0.1:$PORT_BASE@$shared"
common=(--rounds "$ROUNDS" --duration "$DURATION" --warmup "$WARMUP" --concurrency "$CONCURRENCY"
    --connections "$CONNECTIONS" --out "$OUT" --quiet --a "$a" --b "$b")
client() { taskset -c "$CLIENT_CPUS" "$BIN" bench compare "$@" "${common[@]}"; }
uptime >"$OUT/uptime-before.txt"
for case in $CASES; do
    case "$case" in
        c) client --workload c --records "$RECORDS" --load --name ycsb-c >"$OUT/ycsb-c.stdout" ;;
        a) client --workload a --records "$RECORDS" --name ycsb-a >"$OUT/ycsb-a.stdout" ;;
        4k) client --preset stress-read --payload 4096 --records "$RECORDS_4K" --load \
                --name 4k-read-100-0 >"$OUT/4k-read-100-0.stdout" ;;
        *) echo "unknown case $case" >&2; exit 1 ;;
    esac
done
uptime >"$OUT/uptime-after.txt"
