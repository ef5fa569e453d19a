#!/bin/bash
# run1.sh NAME OUTDIR: one bench/latency-open-loop.sh run of /tmp/lead/bin/peregrine-NAME (YCSB A by
# default, FRACTIONS as set), sampled every 0.1 s by sample2.sh.
S=$(cd "$(dirname "$0")" && pwd); name=$1; OUTDIR=$(mkdir -p "$2" && cd "$2" && pwd)
cd "$S/../../../../.."
out=$OUTDIR/$name
"$S"/sample2.sh 19991 $out.samples & sp=$!
nice -n -10 env BIN=${BINDIR:-/tmp/lead/bin}/peregrine-$name OUT=$out PORT=19990 RECORDS=500000 PEAK_DURATION=60s DURATION=${DURATION:-60s} WORKLOADS="${WORKLOADS:-a}" bench/latency-open-loop.sh > $out.log 2>&1
kill $sp
echo done
