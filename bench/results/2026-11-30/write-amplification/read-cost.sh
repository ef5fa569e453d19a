#!/bin/bash
# Read cost of storage settings after updates: load and run workload A natively with CONFIG,
# restart under valgrind with it, then measure YCSB C reads and A ops. NAME BIN PORT RECORDS OPS CONFIG
set -u
name=$1 bin=$2 port=$3 RECORDS=$4 OPS=$5 conf=$6 OUT=${OUT:-$PWD}
admin=$((port + 1))
d="$OUT/data-$name"; rm -rf "$d"; mkdir -p "$d"
serve() { exec "$@" serve --config "$conf" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --data-dir "$d/data"; }
wait_port() { for _ in $(seq 1 1200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.2; done; }
b() { "$bin" bench "$1" --workload "$2" --records "$RECORDS" ${3:+--operations $3} --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name "$4" --quiet >/dev/null 2>&1; }
serve "$bin" >"$OUT/$name.native.log" 2>&1 &
pid=$!; wait_port
b load a "" load
b run a $((RECORDS)) updates
curl -s "http://127.0.0.1:$admin/metrics" > "$OUT/$name.metrics-native"
kill "$pid"; wait "$pid"
serve valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file="$OUT/$name.cg" "$bin" >"$OUT/$name.log" 2>&1 &
pid=$!; wait_port
b run c 20000 warm
callgrind_control -z "$pid" >/dev/null
b run c "$OPS" runc
callgrind_control -d readsC "$pid" >/dev/null
callgrind_control -z "$pid" >/dev/null
b run a "$OPS" runa
callgrind_control -d opsA "$pid" >/dev/null
curl -s "http://127.0.0.1:$admin/metrics" > "$OUT/$name.metrics-run"
kill "$pid"; wait "$pid"
du -sh "$d" > "$OUT/$name.du"
rm -rf "$d"
echo done
