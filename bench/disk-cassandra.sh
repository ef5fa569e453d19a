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
#   SERVERS="peregrine cassandra" (the servers measured, in order; both are started either way)
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
    log "$name: $UPDATE_OPS YCSB A operations"
    client run --workload a --records "$RECORDS" --operations "$UPDATE_OPS" --hosts "127.0.0.1:$port" \
        --label "$name" --concurrency 64 --connections 2 --out "$OUT" --name "updates-$name" --quiet >/dev/null
    settle "$name"
    w2=$(written "$pid")
    echo "$name updates $((w2 - w1)) $(disk "$name") $OUT/updates-$name.json" >>"$OUT/phases.txt"
done

python3 - "$OUT/phases.txt" <<'PYEOF' | tee "$OUT/disk.txt"
import json, sys
KEY = 24  # bytes of a YCSB key ("user" and up to 20 digits)
def acknowledged(report):
    w, total = report["workload"], 0
    for op in report["ops"]:
        done = op["count"] - op["errors"] - op["timeouts"]
        if op["op"] == "insert":
            total += done * (w["field_count"] * w["field_length"] + KEY)
        elif op["op"] in ("update", "read-modify-write"):
            fields = w["field_count"] if w["write_all_fields"] else 1
            total += done * (fields * w["field_length"] + KEY)
    return total
mb = lambda b: f"{b / 1e6:,.1f} MB"
print("| server | phase | tables on disk | log on disk | written to disk | acknowledged | write amplification |")
print("|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    name, phase, written, tables, log, report = line.split()
    ack = acknowledged(json.load(open(report)))
    print(f"| {name} | {phase} | {mb(int(tables))} | {mb(int(log))} | {mb(int(written))} | {mb(ack)} | {int(written) / ack:.2f} |")
PYEOF
