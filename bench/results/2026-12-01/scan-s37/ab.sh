#!/usr/bin/env bash
# Session start against session end, alternated: each workload ROUNDS times for OLD then NEW
# through perf-e.sh (fresh 500k-row store each run, settled). Usage: ab.sh OLD NEW OUT
# (env WORKLOADS="e a c" ROUNDS=2 PORT=47440)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
old=$1 new=$2 out=$3; mkdir -p "$out"
for w in ${WORKLOADS:-e a c}; do
  for r in $(seq 1 ${ROUNDS:-2}); do
    for side in old new; do
      bin=$old; [ $side = new ] && bin=$new
      WORKLOAD=$w "$here/perf-e.sh" "$bin" ${PORT:-47440} "$out/$w-$side-$r" > "$out/$w-$side-$r.stdout" 2>&1
      ops=$(awk '/^overall/{gsub(",","",$2); print $2}' "$out/$w-$side-$r.stdout")
      cpu=$(awk -F': ' '/server CPU ticks/{print $2}' "$out/$w-$side-$r.stdout")
      echo "$w $side round $r: $ops ops, $cpu cs CPU, $(python3 -c "print(round($ops*100/$cpu))") ops per server CPU s"
    done
  done
done
