#!/bin/bash
# Instructions per proxy cache miss (issue 16 item 7): the release proxy (BIN) under callgrind,
# pinned to CPU PIN (default 1: one tokio worker, as in bench/proxy-cold-pass.sh), in front of a
# Cassandra at CPORT already holding RECORDS YCSB rows (`bench load --workload c`). Counting
# starts once the proxy listens; one sequential pass of OPS distinct keys through it (all
# misses) is dumped as NAME.cg, the proxy's hit and miss counters in NAME.metrics. The count
# includes the pass's driver connecting and preparing, and the proxy opening its upstream
# connections (the same for every build; about 1M instructions, ~50 per miss at 20,200).
# Per miss: own.py, callers.py, callees.py over NAME.cg, divided by the misses.
#
# HIT=1: instructions per cache hit (4 KB 100:0 warm) instead. The Cassandra holds RECORDS
# 4 KB rows (`bench load --preset stress-read --payload 4096`); a first sequential pass of OPS
# keys fills the cache (max_staleness 600 s: no entry is due for a refresh while valgrind slows
# the proxy down), counting starts after it, and the same pass again (all hits) is NAME.cg;
# NAME.metrics has the counters after each pass.
# Usage: CPORT=9961 PPORT=48750 OUT=dir [HIT=1 RECORDS=20000 OPS=20000] cgmiss.sh NAME BIN
set -u
name=$1 bin=$2
CPORT=${CPORT:-9961} PPORT=${PPORT:-48750} RECORDS=${RECORDS:-100000}
OPS=${OPS:-20200} OUT=${OUT:-$PWD} PIN=${PIN:-1} HIT=${HIT:-0}
admin=$((PPORT + 1))
d="$OUT/data-$name"; rm -rf "$d"; mkdir -p "$d"
workload=(--workload c)
config=()
if [ "$HIT" = 1 ]; then
    workload=(--preset stress-read --payload 4096)
    printf 'proxy:\n  cache_bytes: 1073741824\n  max_staleness: 600s\n' >"$d/proxy.yaml"
    config=(--config "$d/proxy.yaml")
fi
taskset -c "$PIN" valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$OUT/$name.all.cg" "$bin" serve "${config[@]}" --upstream "127.0.0.1:$CPORT" \
    --listen "127.0.0.1:$PPORT" --admin-listen "127.0.0.1:$admin" --data-dir "$d/proxy" >"$OUT/$name.log" 2>&1 &
pid=$!
for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$PPORT") 2>/dev/null && break; sleep 0.2; done
counters() { curl -s "http://127.0.0.1:$admin/metrics" | grep -E "^peregrine_proxy_cache_(hits|misses)"; }
run() { "$bin" bench run "${workload[@]}" --distribution sequential --records "$RECORDS" --operations "$1" \
    --concurrency 32 --hosts "127.0.0.1:$PPORT" --out "$d" --name "$2" --quiet >"$OUT/$name.$2.txt" 2>&1; }
: >"$OUT/$name.metrics"
if [ "$HIT" = 1 ]; then
    run "$OPS" fill
    { echo "# after the fill pass"; counters; echo "# after the counted pass"; } >"$OUT/$name.metrics"
fi
callgrind_control -z "$pid" >/dev/null
run "$OPS" run
callgrind_control -d measured "$pid" >/dev/null
counters >>"$OUT/$name.metrics"
kill "$pid"; wait "$pid"
mv "$OUT/$name.all.cg.1" "$OUT/$name.cg"
rm -f "$OUT/$name.all.cg"*
rm -rf "$d"
echo "$name: $(grep -v '^#' "$OUT/$name.metrics" | paste -sd' ')"
