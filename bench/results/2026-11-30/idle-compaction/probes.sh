#!/bin/bash
# NAME BIN PORT RECORDS [CONFIG]: a fresh store loaded with RECORDS YCSB rows; without CONFIG
# (e.g. one with `storage_idle_compaction_seconds: 0`), waits until the idle compaction has merged
# L0; then 100k YCSB C reads. Writes NAME.before / NAME.after (the storage's table counts and
# filter counters, from /metrics) and NAME.run.txt in $OUT (default: here): the filter counters'
# growth over 100k is the tables each read probed in vain.
set -u
name=$1 bin=$2 port=$3 RECORDS=$4 CONFIG=${5:-}
OUT=${OUT:-$PWD}; cd "$OUT"
admin=$((port + 1)); d=$OUT/data-$name; rm -rf $d; mkdir -p $d
serve() { exec "$bin" serve ${CONFIG:+--config "$CONFIG"} --listen 127.0.0.1:$port --admin-listen 127.0.0.1:$admin --data-dir $d/data; }
serve > $d.log 2>&1 & pid=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.2; done
"$bin" bench load --workload c --records $RECORDS --hosts 127.0.0.1:$port --concurrency 32 --out $d --name load --quiet >/dev/null 2>&1
m() { curl -s http://127.0.0.1:$admin/metrics | grep -E "^peregrine_storage_(tables|filter|idle|compactions_active)" | grep -v '} 0$'; }
if [ -z "$CONFIG" ]; then for _ in $(seq 1 300); do m | grep -q 'idle_compactions_total [1-9]' && ! m | grep -q 'tables{level="0"} [2-9]' && break; sleep 1; done; fi
m > $name.before
"$bin" bench run --workload c --records $RECORDS --operations 100000 --hosts 127.0.0.1:$port --concurrency 32 --out $d --name run --quiet > $name.run.txt 2>&1
m > $name.after
kill $pid; wait $pid; rm -rf $d
paste $name.before $name.after
