#!/bin/bash
# NAMES="a b" WORKLOADS="a b c" [BINDIR=dir holding peregrine-<name>] latpair.sh OUTDIR: each binary in turn, bench/latency-open-loop.sh with WORKLOADS, metrics sampled
S=$(cd "$(dirname "$0")" && pwd); OUTDIR=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$S/../../../../.."
for name in $NAMES; do
  bin=${BINDIR:-/tmp/lead/bin}/peregrine-$name
  out=$OUTDIR/$name
  "$S"/sample.sh 19991 $out.samples & sp=$!
  nice -n -10 env BIN=$bin OUT=$out PORT=19990 RECORDS=500000 PEAK_DURATION=60s DURATION=60s WORKLOADS="$WORKLOADS" bench/latency-open-loop.sh > $out.log 2>&1
  kill $sp
done
echo alldone
