#!/usr/bin/env bash
# CPU of an idle Peregrine server by thread: /proc/PID/stat (utime+stime ticks, whole process)
# and /proc/PID/task/*/{stat,status} (ticks and voluntary context switches, i.e. wake-ups, per
# thread name) over WINDOW seconds. Usage: idle.sh BIN NAME OUT_DIR PORT [ROWS]
# Without ROWS: a fresh server, measured SETTLE seconds after it listens. With ROWS: the same
# after `peregrine bench indexed` loads ROWS rows and runs a short write phase (flushes and
# compactions then run down), measured SETTLE seconds after the bench ends.
# Environment: WINDOW (10), SETTLE (5 fresh, 60 loaded), PHASE (10s: the write phase).
set -euo pipefail
export LC_ALL=C
BIN=$1 NAME=$2 OUT=$3 PORT=$4 ROWS=${5:-}
WINDOW=${WINDOW:-10}
mkdir -p "$OUT"
d=$(mktemp -d)
"$BIN" serve --listen "127.0.0.1:$PORT" --data-dir "$d/data" >"$OUT/$NAME.serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$d"' EXIT
for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
if [[ -n $ROWS ]]; then
    "$BIN" bench indexed --endpoint "$NAME=127.0.0.1:$PORT@$pid" --rows "$ROWS" --phases write \
        --phase "${PHASE:-10s}" --out "$d" --name load >"$OUT/$NAME-bench.txt" 2>&1
    sleep "${SETTLE:-60}"
else
    sleep "${SETTLE:-5}"
fi
proc() { # the process's utime+stime, ticks
    local s; s=$(cat "/proc/$pid/stat"); s=${s##*) }; set -- $s; echo $(( ${12} + ${13} ))
}
threads() { # per thread name (digits folded to N): ticks and voluntary context switches
    for t in /proc/$pid/task/*; do
        s=$(cat "$t/stat" 2>/dev/null) || continue
        sw=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null) || continue
        name=${s#*(}; name=${name%%)*}; rest=${s##*) }
        set -- $rest
        echo "${name// /_} $(( ${12} + ${13} )) $sw"
    done | awk '{gsub(/[0-9]+$/, "N", $1); t[$1]+=$2; w[$1]+=$3; n[$1]++}
                END {for (k in t) print k, n[k], t[k], w[k]}' | sort
}
p0=$(proc); threads >"$OUT/$NAME-idle-before.txt"
sleep "$WINDOW"
p1=$(proc); threads >"$OUT/$NAME-idle-after.txt"
{
    echo "$NAME: idle ${WINDOW} s${ROWS:+ after loading $ROWS rows and a write phase}: process $((p1 - p0)) ticks ($(getconf CLK_TCK)/s)"
    printf '%-22s %7s %7s %10s\n' thread count ticks wake-ups
    join "$OUT/$NAME-idle-before.txt" "$OUT/$NAME-idle-after.txt" |
        awk '{printf "%-22s %7d %7d %10d\n", $1, $5, $6 - $3, $7 - $4}'
} | tee "$OUT/$NAME-idle.txt"
