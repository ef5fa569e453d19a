#!/bin/bash
# usage: [OUT=dir] [STRACE=1] [DUR=20s] run.sh BIN NAME  -- 4 KB 80:20 for 20 s against a fresh server on core 0
set -e
BIN=$1; NAME=$2; D=${OUT:-/tmp/write-stalls}/$NAME; PORT=${PORT:-19977}
rm -rf $D; mkdir -p $D/data
taskset -c 0 $BIN serve --listen 127.0.0.1:$PORT --admin-listen 127.0.0.1:$((PORT+1)) --data-dir $D/data > $D/server.log 2>&1 &
SP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.2; done
taskset -c 1 $BIN bench load --preset stress-read --payload 4096 --records 100000 --drop --hosts 127.0.0.1:$PORT --concurrency 256 --out $D --name load --quiet > /dev/null
if [ -n "$STRACE" ]; then
  strace -f --seccomp-bpf -e trace=fsync,fdatasync,clock_nanosleep,nanosleep,futex,unlink,unlinkat,munmap,madvise -e signal=none -T -tt -o $D/strace.txt -p $SP &
  ST=$!; sleep 1; for t in /proc/$SP/task/*; do echo "$(basename $t) $(cat $t/comm)"; done > $D/threads.txt
fi
taskset -c 1 $BIN bench run --preset stress-mixed --ratio 80:20 --payload 4096 --records 100000 --duration ${DUR:-20s} --warmup 5s --hosts 127.0.0.1:$PORT --server-pid $SP --out $D --name run --quiet > /dev/null
[ -n "$STRACE" ] && kill $ST || true
kill $SP; wait $SP || true
"$(dirname "$0")/summary.py" $D/run.json
