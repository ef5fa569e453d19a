#!/bin/bash
# YCSB C reads under callgrind with its cache simulator. MODE=fresh: the store as a load leaves it (L0 tables
# and a memtable); MODE=settled: flushed and major-compacted; MODE=idle: left idle until the server's
# idle compaction ran. WORKLOAD (default c), WARM operations (default 100000), CONFIG (a YAML file
# for both servers, optional), PIN (a CPU: the server under valgrind gets only it, so its runtime has one
# worker), WORKLOAD_ARGS (the bench's workload options instead of `--workload $WORKLOAD`, e.g.
# "--preset stress-mixed --ratio 80:20 --payload 4096"). Load natively, stop, restart under
# valgrind, warm, measure.
# NAME BIN PORT RECORDS OPS
set -u
name=$1 bin=$2 port=$3 RECORDS=$4 OPS=$5 OUT=${OUT:-$PWD}
admin=$((port + 1))
d="$OUT/data-$name"; rm -rf "$d"; mkdir -p "$d"
"$bin" serve ${CONFIG:+--config "$CONFIG"} --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --data-dir "$d/data" >"$OUT/$name.native.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
"$bin" bench load ${WORKLOAD_ARGS:---workload ${WORKLOAD:-c}} --records "$RECORDS" --hosts "127.0.0.1:$port" --concurrency 32 --out "$d" --name load --quiet >/dev/null 2>&1
case "${MODE:-fresh}" in
settled) "$bin" nodetool -h 127.0.0.1 -p "$admin" flush >/dev/null && "$bin" nodetool -h 127.0.0.1 -p "$admin" compact >/dev/null ;;
idle) for _ in $(seq 1 600); do
        m=$(curl -s "http://127.0.0.1:$admin/metrics")
        grep -q '^peregrine_storage_idle_compactions_total [1-9]' <<<"$m" && grep -q '^peregrine_storage_tables{level="0"} [01]$' <<<"$m" &&
            grep -q '^peregrine_storage_compactions_active 0' <<<"$m" && break
        sleep 1
      done ;;
esac
curl -s "http://127.0.0.1:$admin/metrics" | grep -E "^peregrine_storage_tables" > "$OUT/$name.tables"
kill "$pid"; wait "$pid"
${PIN:+taskset -c $PIN} valgrind --tool=callgrind --cache-sim=yes --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$OUT/$name.cg" "$bin" serve ${CONFIG:+--config "$CONFIG"} --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" \
    --data-dir "$d/data" >"$OUT/$name.log" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
"$bin" bench run ${WORKLOAD_ARGS:---workload ${WORKLOAD:-c}} --records "$RECORDS" --operations "${WARM:-100000}" --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name warm --quiet >/dev/null 2>&1
callgrind_control -z "$pid" >/dev/null
"$bin" bench run ${WORKLOAD_ARGS:---workload ${WORKLOAD:-c}} --records "$RECORDS" --operations "$OPS" --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name run --quiet >/dev/null 2>&1
callgrind_control -d measured "$pid" >/dev/null
kill "$pid"; wait "$pid"
rm -rf "$d"
echo done
