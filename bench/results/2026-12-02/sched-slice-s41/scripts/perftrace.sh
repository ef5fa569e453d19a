#!/bin/bash
# BIN=... SECS=15 perftrace.sh OUT: bench/latency-open-loop.sh (YCSB A) and a flat `perf record`
# of the server process for SECS seconds of the open-loop phase (10 s in).
S=$(cd "$(dirname "$0")" && pwd); OUT=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$S/../../../../.."
nice -n -10 env BIN=$BIN OUT=$OUT/run PORT=19990 RECORDS=500000 PEAK_DURATION=60s DURATION=60s WORKLOADS=a bench/latency-open-loop.sh > $OUT/run.log 2>&1 & rp=$!
while [ ! -f $OUT/run/open-a.before ]; do sleep 0.5; done
sleep 10
pid=$(pgrep -f "$BIN serve" | head -1)
perf record -e cycles -p $pid -o $OUT/perf.data -- sleep ${SECS:-15} > $OUT/perf.log 2>&1
wait $rp
perf report -i $OUT/perf.data --no-children --sort sym --stdio 2>/dev/null | grep -v "^#" | grep -v "^$" | head -60 > $OUT/flat.txt
echo done
