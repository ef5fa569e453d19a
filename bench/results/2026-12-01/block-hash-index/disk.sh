#!/bin/bash
# BIN PORT NAME: disk bytes after loading YCSB 500k x 1 KB, then stress-write 500k small rows, each flushed + compacted.
set -u
BIN=$1 P=$2 N=$3; A=$((P+1)); D=/root/.cache/peregrine/disk-$N; rm -rf $D; mkdir -p $D
$BIN serve --listen 127.0.0.1:$P --admin-listen 127.0.0.1:$A --data-dir $D/data > /tmp/lead/s31/disk-$N.log 2>&1 & pid=$!
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$P") 2>/dev/null && break; sleep 0.2; done
$BIN bench load --workload a --records 500000 --drop --hosts 127.0.0.1:$P --concurrency 64 --quiet --out $D/b >/dev/null 2>&1
$BIN nodetool -h 127.0.0.1 -p $A flush >/dev/null; $BIN nodetool -h 127.0.0.1 -p $A compact >/dev/null
echo "$N ycsb500k $(du -sb $D/data/keyspaces | cut -f1)"
$BIN bench load --preset stress-write --records 500000 --hosts 127.0.0.1:$P --concurrency 64 --quiet --out $D/b >/dev/null 2>&1
$BIN nodetool -h 127.0.0.1 -p $A flush >/dev/null; $BIN nodetool -h 127.0.0.1 -p $A compact >/dev/null
echo "$N +stress500k $(du -sb $D/data/keyspaces | cut -f1)"
kill $pid; wait $pid; rm -rf $D
