#!/bin/bash
# sample.sh ADMINPORT OUT: every 0.2 s, a line: unix time, sealed memtables, L0 tables, compactions active, flushes pending, memtable bytes
while true; do
  m=$(curl -s --max-time 1 "http://127.0.0.1:$1/metrics") || { sleep 0.2; continue; }
  [ -z "$m" ] && { sleep 0.2; continue; }
  echo "$(date +%s.%N) $(echo "$m" | awk '/^peregrine_storage_sealed_memtables /{s=$2} /^peregrine_storage_tables\{level="0"\}/{l=$2} /^peregrine_storage_compactions_active /{c=$2} /^peregrine_storage_flushes_pending /{f=$2} /^peregrine_storage_memtable_bytes /{mb=$2} END{print s, l, c, f, mb}')"
  sleep 0.2
done >>"$2"
