#!/usr/bin/env bash
# Used by proxy-s36/README.md: a proxy (BIN) on CPU 1 in front of a running Cassandra on CP (its
# 50k x 4 KB stress rows already loaded, pinned to CPU 0), 5 reads a key to warm, then 80:20 for DUR
# at CONC in flight; prints every cache counter after each, and the proxy's and Cassandra's CPU
# ticks over 80:20 (PERF=1: perf record -g of the proxy).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../../.."
BIN=${BIN:-$HOME/.cache/pt-rel/release/peregrine}; CP=${CP:-9970}; PP=${PP:-9972}; OUT=${OUT:-/tmp/lead/px2}
RECORDS=${RECORDS:-50000}
w=$(mktemp -d)
printf 'proxy:\n  cache_bytes: 1073741824\n  max_staleness: 10m\n' > $w/p.yaml
taskset -c 1 $BIN serve --config $w/p.yaml --listen 127.0.0.1:$PP --admin-listen 127.0.0.1:$((PP+1)) --data-dir $w/data --upstream 127.0.0.1:$CP > $OUT/proxy.log 2>&1 &
pp=$!
trap "kill $pp; rm -rf $w" EXIT
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PP") 2>/dev/null && break; sleep 0.1; done
info() { curl -s -X POST http://127.0.0.1:$((PP+1))/nodetool/info | python3 -c 'import json,sys; d=json.load(sys.stdin)["cache"]; print(" ".join(f"{k}={v}" for k,v in d.items() if v))'; }
taskset -c 1 $BIN bench run --preset stress-read --payload 4096 --records $RECORDS --operations $((RECORDS*5)) --concurrency 64 --hosts 127.0.0.1:$PP --out $w --name warm --quiet >/dev/null
echo "after warm: $(info)"
cpu() { awk '{print $14+$15}' /proc/$pp/stat; }
ccpu() { awk '{print $14+$15}' /proc/$(cat $HOME/.cache/peregrine/cassandra-run-$CP/cassandra.pid)/stat; }
c0=$(cpu); cc0=$(ccpu); t0=$(date +%s.%N); [[ -n "${PERF:-}" ]] && { perf record -F 999 -g -p $pp -o $OUT/perf.data -- sleep 8 >/dev/null 2>&1 & perfpid=$!; }
taskset -c 1 $BIN bench run --preset stress-mixed --ratio 80:20 --payload 4096 --records $RECORDS --duration ${DUR:-10s} --concurrency ${CONC:-64} --hosts 127.0.0.1:$PP --out $w --name mixed --quiet > $OUT/mixed.txt
echo "over 80:20 ($(python3 -c "import time; print(round(time.time() - $t0, 1))") s): proxy CPU ticks $(( $(cpu) - c0 )), Cassandra $(( $(ccpu) - cc0 )) (of $(getconf CLK_TCK)/s)"; [[ -n "${perfpid:-}" ]] && wait $perfpid
echo "after 80:20: $(info)"
grep -E "^(read|update|overall)" $OUT/mixed.txt
