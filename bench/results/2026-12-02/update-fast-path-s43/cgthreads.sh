#!/bin/bash
# cgthreads.sh NAME BIN PORT RECORDS AGE OPS: the whole server's instructions, per thread, over a window
# in which flushes and compactions run. Load RECORDS rows natively, age the store natively with AGE
# operations (so the tree has the shape a running store has), stop (a clean stop flushes), restart
# under Callgrind (--separate-threads=yes, no cache simulation: instruction counts only), 2,000
# operations of warm-up, zero the counters, OPS measured operations, dump. The store's counters
# (/metrics: bytes flushed and compacted, tables per level) and the process's bytes written
# (/proc/PID/io wchar) are taken right before and after the measured window.
# Env: CONFIG (YAML for both servers), WORKLOAD (YCSB letter) or WORKLOAD_ARGS (bench workload
# options), PIN (CPU for the server under valgrind), OUT.
set -u
name=$1 bin=$2 port=$3 RECORDS=$4 AGE=$5 OPS=$6 OUT=${OUT:-$PWD}
admin=$((port + 1))
W=${WORKLOAD_ARGS:---workload ${WORKLOAD:-a}}
d="$OUT/data-$name"; rm -rf "$d"; mkdir -p "$d"
args=(serve ${CONFIG:+--config "$CONFIG"} --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --data-dir "$d/data")
up() { for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.2; done; }
snap() { { echo "# $1"; grep wchar /proc/$pid/io; curl -s "http://127.0.0.1:$admin/metrics" | grep -E '^peregrine_storage_(tables|flushed|compacted|compactions_completed|memtable_bytes)'; } >>"$OUT/$name.bytes"; }
"$bin" "${args[@]}" >"$OUT/$name.native.log" 2>&1 &
pid=$!; up
"$bin" bench load $W --records "$RECORDS" --hosts "127.0.0.1:$port" --concurrency 32 --out "$d" --name load --quiet >/dev/null 2>&1
: >"$OUT/$name.bytes"; snap loaded-native
"$bin" bench run $W --records "$RECORDS" --operations "$AGE" --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name age --quiet >/dev/null 2>&1
snap aged-native
kill "$pid"; wait "$pid"
${PIN:+taskset -c $PIN} valgrind --tool=callgrind --separate-threads=yes --cache-sim=no --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$OUT/$name.cg" "$bin" "${args[@]}" >"$OUT/$name.log" 2>&1 &
pid=$!; up
"$bin" bench run $W --records "$RECORDS" --operations 2000 --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name warm --quiet >/dev/null 2>&1
callgrind_control -z "$pid" >/dev/null
snap before
"$bin" bench run $W --records "$RECORDS" --operations "$OPS" --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name run --quiet >"$OUT/$name.run.txt" 2>&1
snap after
callgrind_control -d measured "$pid" >/dev/null
kill "$pid"; wait "$pid"
cp "$d"/run*.txt "$OUT/" 2>/dev/null
rm -rf "$d"
echo done
