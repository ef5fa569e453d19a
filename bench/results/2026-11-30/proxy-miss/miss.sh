#!/bin/bash
# The proxy's cache-miss path under callgrind: Cassandra on CPORT with RECORDS YCSB rows loaded
# directly; the proxy (BIN) under valgrind in front of it (DRAM cache only); OPS uniform YCSB C
# reads of RECORDS keys through it (mostly misses: OPS << RECORDS), and the same reads straight
# to Cassandra for its CPU per read. NAME BIN CPORT PPORT RECORDS OPS
set -u
name=$1 bin=$2 cport=$3 pport=$4 RECORDS=$5 OPS=$6 OUT=${OUT:-$PWD}
d=$OUT/data-$name; rm -rf "$d"; mkdir -p "$d"
cpid=$(pgrep -f "cassandra.*native_transport_port=$cport|cassandra-run-$cport" | head -1)
"$bin" bench load --workload c --records "$RECORDS" --drop --hosts "127.0.0.1:$cport" --concurrency 64 --out "$d" --name load --quiet >/dev/null 2>&1
valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file="$OUT/$name.cg" \
    "$bin" serve --upstream "127.0.0.1:$cport" --listen "127.0.0.1:$pport" --admin-listen "127.0.0.1:$((pport + 1))" >"$OUT/$name.log" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && break; sleep 0.2; done
sleep 2
callgrind_control -z "$pid" >/dev/null
"$bin" bench run --workload c --distribution uniform --records "$RECORDS" --operations "$OPS" --concurrency 32 --hosts "127.0.0.1:$pport" --out "$d" --name run --quiet >"$OUT/$name.run.txt" 2>&1
callgrind_control -d measured "$pid" >/dev/null
curl -s "http://127.0.0.1:$((pport + 1))/metrics" | grep -E "^peregrine_proxy_(cache_)?(hits|misses)" >"$OUT/$name.metrics"
kill "$pid"; wait "$pid"
rm -rf "$d"; echo done
