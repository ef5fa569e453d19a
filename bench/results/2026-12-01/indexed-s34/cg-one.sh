#!/bin/bash
# Callgrind of indexed phases (README "Where an indexed lookup's time goes"); writes to /tmp/lead/cgidx: server under valgrind, 100k rows loaded, then one measured phase.
# Usage: one.sh NAME BIN PORT PHASE
set -u
name=$1 bin=$2 port=$3 phase=$4
d=/tmp/lead/cgidx/data-$name; rm -rf $d; mkdir -p $d
nice -n 19 taskset -c 1 valgrind --tool=callgrind --callgrind-out-file=/tmp/lead/cgidx/$name.cg $bin serve --listen 127.0.0.1:$port --data-dir $d > /tmp/lead/cgidx/$name.log 2>&1 &
pid=$!
for _ in $(seq 1 3000); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
nice -n 19 $bin bench indexed --endpoint "p=127.0.0.1:$port" --rows 100000 --phases $phase --phase 2s --settle 0s --seed 1 --out /tmp/lead/cgidx --name warm-$name > /tmp/lead/cgidx/warm-$name.txt 2>&1
callgrind_control -z $pid >/dev/null
nice -n 19 $bin bench indexed --endpoint "p=127.0.0.1:$port" --rows 100000 --reuse --phases $phase --phase 20s --settle 0s --seed 2 --concurrency 8 --out /tmp/lead/cgidx --name m-$name > /tmp/lead/cgidx/m-$name.txt 2>&1
callgrind_control -d measured $pid >/dev/null
kill $pid; wait $pid
