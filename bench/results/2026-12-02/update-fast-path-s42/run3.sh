#!/bin/bash
# run3.sh LABEL PORTBASE: YCSB A, 4 KB 80:20, YCSB F for /work/wt/upd8-cg/peregrine-LABEL
L=$1 P=$2 B=/work/wt/upd8-cg/peregrine-$L
S=/work/wt/upd8/bench/results/2026-11-30/idle-compaction/cgsim.sh
O=/work/wt/upd8-cg/out; mkdir -p $O
cd /work/wt/upd8
(PIN=0 MODE=settled WORKLOAD=a WARM=100000 OUT=$O nice -n 10 $S $L $B $P 500000 20000) &
(PIN=0 MODE=settled WORKLOAD_ARGS="--preset stress-mixed --ratio 80:20 --payload 4096" WARM=20000 OUT=$O nice -n 10 $S ${L}-4k $B $((P+4)) 100000 10000) &
wait
PIN=0 MODE=settled WORKLOAD=f WARM=100000 OUT=$O nice -n 10 $S ${L}-f $B $((P+8)) 500000 20000
