#!/bin/bash
# Cold pass through the proxy against the same reads straight to Cassandra (issue 16 item 7):
# Cassandra on CPORT holds RECORDS YCSB rows (loaded by miss.sh or here with LOAD=1); the proxy
# (BIN, DRAM cache only) starts empty; OPS uniform YCSB C reads through it (mostly misses), then
# OPS straight to Cassandra. CPU ticks of each process per pass. NAME BIN CPORT PPORT RECORDS OPS
set -u
name=$1 bin=$2 cport=$3 pport=$4 RECORDS=$5 OPS=$6 OUT=${OUT:-$PWD}
d=$OUT/data-$name; rm -rf "$d"; mkdir -p "$d"
cpid=$(pgrep -f "cassandra-run-$cport" | head -1)
[ "${LOAD:-0}" = 1 ] && "$bin" bench load --workload c --records "$RECORDS" --drop --hosts "127.0.0.1:$cport" --concurrency 64 --out "$d" --name load --quiet >/dev/null 2>&1
serve() { exec "$bin" serve --upstream "127.0.0.1:$cport" --listen "127.0.0.1:$pport" --admin-listen "127.0.0.1:$((pport + 1))"; }
serve >"$OUT/$name.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && break; sleep 0.2; done
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
run() { "$bin" bench run --workload c --distribution uniform --records "$RECORDS" --operations "$OPS" --concurrency 32 --hosts "127.0.0.1:$1" --out "$d" --name "$2" --quiet; }
for pass in proxy direct proxy2 direct2; do
    case $pass in proxy*) port=$pport ;; *) port=$cport ;; esac
    p0=$(ticks "$pid"); c0=$(ticks "$cpid")
    run "$port" "$pass" >"$OUT/$name.$pass.txt" 2>&1
    p1=$(ticks "$pid"); c1=$(ticks "$cpid")
    ops=$(awk '$1 == "overall" {gsub(",", "", $4); print $4}' "$OUT/$name.$pass.txt")
    echo "$pass: $ops ops/s; proxy $((p1 - p0)) ticks, cassandra $((c1 - c0)) ticks for $OPS reads"
done
curl -s "http://127.0.0.1:$((pport + 1))/metrics" | grep -E "^peregrine_proxy_cache_(hits|misses)" >"$OUT/$name.metrics"
kill "$pid"; wait "$pid"; rm -rf "$d"
