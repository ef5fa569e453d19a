#!/bin/bash
# OLD NEW OUT: two Peregrine builds on CPU 0 (ports 19981/19982), bench (NEW's) on CPU 1;
# YCSB C (500k), 4 KB 100:0 and 80:20 (100k), YCSB A: `bench compare`, 3 rounds alternated.
set -u
OLD=$1 NEW=$2 OUT=$3; mkdir -p "$OUT"
D=/root/.cache/peregrine/ab; rm -rf $D; mkdir -p $D
serve() { exec taskset -c 0 "$1" serve --listen "127.0.0.1:$2" --admin-listen "127.0.0.1:$(( $2 + 100 ))" --data-dir "$D/$2"; }
serve "$OLD" 19981 > "$OUT/old-server.log" 2>&1 & po=$!
serve "$NEW" 19982 > "$OUT/new-server.log" 2>&1 & pn=$!
for p in 19981 19982; do for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.2; done; done
B() { taskset -c 1 "$NEW" bench "$@" --out "$OUT" --quiet; }
for p in 19981 19982; do
  B load --preset stress-read --payload 4096 --records 100000 --drop --hosts 127.0.0.1:$p --concurrency 256 --name load-4k-$p >/dev/null 2>&1
done
A="old=127.0.0.1:19981@$po"; N="new=127.0.0.1:19982@$pn"
C=(--rounds 3 --duration 20s --warmup 10s --concurrency 64 --connections 2)
B compare --a "$N" --b "$A" "${C[@]}" --preset stress-read --payload 4096 --records 100000 --name stress-4k-read >/dev/null 2>&1
kill $po $pn; wait $po $pn; rm -rf $D
for f in stress-4k-read; do echo "== $f"; grep -E "ops/s sustained|p99 ms|per server CPU" "$OUT/$f.txt"; done
