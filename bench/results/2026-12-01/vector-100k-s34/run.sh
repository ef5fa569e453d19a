#!/usr/bin/env bash
# The 100k side by side of bench/results/2026-11-28/vector/run.sh (both servers pinned to CPU 0,
# the bench client to CPU 1), with every process of the run at nice -10 (Cassandra's threads
# reniced, Peregrine and the client started under nice) so that work at nice 19 elsewhere on
# the machine (a helper's builds) only gets the cycles the run leaves idle. Needs root.
#   CASSANDRA_HEAP=4G scripts/cassandra.sh start --port 9955 --clean
#   run.sh BIN DATA_DIR OUT_DIR [ROWS]
set -euo pipefail
BIN=$1 DATA=$2 OUT=$3 ROWS=${4:-100000}
CASS_PORT=${CASS_PORT:-9955}
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
CASS_PID=$(cat "$HOME/.cache/peregrine/cassandra-run-$CASS_PORT/cassandra.pid")
for t in /proc/"$CASS_PID"/task/*; do renice -n -10 -p "${t##*/}" >/dev/null; done
mkdir -p "$OUT"
{ date -u; uptime; } > "$OUT/started.txt"
CASS_PORT=$CASS_PORT SETTINGS=${SETTINGS:-default} nice -n -10 \
  "$root/bench/results/2026-11-28/vector/run.sh" "$BIN" "$BIN" "$DATA" "$OUT" "$ROWS"
{ date -u; uptime; } >> "$OUT/started.txt"
