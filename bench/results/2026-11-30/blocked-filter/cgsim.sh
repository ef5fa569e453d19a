#!/bin/bash
# YCSB C reads under callgrind with its cache simulator, on a store as a load leaves it (L0 tables
# and a memtable): load natively, stop, restart under valgrind, warm, measure. NAME BIN PORT RECORDS OPS
set -u
# LL (optional, e.g. 33554432,16,64): the simulated last-level cache; unset, valgrind takes the
# host's, which this VM reports as a 384 MiB direct-mapped L3 (simulated as 512 MiB).
name=$1 bin=$2 port=$3 RECORDS=$4 OPS=$5 OUT=${OUT:-$PWD}
ll=(); [[ -n ${LL:-} ]] && ll=(--LL="$LL")
admin=$((port + 1))
d="$OUT/data-$name"; rm -rf "$d"; mkdir -p "$d"
"$bin" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --data-dir "$d/data" >"$OUT/$name.native.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
"$bin" bench load --workload c --records "$RECORDS" --hosts "127.0.0.1:$port" --concurrency 32 --out "$d" --name load --quiet >/dev/null 2>&1
curl -s "http://127.0.0.1:$admin/metrics" | grep -E "^peregrine_storage_(tables|memtable)" > "$OUT/$name.tables"
kill "$pid"; wait "$pid"
valgrind --tool=callgrind --cache-sim=yes "${ll[@]}" --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$OUT/$name.cg" "$bin" serve --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" \
    --data-dir "$d/data" >"$OUT/$name.log" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
curl -s "http://127.0.0.1:$admin/metrics" | grep -E "^peregrine_storage_(tables|memtable)" > "$OUT/$name.tables-restarted"
"$bin" bench run --workload c --records "$RECORDS" --operations 100000 --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name warm --quiet >/dev/null 2>&1
callgrind_control -z "$pid" >/dev/null
"$bin" bench run --workload c --records "$RECORDS" --operations "$OPS" --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name run --quiet >/dev/null 2>&1
callgrind_control -d measured "$pid" >/dev/null
kill "$pid"; wait "$pid"
rm -rf "$d"
echo done
