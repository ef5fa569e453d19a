#!/bin/bash
# Callgrind before/after for the scan-writev change: YCSB E (100k rows, 5k warm, 3k measured) and
# YCSB C (200k rows, 30k warm, 30k measured), each store loaded, flushed and major-compacted
# (MODE=settled), as in ../session-ab-s28. Usage: run.sh NAME BIN PORT [e|c ...]
# Writes $CG/NAME-{e,c}.cg (the measured part only) and the servers' logs in $CG/NAME-{e,c}.run
# (CG defaults to ./callgrind, not committed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
name=$1 bin=$2 port=$3; shift 3
cg=${CG:-$here/callgrind}; mkdir -p "$cg"
ws=("$@"); [ ${#ws[@]} -eq 0 ] && ws=(e c)
for w in "${ws[@]}"; do
  case $w in
  e) recs=100000 warm=5000 ops=3000 ;;
  c) recs=200000 warm=30000 ops=30000 ;;
  esac
  d="$cg/$name-$w.run"; rm -rf "$d"; mkdir -p "$d"
  OUT=$d MODE=settled WORKLOAD=$w WARM=$warm \
    bash "$here/../idle-compaction/cgsim.sh" "$name-$w" "$bin" "$port" "$recs" "$ops" >/dev/null
  # The measured part is the first dump (callgrind_control -d); NAME.cg is what came after.
  cp "$d/$name-$w.cg.1" "$cg/$name-$w.cg"
done
