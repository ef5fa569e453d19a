#!/bin/bash
# stalls-a.sh BIN NAME RATE: YCSB A open loop at RATE for 40 s on a fresh 500k-row store (server on CPU 0, client CPU 1), strace of the server's waits
set -e
BIN=$1; NAME=$2; RATE=$3; D=${OUT:-/tmp/stalls}/$NAME; PORT=19995
rm -rf $D; mkdir -p $D/data
taskset -c 0 $BIN serve --listen 127.0.0.1:$PORT --admin-listen 127.0.0.1:$((PORT+1)) --data-dir $D/data > $D/server.log 2>&1 &
SP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.2; done
taskset -c 1 $BIN bench load --workload a --records 500000 --hosts 127.0.0.1:$PORT --concurrency 32 --out $D --name load --quiet > /dev/null
strace -f --seccomp-bpf -e trace=fsync,fdatasync,clock_nanosleep,nanosleep,futex,unlink,unlinkat,openat,rename,renameat,renameat2 -e signal=none -T -tt -o $D/strace.txt -p $SP &
ST=$!; sleep 1; for t in /proc/$SP/task/*; do echo "$(basename $t) $(cat $t/comm)"; done > $D/threads.txt
"$(dirname "$0")"/sample.sh $((PORT+1)) $D/samples & SM=$!
taskset -c 1 $BIN bench run --workload a --records 500000 --duration 40s --concurrency 256 --target-rate $RATE --hosts 127.0.0.1:$PORT --out $D --name run --quiet > /dev/null
kill $ST $SM || true
kill $SP; wait $SP || true
