#!/usr/bin/env bash
set -euo pipefail
OUT=/tmp/idx11d-bisect
declare -A BIN=([new]=/tmp/idx11d-pg-new [entries]=/tmp/idx11d-pg-entries [old]=/tmp/idx11d-pg-main)
declare -A PORT=([new]=47780 [entries]=47781 [old]=47782)
eps=(); pids=(); dirs=()
for n in new entries old; do
  d=$(mktemp -d); dirs+=("$d")
  taskset -c 1 "${BIN[$n]}" serve --listen "127.0.0.1:${PORT[$n]}" --data-dir "$d" > "$OUT/$n.log" 2>&1 &
  p=$!; pids+=($p); eps+=(--endpoint "$n=127.0.0.1:${PORT[$n]}@$p")
done
trap 'kill ${pids[*]} 2>/dev/null; wait ${pids[*]} 2>/dev/null; rm -rf ${dirs[*]}' EXIT
for n in new entries old; do for _ in $(seq 1 600); do (echo >/dev/tcp/127.0.0.1/${PORT[$n]}) 2>/dev/null && break; sleep 0.1; done; done
uptime > $OUT/uptime.txt
taskset -c 0 /tmp/idx11d-pg-new bench indexed "${eps[@]}" --rows 1000000 --phases range,write --phase 10s --rounds 1 --out $OUT --name bisect 2> $OUT/bisect.log
uptime >> $OUT/uptime.txt
