#!/usr/bin/env bash
# Disk footprint and write amplification: Peregrine (standalone) beside real Cassandra 5.0.9,
# on the same data (issue 16 item 8).
#
#   bench/disk-cassandra.sh                       # the defaults below
#   RECORDS=200000 UPDATE_OPS=400000 bench/disk-cassandra.sh   # a quick one
#
# Both servers start on empty data directories, pinned to $SERVER_CPU (bench/servers.sh), the
# bench client on $CLIENT_CPU. For each server in turn:
#   1. load: RECORDS YCSB records (10 fields of 100 B), then a flush and a wait until no
#      compaction has run for 10 s; the disk is measured;
#   2. updates: UPDATE_OPS operations of YCSB A (half reads, half one-field updates, zipfian),
#      then the same flush and wait; the disk is measured again.
# Disk: `du` of the server's files, its tables apart from its log (Peregrine's journal,
# Cassandra's commit log). Written: the server process's write_bytes (/proc/PID/io: every byte
# it sent to the disk, log, flushes and compactions). Acknowledged: the bytes the client's
# acknowledged writes carried (fields plus a 24-byte key, counted from the bench's JSON report).
# Write amplification = written / acknowledged. The table goes to $OUT/disk.txt.
#
# Environment (defaults): RECORDS=1000000 UPDATE_OPS=2000000 PEREGRINE_PORT=9042
#   CASSANDRA_PORT=9142 (JMX port CASSANDRA_PORT-1000, as scripts/cassandra.sh sets it)
#   SERVER_CPU=0 CLIENT_CPU=1 CASSANDRA_HEAP=1G OUT=bench/results/<UTC date>/disk
#   SETTLE_MAX=900 PEREGRINE_BIN=target/release/peregrine BENCH="$PEREGRINE_BIN bench"
#   PEREGRINE_ADMIN_PORT=PEREGRINE_PORT+1000 (its admin endpoint, for `nodetool flush`)
#   SERVERS="peregrine cassandra" (the servers measured, in order; Cassandra is started only
#   when measured) PEREGRINE_CONFIG=<a config file for Peregrine> (unset: its defaults)
# For Peregrine, the bytes its flushes and compactions wrote (table files, from its /metrics)
# and its tables per level after settling go to $OUT/peregrine-bytes.txt: the rest of what it
# wrote is its journal (and a few KB of manifests).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

RECORDS="${RECORDS:-1000000}"
UPDATE_OPS="${UPDATE_OPS:-2000000}"
PEREGRINE_PORT="${PEREGRINE_PORT:-9042}"
CASSANDRA_PORT="${CASSANDRA_PORT:-9142}"
PEREGRINE_ADMIN_PORT="${PEREGRINE_ADMIN_PORT:-$((PEREGRINE_PORT + 1000))}"
SERVER_CPU="${SERVER_CPU:-0}"
CLIENT_CPU="${CLIENT_CPU:-1}"
export CASSANDRA_HEAP="${CASSANDRA_HEAP:-1G}"
SETTLE_MAX="${SETTLE_MAX:-900}"
KEEP=0
OUT="${OUT:-$ROOT/bench/results/$(date -u +%Y-%m-%d)/disk}"
PEREGRINE_DATA="${PEREGRINE_DATA:-$HOME/.cache/peregrine/disk-peregrine-data}"
PEREGRINE_BIN="${PEREGRINE_BIN:-$ROOT/target/release/peregrine}"
BENCH="${BENCH:-$PEREGRINE_BIN bench}"
PEREGRINE_ARGS="--admin-listen 127.0.0.1:$PEREGRINE_ADMIN_PORT"
[[ -n "${PEREGRINE_CONFIG:-}" ]] && PEREGRINE_ARGS+=" --config $PEREGRINE_CONFIG"
[[ " ${SERVERS:-peregrine cassandra} " == *" cassandra "* ]] || START_CASSANDRA=0
JAVA17="${JAVA_HOME_17:-/usr/lib/jvm/java-17-openjdk-amd64}"
CASSANDRA_LIB="${PEREGRINE_CASSANDRA_HOME:-$HOME/.cache/peregrine/cassandra-5.0.9}/lib"

log() { echo "[disk $(date -u +%H:%M:%S)] $*" >&2; }
die() { echo "[disk] error: $*" >&2; exit 1; }

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
scripts/setup.sh >&2
[[ -x "$PEREGRINE_BIN" ]] || die "$PEREGRINE_BIN missing (build with cargo build --release -p peregrine)"
# shellcheck source=bench/servers.sh
source "$ROOT/bench/servers.sh"
start_servers 1

# Cassandra's nodetool is a class of its jar; Java 17 needs the module openings its scripts pass.
cassandra_nodetool() {
    "$JAVA17/bin/java" --add-exports java.base/sun.nio.ch=ALL-UNNAMED \
        --add-opens java.base/sun.nio.ch=ALL-UNNAMED --add-exports java.base/jdk.internal.ref=ALL-UNNAMED \
        --add-opens java.base/jdk.internal.ref=ALL-UNNAMED --add-exports java.base/jdk.internal.misc=ALL-UNNAMED \
        -Duser.home="$OUT" -cp "$CASSANDRA_LIB/*" org.apache.cassandra.tools.NodeTool \
        -p "$((CASSANDRA_PORT - 1000))" "$@" 2>&1 | grep -v ' DEBUG ' || true
}

# settle NAME: flushes the server's memtables, then waits until its compactions are over: for
# Cassandra, no compaction task for 10 s; for Peregrine (whose pending-task figure is an
# estimate that need not reach 0), its completed compactions and the bytes of its files
# unchanged for 15 s (replaced tables leave the disk within 5 s of their compaction). At most
# SETTLE_MAX seconds.
settle() {
    if [[ "$1" == cassandra ]]; then
        cassandra_nodetool flush >&2
        settle_cassandra "$SETTLE_MAX"
        return
    fi
    "$PEREGRINE_BIN" nodetool -p "$PEREGRINE_ADMIN_PORT" flush >&2
    local start quiet_since now state last=""
    start=$(date +%s); quiet_since=$start
    while now=$(date +%s); (( now - quiet_since < 15 && now - start < SETTLE_MAX )); do
        state="$("$PEREGRINE_BIN" nodetool -p "$PEREGRINE_ADMIN_PORT" compactionstats \
            | grep '^compactions completed') $(du -sb "$PEREGRINE_DATA/keyspaces" | cut -f1)"
        [[ "$state" == "$last" ]] || quiet_since=$now
        last="$state"
        sleep 1
    done
    log "peregrine settled after $(( $(date +%s) - start )) s"
}

written() { awk '/^write_bytes/ {print $2}' "/proc/$1/io"; }

# peregrine_bytes PHASE: Peregrine's flushed and compacted table bytes so far, and its tables
# per level, from its /metrics, as one line of $OUT/peregrine-bytes.txt.
peregrine_bytes() {
    curl -sf "http://127.0.0.1:$PEREGRINE_ADMIN_PORT/metrics" | awk -v phase="$1" '
        /^peregrine_storage_flushed_bytes_total / { f = $2 }
        /^peregrine_storage_compacted_bytes_total / { c = $2 }
        /^peregrine_storage_tables\{/ { t = t " " $2 }
        END { printf "%s flushed %.0f compacted %.0f tables_per_level%s\n", phase, f, c, t }' \
        >>"$OUT/peregrine-bytes.txt"
}

# disk NAME: "<table bytes> <log bytes>" of the server's files.
disk() {
    if [[ "$1" == cassandra ]]; then
        echo "$(du -sb "$CASSANDRA_DIR_USED/data/data" | cut -f1) $(du -sb "$CASSANDRA_DIR_USED/data/commitlog" | cut -f1)"
    else
        local log_bytes
        log_bytes=$(find "$PEREGRINE_DATA" -maxdepth 1 -name '*.jnl' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
        echo "$(du -sb "$PEREGRINE_DATA/keyspaces" | cut -f1) $log_bytes"
    fi
}

client() { taskset -c "$CLIENT_CPU" $BENCH "$@"; }
: >"$OUT/phases.txt"
: >"$OUT/peregrine-bytes.txt"
for name in ${SERVERS:-peregrine cassandra}; do
    case "$name" in
        peregrine) port=$PEREGRINE_PORT pid=$PEREGRINE_PID ;;
        cassandra) port=$CASSANDRA_PORT pid=$CASSANDRA_PID ;;
        *) die "unknown server $name in SERVERS" ;;
    esac
    w0=$(written "$pid")
    log "$name: loading $RECORDS records"
    client load --workload a --records "$RECORDS" --drop --hosts "127.0.0.1:$port" --label "$name" \
        --concurrency 256 --out "$OUT" --name "load-$name" --quiet >/dev/null
    settle "$name"
    w1=$(written "$pid")
    echo "$name load $((w1 - w0)) $(disk "$name") $OUT/load-$name.json" >>"$OUT/phases.txt"
    [[ "$name" == peregrine ]] && peregrine_bytes load
    log "$name: $UPDATE_OPS YCSB A operations"
    client run --workload a --records "$RECORDS" --operations "$UPDATE_OPS" --hosts "127.0.0.1:$port" \
        --label "$name" --concurrency 64 --connections 2 --out "$OUT" --name "updates-$name" --quiet >/dev/null
    settle "$name"
    w2=$(written "$pid")
    echo "$name updates $((w2 - w1)) $(disk "$name") $OUT/updates-$name.json" >>"$OUT/phases.txt"
    [[ "$name" == peregrine ]] && peregrine_bytes updates
done

python3 - "$OUT/phases.txt" "$ROOT/bench" <<'PYEOF' | tee "$OUT/disk.txt"
import json, sys
sys.path.insert(0, sys.argv[2])
from disk_split import acknowledged
mb = lambda b: f"{b / 1e6:,.1f} MB"
print("| server | phase | tables on disk | log on disk | written to disk | acknowledged | write amplification |")
print("|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    name, phase, written, tables, log, report = line.split()
    ack = acknowledged(json.load(open(report)))
    print(f"| {name} | {phase} | {mb(int(tables))} | {mb(int(log))} | {mb(int(written))} | {mb(ack)} | {int(written) / ack:.2f} |")
PYEOF
