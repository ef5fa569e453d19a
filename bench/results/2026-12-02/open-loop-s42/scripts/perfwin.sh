#!/bin/bash
# perfwin.sh NAME OUTDIR: run1.sh (FRACTIONS as set, default 0.5) and a `perf record` of the whole
# server process, every thread, stamped with the wall clock (-k CLOCK_REALTIME), over the open
# loop's DURATION; `perf script` then gives each sample's thread, time and symbol, so the
# seconds where the client saw its worst latency can be read against what the server ran then
# (windows.py).
S=$(cd "$(dirname "$0")" && pwd); name=$1; OUTDIR=$(mkdir -p "$2" && cd "$2" && pwd)
FRACTIONS=${FRACTIONS:-0.5} "$S"/run1.sh "$name" "$OUTDIR" & rp=$!
while [ ! -f "$OUTDIR/$name/open-a.threads-before" ]; do sleep 0.2; done
pid=$(pgrep -f "admin-listen 127.0.0.1:19991" | head -1)
perf record -F 1999 -k CLOCK_REALTIME -e cpu-clock -p "$pid" -o "$OUTDIR/$name.perf.data" -- sleep ${SECS:-60} > "$OUTDIR/$name.perf.log" 2>&1
wait $rp
perf script -i "$OUTDIR/$name.perf.data" -F comm,tid,time,ip,sym 2>/dev/null | gzip > "$OUTDIR/$name.perf.txt.gz"
rm -f "$OUTDIR/$name.perf.data"
echo done
