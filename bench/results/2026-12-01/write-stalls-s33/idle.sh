#!/bin/bash
# usage: [OUT=dir] [STRACE=1] [RECORDS=500000] idle.sh BIN NAME -- YCSB C reads (30 s) started
# right after a load, so the server's idle compaction (5 s without writes) runs during them.
set -e
BIN=$1; NAME=$2; D=${OUT:-/tmp/write-stalls}/$NAME; PORT=${PORT:-19987}; N=${RECORDS:-500000}
rm -rf $D; mkdir -p $D/data
taskset -c 0 $BIN serve --listen 127.0.0.1:$PORT --admin-listen 127.0.0.1:$((PORT+1)) --data-dir $D/data > $D/server.log 2>&1 &
SP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.2; done
taskset -c 1 $BIN bench load --workload c --records $N --hosts 127.0.0.1:$PORT --concurrency 64 --out $D --name load --quiet > /dev/null
curl -s http://127.0.0.1:$((PORT+1))/metrics | grep -E "^peregrine_storage_tables" > $D/tables-before.txt
if [ -n "$STRACE" ]; then
  strace -f --seccomp-bpf -e trace=fsync,fdatasync,futex,unlink,unlinkat,pread64,mmap,munmap,madvise,mprotect,brk,sched_yield -e signal=none -T -tt -o $D/strace.txt -p $SP &
  ST=$!; sleep 1; for t in /proc/$SP/task/*; do echo "$(basename $t) $(cat $t/comm)"; done > $D/threads.txt
fi
taskset -c 1 $BIN bench run --workload c --records $N --duration 30s --hosts 127.0.0.1:$PORT --server-pid $SP --out $D --name run --quiet > /dev/null
curl -s http://127.0.0.1:$((PORT+1))/metrics | grep -E "^peregrine_storage_(tables|idle)" > $D/tables-after.txt
[ -n "$STRACE" ] && kill $ST || true
kill $SP; wait $SP || true
"$(dirname "$0")/summary.py" $D/run.json
rm -rf $D/data
