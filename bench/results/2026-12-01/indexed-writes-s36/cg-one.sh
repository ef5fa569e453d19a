#!/bin/bash
# Callgrind of one indexed phase (copy of ../indexed-writes-s35/cg-one.sh, paths
# /work/wt/idxw2-cg, no CPU pinning, admin endpoint on PORT+50): server under valgrind, 100k
# rows loaded, a warm phase, counters zeroed, then one measured phase of PHASE_S seconds
# (default 20).
# Usage: cg-one.sh NAME BIN PORT PHASE
set -u
name=$1 bin=$2 port=$3 phase=$4 secs=${PHASE_S:-20}
o=/work/wt/idxw2-cg
d=$o/data-$name; rm -rf $d; mkdir -p $d
nice -n 19 valgrind --tool=callgrind --callgrind-out-file=$o/$name.cg $bin serve --listen 127.0.0.1:$port --admin-listen 127.0.0.1:$((port + 50)) --data-dir $d > $o/$name.log 2>&1 &
pid=$!
for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
nice -n 19 $bin bench indexed --endpoint "p=127.0.0.1:$port" --rows 100000 --phases $phase --phase 2s --settle 0s --seed 1 --out $o --name warm-$name > $o/warm-$name.txt 2>&1
callgrind_control -z $pid >/dev/null
nice -n 19 $bin bench indexed --endpoint "p=127.0.0.1:$port" --rows 100000 --reuse --phases $phase --phase ${secs}s --settle 0s --seed 2 --concurrency 8 --out $o --name m-$name > $o/m-$name.txt 2>&1
callgrind_control -d measured $pid >/dev/null
kill $pid; wait $pid
rm -rf $d
