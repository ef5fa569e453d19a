#!/usr/bin/env bash
# Where a Peregrine server's CPU goes during `peregrine bench indexed`'s write phase, by thread
# (request workers, journal, flushes, compactions): /proc/PID/task/*/stat before and after.
# (A copy of ../indexed-writes/threads.sh whose perf samples cpu-clock.)
# Usage: threads.sh BIN NAME OUT_DIR PORT ROWS [CPU]   (CPU: taskset the server to that core)
# Environment: PERF (set: perf record the window too), PHASE (20s), SNAP (15: seconds between the thread snapshots, from 3 s in).
set -euo pipefail
BIN=$1 NAME=$2 OUT=$3 PORT=$4 ROWS=$5 CPU=${6:-}
PHASE=${PHASE:-20s}
mkdir -p "$OUT"
d=$(mktemp -d)
pin=(); [[ -n $CPU ]] && pin=(taskset -c "$CPU")
"${pin[@]}" "$BIN" serve --listen "127.0.0.1:$PORT" --data-dir "$d/data" >"$OUT/$NAME.serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
snap() { # ticks (utime+stime) per thread name, summed
    for t in /proc/$pid/task/*; do
        s=$(cat "$t/stat" 2>/dev/null) || continue
        name=${s#*(}; name=${name%%)*}; rest=${s##*) }
        set -- $rest
        echo "${name// /_} $(( ${12} + ${13} ))"
    done | awk '{gsub(/[0-9]+$/, "N", $1); a[$1]+=$2} END {for (k in a) print k, a[k]}' | sort
}
"$BIN" bench indexed --endpoint "$NAME=127.0.0.1:$PORT@$pid" --rows "$ROWS" --phases high \
    --phase 1s --settle 0s --out "$d" --name load >"$OUT/$NAME-load.txt" 2>&1
uptime >"$OUT/$NAME-uptime.txt"
"$BIN" bench indexed --endpoint "$NAME=127.0.0.1:$PORT@$pid" --rows "$ROWS" --reuse --phases write \
    --phase "$PHASE" --out "$OUT" --name "$NAME-write" >"$OUT/$NAME-write.log" 2>&1 &
bench=$!
# The snapshots bracket SNAP seconds inside the recorded window (after the 2 s settle).
sleep 3; snap >"$OUT/$NAME-threads-before.txt"
if [[ -n ${PERF:-} ]]; then # PERF=1: perf samples of the same window (call graphs, 499 Hz)
    perf record -e cpu-clock -F 499 -g -p "$pid" -o "$OUT/$NAME.perf.data" -- sleep "${SNAP:-15}" >/dev/null 2>&1
else
    sleep "${SNAP:-15}"
fi
snap >"$OUT/$NAME-threads-after.txt"
wait "$bench"
uptime >>"$OUT/$NAME-uptime.txt"
join -a2 -e0 -o 0,1.2,2.2 "$OUT/$NAME-threads-before.txt" "$OUT/$NAME-threads-after.txt" \
    | awk '{printf "%-28s %8.2f s\n", $1, ($3-$2)/100}' | sort -k2 -n -r >"$OUT/$NAME-threads.txt"
cat "$OUT/$NAME-threads.txt"
