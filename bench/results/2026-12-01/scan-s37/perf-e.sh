#!/usr/bin/env bash
# YCSB E on one server core with a perf profile of the server: load RECORDS rows natively,
# flush and major-compact, warm WARM, then run DURATION with `perf record` over PERF_SECS of it.
# Usage: perf-e.sh BIN PORT OUT   (env RECORDS=500000 WARM=10s DURATION=20s PERF=1 CONFIG=yaml WORKLOAD=e;
#   WORKLOAD_ARGS="--preset stress-read --payload 4096" replaces --workload)
set -euo pipefail
bin=$1 port=$2 out=$3; admin=$((port + 1)); mkdir -p "$out"
RECORDS=${RECORDS:-500000}
w=$(mktemp -d -p "${TMPDIR:-/tmp}")
taskset -c 0 "$bin" serve ${CONFIG:+--config "$CONFIG"} --listen 127.0.0.1:$port --admin-listen 127.0.0.1:$admin --data-dir $w/data > "$out/server.log" 2>&1 &
sp=$!
trap 'kill $sp 2>/dev/null; wait $sp 2>/dev/null; rm -rf $w' EXIT
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
taskset -c 1 "$bin" bench load ${WORKLOAD_ARGS:---workload ${WORKLOAD:-e}} --records $RECORDS --hosts 127.0.0.1:$port --concurrency 64 --out $w --name load --quiet > /dev/null 2>&1
"$bin" nodetool -h 127.0.0.1 -p $admin flush > /dev/null
"$bin" nodetool -h 127.0.0.1 -p $admin compact > /dev/null
echo "data dir after the major compaction: $(du -sb $w/data | cut -f1) bytes"
taskset -c 1 "$bin" bench run ${WORKLOAD_ARGS:---workload ${WORKLOAD:-e}} --records $RECORDS --duration ${WARM:-10s} --concurrency 64 --hosts 127.0.0.1:$port --out $w --name warm ${BENCH_ARGS:-} --quiet > /dev/null 2>&1
cpu() { awk '{print $14 + $15}' /proc/$sp/stat; }
# Context switches of every server thread: voluntary, involuntary.
csw() { cat /proc/$sp/task/*/status | awk '/^voluntary_ctxt/{v+=$2} /^nonvoluntary_ctxt/{n+=$2} END{print v, n}'; }
c0=$(cpu); s0=$(csw)
perfpid=""
if [[ -n "${PERF:-}" ]]; then
  perf record -F ${PERF_FREQ:-999} ${PERF_CG:--g} -p $sp -o "$out/perf.data" -- sleep ${PERF_SECS:-10} > /dev/null 2>&1 & perfpid=$!
fi
taskset -c 1 "$bin" bench run ${WORKLOAD_ARGS:---workload ${WORKLOAD:-e}} --records $RECORDS --duration ${DURATION:-20s} --concurrency 64 --hosts 127.0.0.1:$port --out "$out" --name run ${BENCH_ARGS:-} --quiet 2>/dev/null | grep -E "^(scan|insert|read|update|overall)" || true
c1=$(cpu); s1=$(csw)
echo "context switches (voluntary involuntary) before: $s0 after: $s1"
echo "server CPU ticks (1/100 s): $((c1 - c0))"
[[ -n "$perfpid" ]] && wait $perfpid; true
