#!/bin/bash
# Read cost of storage settings under Callgrind: NAME BIN PORT RECORDS OPS CONFIG [MODE]
# MODE ca (default): load and run RECORDS YCSB A operations natively with CONFIG, restart under
#   valgrind with it, warm with 20,000 reads, then count OPS YCSB C reads and OPS A operations.
# MODE e: load and run 20,000 YCSB E operations natively, restart, warm with 1,000, count OPS E.
set -u
name=$1 bin=$2 port=$3 RECORDS=$4 OPS=$5 conf=$6 mode=${7:-ca} OUT=${OUT:-$PWD}
admin=$((port + 1))
d="$OUT/data-$name"; rm -rf "$d"; mkdir -p "$d"
serve() { exec "$@" serve --config "$conf" --listen "127.0.0.1:$port" --admin-listen "127.0.0.1:$admin" --data-dir "$d/data"; }
wait_port() { for _ in $(seq 1 1200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return; sleep 0.2; done; }
b() { "$bin" bench "$1" --workload "$2" --records "$RECORDS" ${3:+--operations $3} --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name "$4" --quiet >/dev/null 2>&1; }
# Counts OPS operations of workload $1 alone, dumped as $2.
measure() { callgrind_control -z "$pid" >/dev/null; b run "$1" "$OPS" "run$1"; callgrind_control -d "$2" "$pid" >/dev/null; }
serve "$bin" >"$OUT/$name.native.log" 2>&1 &
pid=$!; wait_port
if [[ $mode == e ]]; then b load e "" load; b run e 20000 mixed; else b load a "" load; b run a "$RECORDS" updates; fi
curl -s "http://127.0.0.1:$admin/metrics" > "$OUT/$name.metrics-native"
kill "$pid"; wait "$pid"
serve valgrind --tool=callgrind --compress-strings=no --compress-pos=no --callgrind-out-file="$OUT/$name.cg" "$bin" >"$OUT/$name.log" 2>&1 &
pid=$!; wait_port
if [[ $mode == e ]]; then
    b run e 1000 warm
    measure e opsE
else
    b run c 20000 warm
    measure c readsC
    measure a opsA
fi
curl -s "http://127.0.0.1:$admin/metrics" > "$OUT/$name.metrics-run"
kill "$pid"; wait "$pid"
du -sh "$d" > "$OUT/$name.du"
rm -rf "$d"
echo done
