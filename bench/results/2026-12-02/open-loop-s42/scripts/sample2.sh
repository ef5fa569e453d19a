#!/bin/bash
# sample2.sh ADMINPORT OUT: every 0.1 s a line: unix time, then from /metrics: block cache hits,
# misses, execute requests answered, L0 tables, compactions active, sealed memtables, flushes
# pending; then the CPU ticks of the server's threads by name (peregrine = request threads,
# fjall:worker = flushes and compactions), found by the port's listening process.
port=$1 out=$2
while true; do
  m=$(curl -s --max-time 1 "http://127.0.0.1:$port/metrics") || { sleep 0.1; continue; }
  [ -z "$m" ] && { sleep 0.1; continue; }
  pid=$(pgrep -f "admin-listen 127.0.0.1:$port" | head -1)
  th=""
  if [ -n "$pid" ]; then
    th=$(for f in /proc/$pid/task/*/stat; do sed -E 's/^[0-9]+ \((.*)\) (.*)$/\1\t\2/' "$f" 2>/dev/null; done |
         awk -F'\t' '{split($2, a, " "); gsub(" ", "_", $1); t[$1] += a[12] + a[13]} END {printf "req %d bg %d", t["peregrine"], t["fjall:worker"]}')
  fi
  echo "$(date +%s.%N) $(echo "$m" | awk '/^peregrine_storage_block_cache_hits_total /{h=$2} /^peregrine_storage_block_cache_misses_total /{x=$2} /^peregrine_request_duration_seconds_count\{opcode="execute"\}/{e=$2} /^peregrine_storage_sealed_memtables /{s=$2} /^peregrine_storage_tables\{level="0"\}/{l=$2} /^peregrine_storage_compactions_active /{c=$2} /^peregrine_storage_flushes_pending /{f=$2} END{printf "hits %s miss %s exec %s l0 %s comp %s sealed %s fp %s", h, x, e, l, c, s, f}') $th"
  sleep 0.1
done >>"$out"
