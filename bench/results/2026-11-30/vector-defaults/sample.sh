#!/usr/bin/env bash
# sample.sh PID LOG OUT: every 10 s, the time, the server's CPU ticks (utime+stime, 1/100 s) and the bench's last insert count.
PID=$1 LOG=$2 OUT=$3
while kill -0 $PID 2>/dev/null; do
  t=$(awk '{print $14+$15}' /proc/$PID/stat 2>/dev/null)
  r=$(grep -a "^insert" "$LOG" | tail -1 | sed 's/.*: \([0-9]*\)\/.*/\1/')
  echo "$(date -u +%T) $t $r" >> "$OUT"
  sleep 10
done
