#!/bin/bash
# BIN=... MODES="name=bgmode[,reqslice_us] ..." WORKLOADS=a modes.sh OUTDIR: one
# bench/latency-open-loop.sh run per mode, the same binary, with schedset.py keeping the server's
# background threads (and, given, its request threads) in that scheduling mode.
S=$(cd "$(dirname "$0")" && pwd); OUTDIR=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$S/../../../../.."
for m in $MODES; do
  name=${m%%=*}; spec=${m#*=}; bg=${spec%%,*}; req=0; [ "$spec" != "$bg" ] && req=${spec#*,}
  out=$OUTDIR/$name
  python3 "$S"/schedset.py "$BIN" "$bg" "$req" > $out.sched.log 2>&1 & sp=$!
  nice -n -10 env BIN=$BIN OUT=$out PORT=19990 RECORDS=500000 PEAK_DURATION=60s DURATION=60s WORKLOADS="${WORKLOADS:-a}" bench/latency-open-loop.sh > $out.log 2>&1
  kill $sp
done
echo alldone
