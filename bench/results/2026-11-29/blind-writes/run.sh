#!/usr/bin/env bash
# Blind writes before/after (issue 16 item 2): two builds side by side, one server each, measured
# by `peregrine bench compare` alternating the two round by round.
#
#   OLD=/path/old/peregrine NEW=/path/new/peregrine bench/results/2026-11-29/blind-writes/run.sh OUT
#
# Both servers are pinned to SERVER_CPUS (default 0; only one is measured at a time), the client
# (NEW's bench) to CLIENT_CPUS (default 1). Environment (defaults): RECORDS=1000000 (YCSB, 1 KB
# rows: more than the 256 MiB block cache), RECORDS_UPD=1000000 (stress-update rows),
# RECORDS_4K=100000, DURATION=20s, WARMUP=10s, ROUNDS=3, CONCURRENCY=64, CONNECTIONS=2,
# CASES="update a f 4k-mixed", PORT_BASE=9781.
set -euo pipefail
: "${OLD:?OLD=path of the old peregrine}" "${NEW:?NEW=path of the new peregrine}"
OUT="${1:?OUT directory}"
SERVER_CPUS="${SERVER_CPUS:-0}" CLIENT_CPUS="${CLIENT_CPUS:-1}"
RECORDS="${RECORDS:-1000000}" RECORDS_UPD="${RECORDS_UPD:-1000000}" RECORDS_4K="${RECORDS_4K:-100000}"
DURATION="${DURATION:-20s}" WARMUP="${WARMUP:-10s}" ROUNDS="${ROUNDS:-3}"
CONCURRENCY="${CONCURRENCY:-64}" CONNECTIONS="${CONNECTIONS:-2}"
CASES="${CASES:-update a f 4k-mixed}" PORT_BASE="${PORT_BASE:-9781}"
mkdir -p "$OUT"
work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

# serve NAME BIN PORT: a server pinned to SERVER_CPUS; its pid in $last_pid.
serve() {
    local name="$1" port="$3"
    taskset -c "$SERVER_CPUS" "$2" serve --listen "127.0.0.1:$port" --data-dir "$work/$name" \
        >"$OUT/$name-server.log" 2>&1 &
    last_pid=$!
    pids+=("$last_pid")
    for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.1; done
    echo "$name did not listen on $port" >&2; exit 1
}
serve old "$OLD" "$PORT_BASE"; old=$last_pid
serve blind "$NEW" "$((PORT_BASE + 1))"; blind=$last_pid
a="blind=127.0.0.1:$((PORT_BASE + 1))@$blind" b="old=127.0.0.1:$PORT_BASE@$old"
common=(--rounds "$ROUNDS" --duration "$DURATION" --warmup "$WARMUP" --concurrency "$CONCURRENCY"
    --connections "$CONNECTIONS" --out "$OUT" --quiet --a "$a" --b "$b")
client() { taskset -c "$CLIENT_CPUS" "$NEW" bench compare "$@" "${common[@]}"; }
uptime >"$OUT/uptime-before.txt"
for case in $CASES; do
    case "$case" in
        update) client --preset stress-update --records "$RECORDS_UPD" --load --drop \
                    --name stress-update >"$OUT/stress-update.stdout" ;;
        a) client --workload a --records "$RECORDS" --load --name ycsb-a >"$OUT/ycsb-a.stdout" ;;
        f) client --workload f --records "$RECORDS" --name ycsb-f >"$OUT/ycsb-f.stdout" ;;
        4k-mixed) client --preset stress-mixed --ratio 80:20 --payload 4096 --records "$RECORDS_4K" \
                    --load --drop --name 4k-mixed-80-20 >"$OUT/4k-mixed-80-20.stdout" ;;
        *) echo "unknown case $case" >&2; exit 1 ;;
    esac
done
uptime >"$OUT/uptime-after.txt"
du -sk "$work"/* >"$OUT/data-sizes-kb.txt"
