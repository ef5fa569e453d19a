# Sourced by the side-by-side scripts (compare-cassandra.sh, disk-cassandra.sh): starts real
# Cassandra 5.0.9 and Peregrine on one pinned core, stops them on exit, and waits for
# Cassandra's compactions. Expects ROOT, OUT, SERVER_CPU, CASSANDRA_PORT, PEREGRINE_PORT,
# PEREGRINE_BIN, PEREGRINE_DATA, KEEP and a `log` / `die` pair; sets PEREGRINE_PID,
# CASSANDRA_PID and CASSANDRA_DIR_USED. PEREGRINE_ARGS: extra `peregrine serve` arguments.
# START_CASSANDRA=0: Peregrine alone.

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

PEREGRINE_PID=""
CASSANDRA_STARTED=0
cleanup() {
    local rc=$?
    if [[ "$KEEP" == 1 ]]; then
        log "KEEP=1: leaving servers running (peregrine pid ${PEREGRINE_PID:-none}, cassandra port $CASSANDRA_PORT)"
        exit "$rc"
    fi
    if [[ -n "$PEREGRINE_PID" ]] && kill -0 "$PEREGRINE_PID" 2>/dev/null; then
        log "stopping peregrine (pid $PEREGRINE_PID)"
        kill -TERM "$PEREGRINE_PID" 2>/dev/null || true
        for _ in $(seq 1 60); do kill -0 "$PEREGRINE_PID" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$PEREGRINE_PID" 2>/dev/null && kill -KILL "$PEREGRINE_PID" 2>/dev/null || true
    fi
    if [[ "$CASSANDRA_STARTED" == 1 ]]; then
        "$ROOT/scripts/cassandra.sh" stop --port "$CASSANDRA_PORT" >&2 || true
    fi
    exit "$rc"
}

# start_servers CLEAN: both servers pinned to $SERVER_CPU; CLEAN=1 starts them on empty data
# directories (data earlier runs left, dropped keyspaces still on disk until compaction,
# would change flush and compaction work, and so the figures).
start_servers() {
    local clean=()
    [[ "$1" == 1 ]] && clean=(--clean)
    trap cleanup EXIT INT TERM
    if [[ "${START_CASSANDRA:-1}" == 1 ]]; then
        log "starting Cassandra 5.0.9 on $CASSANDRA_PORT pinned to CPU $SERVER_CPU (heap $CASSANDRA_HEAP)"
        taskset -c "$SERVER_CPU" "$ROOT/scripts/cassandra.sh" start --port "$CASSANDRA_PORT" "${clean[@]}" >&2
        CASSANDRA_STARTED=1
        CASSANDRA_DIR_USED="${CASSANDRA_DIR:-$HOME/.cache/peregrine/cassandra-run-$CASSANDRA_PORT}"
        CASSANDRA_PID="$(cat "$CASSANDRA_DIR_USED/cassandra.pid")"
        # Children inherit the affinity; pin every thread again in case it was already running.
        taskset -a -cp "$SERVER_CPU" "$CASSANDRA_PID" >/dev/null
    fi

    port_open "$PEREGRINE_PORT" && die "port $PEREGRINE_PORT is already in use"
    [[ "$1" == 1 ]] && rm -rf "$PEREGRINE_DATA"
    mkdir -p "$PEREGRINE_DATA"
    log "starting peregrine on $PEREGRINE_PORT pinned to CPU $SERVER_CPU (data $PEREGRINE_DATA)"
    # shellcheck disable=SC2086
    taskset -c "$SERVER_CPU" "$PEREGRINE_BIN" serve \
        --listen "127.0.0.1:$PEREGRINE_PORT" --data-dir "$PEREGRINE_DATA" ${PEREGRINE_ARGS:-} \
        >"$OUT/peregrine-server.log" 2>&1 &
    PEREGRINE_PID=$!
    local i
    for i in $(seq 1 120); do
        port_open "$PEREGRINE_PORT" && break
        kill -0 "$PEREGRINE_PID" 2>/dev/null || { tail -20 "$OUT/peregrine-server.log" >&2; die "peregrine exited during start"; }
        sleep 0.5
        (( i == 120 )) && die "peregrine did not listen on $PEREGRINE_PORT within 60 s"
    done
    taskset -a -cp "$SERVER_CPU" "$PEREGRINE_PID" >/dev/null
}

# settle_cassandra MAX: waits until Cassandra has run no compaction for 10 s (its
# system_views.sstable_tasks), at most MAX seconds.
settle_cassandra() {
    "${PEREGRINE_VENV:-$HOME/.cache/peregrine/venv}/bin/python" - "$CASSANDRA_PORT" "$1" <<'PYEOF' >&2
import sys, time
from cassandra.cluster import Cluster
port, limit = int(sys.argv[1]), float(sys.argv[2])
session = Cluster(["127.0.0.1"], port=port).connect()
start = quiet_since = time.time()
while time.time() - quiet_since < 10 and time.time() - start < limit:
    if list(session.execute("SELECT kind FROM system_views.sstable_tasks")):
        quiet_since = time.time()
    time.sleep(1)
print(f"[bench] Cassandra settled after {time.time() - start:.0f} s")
PYEOF
}
