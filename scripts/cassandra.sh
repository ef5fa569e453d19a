#!/usr/bin/env bash
# Run a real Apache Cassandra 5.0.9 (the reference Peregrine is compared with) on this machine.
#
#   scripts/cassandra.sh start  [--port N] [--clean]   # start, wait until CQL answers a query
#   scripts/cassandra.sh stop   [--port N]             # SIGTERM, wait for exit (SIGKILL after 60 s)
#   scripts/cassandra.sh status [--port N]             # exit 0 if running and answering CQL
#
# --port N     CQL port (default 9142, or $CASSANDRA_PORT). The storage port is N-2000 and the
#              JMX port N-1000, so two instances on distinct CQL ports do not collide.
# --clean      wipe the data directory before starting.
#
# Environment:
#   CASSANDRA_DIR          data/config/log dir (default $HOME/.cache/peregrine/cassandra-run-<port>)
#   CASSANDRA_AUTH=password  use PasswordAuthenticator + CassandraAuthorizer (login cassandra/cassandra);
#                          start then also waits until the default superuser exists.
#   CASSANDRA_HEAP         heap size (default 1G)
#   CASSANDRA_START_TIMEOUT seconds to wait for CQL (default 180)
#   CASSANDRA_EXTRA_YAML   a file appended to cassandra.yaml as written (e.g. a
#                          client_encryption_options section for the TLS tests); start
#                          then waits for the CQL port and Cassandra's "listening for CQL
#                          clients" line instead of a plain query
#   CASSANDRA_JVM_OPTS     extra JVM flags, split on spaces (e.g. a -Dcassandra.* property)
#   CASSANDRA_MATERIALIZED_VIEWS=1  set materialized_views_enabled: true (views are off by default,
#                          as in Cassandra's own cassandra.yaml)
#   CASSANDRA_JOIN=N       join the cluster of the instance on CQL port N (its seed) instead of
#                          starting a cluster of one; joins without bootstrapping data
#   PEREGRINE_CASSANDRA_HOME, PEREGRINE_VENV, JAVA_HOME_17  as in scripts/setup.sh
#
# Files in $CASSANDRA_DIR: conf/cassandra.yaml, conf/logback.xml (rewritten at each start),
# cassandra.pid, logs/system.log, logs/stdout.log, data/...
set -euo pipefail

CACHE="${PEREGRINE_CACHE:-$HOME/.cache/peregrine}"
CASSANDRA_HOME="${PEREGRINE_CASSANDRA_HOME:-$CACHE/cassandra-5.0.9}"
LIB="$CASSANDRA_HOME/lib"
VENV="${PEREGRINE_VENV:-$CACHE/venv}"
JAVA17="${JAVA_HOME_17:-/usr/lib/jvm/java-17-openjdk-amd64}"
HEAP="${CASSANDRA_HEAP:-1G}"
START_TIMEOUT="${CASSANDRA_START_TIMEOUT:-180}"

usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

cmd="${1:-}"; shift || true
PORT="${CASSANDRA_PORT:-9142}"
CLEAN=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --port) PORT="$2"; shift 2 ;;
        --port=*) PORT="${1#--port=}"; shift ;;
        --clean) CLEAN=1; shift ;;
        -h|--help) usage ;;
        *) echo "unknown argument: $1" >&2; usage ;;
    esac
done
[[ "$PORT" =~ ^[0-9]+$ && "$PORT" -ge 3024 && "$PORT" -le 65535 ]] || { echo "bad --port $PORT (3024..65535)" >&2; exit 2; }
STORAGE_PORT=$((PORT - 2000))
JMX_PORT=$((PORT - 1000))
DIR="${CASSANDRA_DIR:-$CACHE/cassandra-run-$PORT}"
PIDFILE="$DIR/cassandra.pid"
AUTH="${CASSANDRA_AUTH:-none}"
JOIN="${CASSANDRA_JOIN:-}"
[[ -z "$JOIN" || "$JOIN" =~ ^[0-9]+$ ]] || { echo "bad CASSANDRA_JOIN $JOIN" >&2; exit 2; }
CLUSTER_PORT="${JOIN:-$PORT}"

log() { echo "[cassandra:$PORT] $*"; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# PID from the pid file if that process is alive and is our CassandraDaemon; else empty.
live_pid() {
    [[ -f "$PIDFILE" ]] || return 0
    local pid; pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "CassandraDaemon" \
        && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$DIR/conf/cassandra.yaml"; then
        echo "$pid"
    fi
}

# Runs one CQL query through the Python driver; exit 0 when it answers.
cql_ping() {
    local py="$VENV/bin/python"
    [[ -x "$py" ]] || py=python3
    CQL_PORT="$PORT" CQL_AUTH="$AUTH" "$py" - <<'PY' 2>/dev/null
import os, sys, logging
logging.disable(logging.CRITICAL)
from cassandra.cluster import Cluster
kw = {}
if os.environ["CQL_AUTH"] == "password":
    from cassandra.auth import PlainTextAuthProvider
    kw["auth_provider"] = PlainTextAuthProvider("cassandra", "cassandra")
c = Cluster(["127.0.0.1"], port=int(os.environ["CQL_PORT"]), connect_timeout=3, **kw)
try:
    s = c.connect()
    row = s.execute("SELECT release_version FROM system.local", timeout=5).one()
    print(row.release_version)
finally:
    c.shutdown()
PY
}

write_config() {
    mkdir -p "$DIR/conf" "$DIR/logs" "$DIR/data"
    local authn=AllowAllAuthenticator authz=AllowAllAuthorizer roles=CassandraRoleManager
    if [[ "$AUTH" == password ]]; then authn=PasswordAuthenticator; authz=CassandraAuthorizer; fi
    cat >"$DIR/conf/cassandra.yaml" <<EOF
# Written by scripts/cassandra.sh; rewritten at each start.
cluster_name: peregrine-reference-$CLUSTER_PORT
num_tokens: 16
partitioner: org.apache.cassandra.dht.Murmur3Partitioner
endpoint_snitch: SimpleSnitch
seed_provider:
  - class_name: org.apache.cassandra.locator.SimpleSeedProvider
    parameters:
      - seeds: "127.0.0.1:$((CLUSTER_PORT - 2000))"
listen_address: 127.0.0.1
rpc_address: 127.0.0.1
storage_port: $STORAGE_PORT
native_transport_port: $PORT
start_native_transport: true
commitlog_sync: periodic
commitlog_sync_period: 10000ms
data_file_directories:
  - $DIR/data/data
commitlog_directory: $DIR/data/commitlog
saved_caches_directory: $DIR/data/saved_caches
hints_directory: $DIR/data/hints
cdc_raw_directory: $DIR/data/cdc_raw
authenticator: $authn
authorizer: $authz
role_manager: $roles
# Tests TRUNCATE and DROP often: no snapshot for each.
auto_snapshot: false
EOF
    if [[ -n "$JOIN" ]]; then echo "auto_bootstrap: false" >>"$DIR/conf/cassandra.yaml"; fi
    if [[ -n "${CASSANDRA_EXTRA_YAML:-}" ]]; then cat "$CASSANDRA_EXTRA_YAML" >>"$DIR/conf/cassandra.yaml"; fi
    if [[ "${CASSANDRA_MATERIALIZED_VIEWS:-0}" == 1 ]]; then
        echo "materialized_views_enabled: true" >>"$DIR/conf/cassandra.yaml"
    fi
    cat >"$DIR/conf/logback.xml" <<'EOF'
<configuration scan="false">
  <appender name="SYSTEMLOG" class="ch.qos.logback.core.FileAppender">
    <file>${cassandra.logdir}/system.log</file>
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="SYSTEMLOG"/></root>
</configuration>
EOF
}

do_status() {
    local pid; pid="$(live_pid)"
    if [[ -z "$pid" ]]; then
        if port_open "$PORT"; then log "not started by this script, but something listens on $PORT"; return 3; fi
        log "stopped"; return 1
    fi
    local v
    if v="$(cql_ping)"; then log "running, pid $pid, release_version $v, dir $DIR"; return 0; fi
    log "process $pid alive but CQL not answering (starting or stuck); see $DIR/logs/system.log"
    return 4
}

do_start() {
    [[ -f "$LIB/cassandra-all-5.0.9.jar" ]] || { echo "Cassandra jars missing in $LIB: run scripts/setup.sh" >&2; exit 1; }
    [[ -x "$JAVA17/bin/java" ]] || { echo "Java 17 missing at $JAVA17" >&2; exit 1; }
    local pid; pid="$(live_pid)"
    if [[ -n "$pid" ]]; then
        log "already running (pid $pid); waiting for CQL"
        wait_cql "$pid"; return
    fi
    if [[ -f "$PIDFILE" ]]; then log "removing stale pid file ($(cat "$PIDFILE" 2>/dev/null))"; rm -f "$PIDFILE"; fi
    local p
    for p in "$PORT" "$STORAGE_PORT" "$JMX_PORT"; do
        if port_open "$p"; then
            echo "[cassandra:$PORT] port $p is already in use by another process; pick another --port" >&2
            exit 1
        fi
    done
    if [[ "$CLEAN" == 1 ]]; then log "wiping $DIR/data"; rm -rf "$DIR/data"; fi
    write_config
    local jamm; jamm="$(ls "$LIB"/jamm-*.jar | head -n1)"
    local -a flags=(
        -Xms"$HEAP" -Xmx"$HEAP" -XX:+UseG1GC -XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath="$DIR/logs"
        -da -Xss256k
        -javaagent:"$jamm"
        -Djdk.attach.allowAttachSelf=true -Djava.security.manager=allow
        -Dcassandra.config="file://$DIR/conf/cassandra.yaml"
        -Dlogback.configurationFile="file://$DIR/conf/logback.xml"
        -Dcassandra.logdir="$DIR/logs" -Dcassandra.storagedir="$DIR/data"
        -Dcassandra-foreground=yes
        -Dcassandra.jmx.local.port="$JMX_PORT"
        -Dcassandra.ring_delay_ms=1000 -Dcassandra.skip_wait_for_gossip_to_settle=0
        -Dcassandra.superuser_setup_delay_ms=0
        # Java 17 module flags from Cassandra's conf/jvm17-server.options.
        --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
        --add-exports java.base/jdk.internal.ref=ALL-UNNAMED
        --add-exports java.base/sun.nio.ch=ALL-UNNAMED
        --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
        --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
        --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
        --add-exports java.sql/java.sql=ALL-UNNAMED
        --add-exports java.base/java.lang.ref=ALL-UNNAMED
        --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
        --add-exports java.base/java.lang.reflect=ALL-UNNAMED
        --add-opens java.base/java.lang.module=ALL-UNNAMED
        --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
        --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
        --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
        --add-opens java.base/jdk.internal.math=ALL-UNNAMED
        --add-opens java.base/jdk.internal.module=ALL-UNNAMED
        --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
        --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
        --add-opens java.base/sun.nio.ch=ALL-UNNAMED
        --add-opens java.base/java.io=ALL-UNNAMED
        --add-opens java.base/java.nio=ALL-UNNAMED
        --add-opens java.base/java.util.concurrent=ALL-UNNAMED
        --add-opens java.base/java.util=ALL-UNNAMED
        --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED
        --add-opens java.base/java.lang=ALL-UNNAMED
        --add-opens java.base/java.math=ALL-UNNAMED
        --add-opens java.base/java.lang.reflect=ALL-UNNAMED
        --add-opens java.base/java.net=ALL-UNNAMED
    )
    log "starting Cassandra 5.0.9 (heap $HEAP, auth $AUTH, storage port $STORAGE_PORT, jmx $JMX_PORT) in $DIR"
    # setsid: its own session, so the caller's job control or Ctrl-C does not kill it; stop does.
    # shellcheck disable=SC2206 # split on purpose
    [[ -n "${CASSANDRA_JVM_OPTS:-}" ]] && flags+=(${CASSANDRA_JVM_OPTS})
    setsid "$JAVA17/bin/java" "${flags[@]}" -cp "$DIR/conf:$LIB/*" \
        org.apache.cassandra.service.CassandraDaemon </dev/null >"$DIR/logs/stdout.log" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    wait_cql "$pid"
}

wait_cql() {
    local pid="$1" start=$SECONDS v
    while :; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "[cassandra:$PORT] process $pid exited during start; last log lines:" >&2
            tail -n 30 "$DIR/logs/system.log" "$DIR/logs/stdout.log" >&2 2>/dev/null || true
            rm -f "$PIDFILE"; exit 1
        fi
        if (( SECONDS - start > START_TIMEOUT )); then
            echo "[cassandra:$PORT] CQL did not answer within ${START_TIMEOUT}s (pid $pid still running); see $DIR/logs" >&2
            exit 1
        fi
        if port_open "$PORT" && [[ -n "${CASSANDRA_EXTRA_YAML:-}" ]]; then
            # The extra section may put TLS on the CQL port, which the plain ping cannot speak.
            if grep -q "Starting listening for CQL clients" "$DIR/logs/system.log" 2>/dev/null; then
                log "CQL port open on 127.0.0.1:$PORT after $((SECONDS - start)) s (pid $pid): $(grep -o "Starting listening for CQL clients.*" "$DIR/logs/system.log" | tail -1)"
                return 0
            fi
        elif port_open "$PORT"; then
            if [[ "$AUTH" == password ]] && ! grep -q "Created default superuser role" "$DIR/logs/system.log" 2>/dev/null \
                && ! grep -q "role 'cassandra' already exists\|Skipped default superuser setup" "$DIR/logs/system.log" 2>/dev/null; then
                # On a restart the role already exists; a successful login below proves it.
                if ! v="$(cql_ping)"; then sleep 0.5; continue; fi
            elif ! v="$(cql_ping)"; then sleep 0.5; continue; fi
            log "CQL answering on 127.0.0.1:$PORT after $((SECONDS - start)) s (pid $pid, release_version $v)"
            return 0
        fi
        sleep 0.5
    done
}

do_stop() {
    local pid; pid="$(live_pid)"
    if [[ -z "$pid" ]]; then
        [[ -f "$PIDFILE" ]] && { log "removing stale pid file"; rm -f "$PIDFILE"; }
        log "not running"; return 0
    fi
    log "stopping pid $pid (SIGTERM)"
    kill -TERM "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < 120; i++)); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; log "stopped after $((i / 2)) s"; return 0; }
        sleep 0.5
    done
    log "still alive after 60 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 1
    rm -f "$PIDFILE"
}

case "$cmd" in
    start) do_start ;;
    stop) do_stop ;;
    status) do_status ;;
    *) usage ;;
esac
