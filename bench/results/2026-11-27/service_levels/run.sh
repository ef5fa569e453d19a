#!/usr/bin/env bash
# Runs `peregrine bench service-levels` against a standalone Peregrine with logins on: two
# roles, `web` (service level `interactive`, 1000 shares) and `etl` (`analytics`, 100 shares), each
# saturating the server with closed-loop point reads, alone and together. Then the same with
# no service level defined (the scheduler off), for comparison. Usage:
#   run.sh BIN OUT_DIR
# Uses ports 19581 (CQL) and 19582 (admin), a fresh data dir under OUT_DIR, and the Python
# driver of PY (default ~/.cache/peregrine/venv/bin/python) for the set-up statements.
set -euo pipefail
BIN=$1 OUT=$2
PY=${PY:-$HOME/.cache/peregrine/venv/bin/python}
RECORDS=${RECORDS:-10000}
PHASE=${PHASE:-10s}
ROUNDS=${ROUNDS:-2}
CASES=${CASES:-levels no-levels}
CONC=${CONC:-16}
mkdir -p "$OUT"
DATA=$(mktemp -d)
CFG=$(mktemp)
printf 'authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\nrole_manager: CassandraRoleManager\ndata_file_check: off\n' > "$CFG"
[ -n "${SLOTS:-}" ] && echo "service_level_slots: $SLOTS" >> "$CFG"
"$BIN" serve --config "$CFG" --listen 127.0.0.1:19581 --data-dir "$DATA" \
  --admin-listen 127.0.0.1:19582 > "$OUT/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$CFG"' EXIT
for _ in $(seq 1 600); do (echo > /dev/tcp/127.0.0.1/19581) 2>/dev/null && break; sleep 0.1; done
"$BIN" bench load --preset stress-read --records "$RECORDS" --hosts 127.0.0.1:19581 \
  --user cassandra --password cassandra --out "$OUT/load" > "$OUT/load.log" 2>&1
cql() { "$PY" - "$@" <<'PYEOF'
import sys
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster
c = Cluster(["127.0.0.1"], port=19581, auth_provider=PlainTextAuthProvider("cassandra", "cassandra"))
s = c.connect()
for stmt in sys.argv[1:]:
    s.execute(stmt)
c.shutdown()
PYEOF
}
cql "CREATE ROLE web WITH PASSWORD = 'pw' AND LOGIN = true" \
    "CREATE ROLE etl WITH PASSWORD = 'pw' AND LOGIN = true" \
    "GRANT SELECT ON KEYSPACE stress TO web" "GRANT SELECT ON KEYSPACE stress TO etl"
run_case() { # name, note
  "$BIN" bench service-levels --hosts 127.0.0.1:19581 --records "$RECORDS" \
    --high-user web --high-password pw --low-user etl --low-password pw \
    --concurrency "$CONC" --phase "$PHASE" --rounds "$ROUNDS" --server-note "$2" \
    --out "$OUT" --name "$1" 2> "$OUT/$1.bench.log"
}
cql "CREATE SERVICE LEVEL interactive WITH SHARES = 1000" \
    "CREATE SERVICE LEVEL analytics WITH SHARES = 100" \
    "ATTACH SERVICE LEVEL interactive TO web" "ATTACH SERVICE LEVEL analytics TO etl"
case " $CASES " in *" levels "*)
  run_case levels "web: interactive 1000 shares, etl: analytics 100 shares; service_level_slots ${SLOTS:-default (CPU count)}";;
esac
cql "DROP SERVICE LEVEL interactive" "DROP SERVICE LEVEL analytics"
case " $CASES " in *" no-levels "*)
  run_case no-levels "no service level defined (scheduler off): web and etl alike";;
esac
