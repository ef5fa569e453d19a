#!/usr/bin/env bash
# Memory of whole-table reads (issue 16 item 3): RECORDS YCSB rows loaded, flushed and
# compacted, a 200 MB block cache; then `SELECT count(*)` and a paged `SELECT *` over every row
# (Python driver, fetch size 5000), the server's RSS sampled every 0.2 s through each.
# Usage: bounded.sh BIN OUT   (env RECORDS=2000000 PORT=47450)
set -euo pipefail
bin=$1 out=$2; mkdir -p "$out"
RECORDS=${RECORDS:-2000000} PORT=${PORT:-47450}; admin=$((PORT + 1))
PY=${PY:-$HOME/.cache/peregrine/venv/bin/python}
w=$(mktemp -d -p "${TMPDIR:-/tmp}")
printf 'storage_cache_bytes: 209715200\n' > $w/c.yaml
taskset -c 0 "$bin" serve --config $w/c.yaml --listen 127.0.0.1:$PORT --admin-listen 127.0.0.1:$admin --data-dir $w/data > "$out/server.log" 2>&1 &
sp=$!
trap 'kill $sp 2>/dev/null; wait $sp 2>/dev/null; rm -rf $w' EXIT
for _ in $(seq 1 300); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
taskset -c 1 "$bin" bench load --workload c --records $RECORDS --hosts 127.0.0.1:$PORT --concurrency 64 --out $w --name load --quiet > /dev/null 2>&1
"$bin" nodetool -h 127.0.0.1 -p $admin flush > /dev/null
"$bin" nodetool -h 127.0.0.1 -p $admin compact > /dev/null
rss() { awk '/^VmRSS/{print $2}' /proc/$sp/status; }
for q in count scan; do
  ( while kill -0 $sp 2>/dev/null; do echo "$(date +%s.%N) $(rss)"; sleep 0.2; done ) > "$out/rss-$q.txt" & mp=$!
  taskset -c 1 "$PY" - $PORT $q <<'PYEOF' | tee "$out/$q.txt"
import sys, time
from cassandra.cluster import Cluster
port, q = int(sys.argv[1]), sys.argv[2]
s = Cluster(["127.0.0.1"], port=port).connect()
t = time.time()
if q == "count":
    n = s.execute("SELECT count(*) FROM ycsb.usertable", timeout=600).one()[0]
else:
    s.default_fetch_size = 5000
    n = sum(1 for _ in s.execute("SELECT * FROM ycsb.usertable", timeout=600))
print(f"{q}: {n} rows in {time.time() - t:.1f} s")
PYEOF
  kill $mp; wait $mp 2>/dev/null || true
  awk -v q=$q 'NR==1{min=$2} {if($2>max)max=$2; if($2<min)min=$2} END{printf "%s: RSS min %.0f MiB, max %.0f MiB over %d samples\n", q, min/1024, max/1024, NR}' "$out/rss-$q.txt"
done
