#!/bin/bash
# NAME BIN PORT RECORDS: a fresh store loaded with RECORDS YCSB rows (the server on CPU 0, the
# bench client on CPU 1, 64 in flight), 10 s of YCSB C to warm, then 22 s of YCSB C while `perf
# record` samples the server (cpu-clock, 999 Hz, 15 s). Writes NAME.perf, NAME.run.txt (the run
# and the server CPU ticks it took) in $OUT (default: here).
set -u
name=$1 bin=$2 port=$3 RECORDS=$4 OUT=${OUT:-$PWD}
admin=$((port + 1)); d=$OUT/data-$name; rm -rf "$d"; mkdir -p "$d"
serve() { exec taskset -c 0 "$bin" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --data-dir "$d/data"; }
serve > "$OUT/$name.log" 2>&1 & pid=$!
for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
b() { taskset -c 1 "$bin" bench "$1" --workload c --records "$RECORDS" ${2:+--duration $2} --concurrency 64 --hosts "127.0.0.1:$port" --out "$d" --name "$3" --quiet; }
b load "" load >/dev/null 2>&1
b run 10s warm >/dev/null 2>&1
t0=$(awk '{print $14+$15}' /proc/$pid/stat)
( sleep 3; perf record -F 999 -p "$pid" -o "$OUT/$name.perf" -- sleep 15 >/dev/null 2>&1 ) & perf=$!
b run 22s run > "$OUT/$name.run.txt" 2>&1
t1=$(awk '{print $14+$15}' /proc/$pid/stat)
echo "server cpu ticks during run: $((t1 - t0))" >> "$OUT/$name.run.txt"
wait "$perf"
kill "$pid"; wait "$pid"; rm -rf "$d"; echo done
