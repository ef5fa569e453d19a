#!/bin/bash
# BIN PORT OUT: one server on CPU 0, load 200k YCSB records, run YCSB A for OPS ops under perf stat.
set -u
BIN=$1 P=$2 OUT=$3 OPS=${OPS:-300000} WL=${WL:-a}
D=/root/.cache/peregrine/sysab-$P; rm -rf $D; mkdir -p $D
taskset -c 0 $BIN serve --listen 127.0.0.1:$P --admin-listen 127.0.0.1:$((P+100)) --data-dir $D > $OUT.server.log 2>&1 & pid=$!
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$P") 2>/dev/null && break; sleep 0.2; done
B=/work/wt/read16-peregrine-v2
taskset -c 1 $B bench load --workload a --records 200000 --drop --hosts 127.0.0.1:$P --concurrency 256 --quiet --out /tmp/lead/s31/bo >/dev/null 2>&1
taskset -c 1 $B bench run --workload $WL --records 200000 --operations 100000 --hosts 127.0.0.1:$P --concurrency 64 --connections 2 --quiet --out /tmp/lead/s31/bo >/dev/null 2>&1
perf stat -p $pid -e task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_write,syscalls:sys_enter_writev,syscalls:sys_enter_sendto,syscalls:sys_enter_futex,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_recvfrom,syscalls:sys_enter_read,page-faults -o $OUT.perf &
pp=$!
sleep 0.5
taskset -c 1 $B bench run --workload $WL --records 200000 --operations $OPS --hosts 127.0.0.1:$P --concurrency 64 --connections 2 --out /tmp/lead/s31/bo > $OUT.bench 2>&1
kill -INT $pp; wait $pp
kill $pid; wait $pid; rm -rf $D
