#!/usr/bin/env bash
set -euo pipefail
BIN=${BIN:-/tmp/lead/bin/peregrine-s18}; CP=9970; PP=9972; OUT=/tmp/lead/px2
w=$(mktemp -d)
printf 'proxy:\n  cache_bytes: 1073741824\n  max_staleness: 10m\n' > $w/p.yaml
taskset -c 0 $BIN serve --config $w/p.yaml --listen 127.0.0.1:$PP --admin-listen 127.0.0.1:$((PP+1)) --data-dir $w/data --upstream 127.0.0.1:$CP > $OUT/proxy.log 2>&1 &
pp=$!
trap "kill $pp; rm -rf $w" EXIT
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PP") 2>/dev/null && break; sleep 0.1; done
taskset -c 1 $BIN bench run --preset stress-read --payload 4096 --records 50000 --operations 250000 --concurrency 64 --hosts 127.0.0.1:$PP --out $w --name warm --quiet >/dev/null 2>&1
cpu() { awk '{print $14, $15}' /proc/$pp/stat; }
c0=$(cpu)
perfpid=""; [[ -n "${PERF:-}" ]] && { perf record -F 499 --call-graph dwarf,16384 -p $pp -o $OUT/perf-hits.data -- sleep 3 >/dev/null 2>&1 & perfpid=$!; }
taskset -c 1 $BIN bench run --preset stress-read --payload 4096 --records 50000 --duration 10s --concurrency 64 --hosts 127.0.0.1:$PP --out $w --name hits --quiet 2>/dev/null | grep -E "^(read|overall)"
echo "proxy utime stime before: $c0 after: $(cpu)"
[[ -n "$perfpid" ]] && wait $perfpid; true
