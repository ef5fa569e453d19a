#!/bin/bash
# BIN=... MODE=nice:0 [REQ=us] SECS=15 schedtrace.sh OUT: bench/latency-open-loop.sh (YCSB A) with
# schedset.py in MODE, and `perf sched record` on CPU 0 (the server's) for SECS seconds of the
# open-loop phase; then perf sched latency / timehist of it.
S=$(cd "$(dirname "$0")" && pwd); OUT=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$S/../../../../.."
python3 "$S"/schedset.py "$BIN" "${MODE:-nice:0}" "${REQ:-0}" > $OUT/sched.log 2>&1 & sp=$!
nice -n -10 env BIN=$BIN OUT=$OUT/run PORT=19990 RECORDS=500000 PEAK_DURATION=60s DURATION=60s WORKLOADS=a bench/latency-open-loop.sh > $OUT/run.log 2>&1 & rp=$!
while [ ! -f $OUT/run/open-a.before ]; do sleep 0.5; done
sleep 10
perf sched record -C 0 -o $OUT/sched.data -- sleep ${SECS:-15} > $OUT/perf.log 2>&1
wait $rp; kill $sp
perf sched latency -i $OUT/sched.data --sort max > $OUT/latency.txt 2>&1
perf sched timehist -i $OUT/sched.data --cpu 0 > $OUT/timehist.txt 2>&1
echo done
