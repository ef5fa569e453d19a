#!/bin/bash
# OLD NEW OUT: ab.sh's YCSB C case alone (3 rounds): two builds on CPU 0, bench (NEW's) on CPU 1.
# OUT/cpu-split.txt: each server's user/system ticks, read/write syscalls and context switches after the
# loads and at the end (session 35).
set -u
OLD=$1 NEW=$2 OUT=$3; mkdir -p "$OUT"
D=/root/.cache/peregrine/ab; rm -rf $D; mkdir -p $D
serve() { exec taskset -c 0 "$1" serve --listen "127.0.0.1:$2" --admin-listen "127.0.0.1:$(( $2 + 100 ))" --data-dir "$D/$2"; }
serve "$OLD" 19981 > "$OUT/old-server.log" 2>&1 & po=$!
serve "$NEW" 19982 > "$OUT/new-server.log" 2>&1 & pn=$!
for p in 19981 19982; do for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.2; done; done
B() { taskset -c 1 "$NEW" bench "$@" --out "$OUT" --quiet; }
for p in 19981 19982; do
  B load --workload a --records 500000 --drop --hosts 127.0.0.1:$p --concurrency 256 --name load-ycsb-$p >/dev/null 2>&1
done
split() { for p in $po $pn; do echo "$1 pid $p utime/stime ticks: $(cut -d" " -f14,15 /proc/$p/stat) $(grep -E "syscr|syscw" /proc/$p/io | tr "\n" " ") csw $(cat /proc/$p/task/*/status | awk "/voluntary_ctxt_switches/{s+=\$2} END{print s}")"; done; }
split "after load" > "$OUT/cpu-split.txt"; echo "old=$po new=$pn" >> "$OUT/cpu-split.txt"
B compare --a "new=127.0.0.1:19982@$pn" --b "old=127.0.0.1:19981@$po" --rounds 3 --duration 20s --warmup 10s \
  --concurrency 64 --connections 2 --workload c --records 500000 --name ycsb-c > "$OUT/compare.log" 2>&1
split end >> "$OUT/cpu-split.txt"
kill $po $pn; wait $po $pn; rm -rf $D
grep -E "ops/s sustained|p99 ms|per server CPU" "$OUT/ycsb-c.txt"
