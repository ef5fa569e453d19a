#!/usr/bin/env bash
# Everything, in order (a sketch for CI; the lead wires it into .ci/run):
#   1. scripts/setup.sh (venv + Cassandra jars)        4. start a reference Cassandra 5.0.9
#   2. cargo build --bin peregrine                      5. start peregrine on a free port
#   3. cargo test --workspace                           6. pytest tests/python against peregrine
#   3b. fuzz targets, a short run each (scripts/fuzz.sh) 7. differential: peregrine vs Cassandra
#                                                        (scenarios, then the seeded generator)
#   (6 also runs the Rust and Java driver suites; 7 also runs the differential and the Java driver
#   suite through a proxy, peregrine --upstream Cassandra)
# Everything started is stopped on exit (trap). Exit status non-zero if any step failed.
#
# Environment: CASSANDRA_PORT (default 9142), PEREGRINE_PORT (default: a free port),
#   SKIP_CARGO=1 (reuse an existing build, skip cargo test), SKIP_CASSANDRA=1 (no differential).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${PEREGRINE_VENV:-$HOME/.cache/peregrine/venv}"
PY="$VENV/bin/python"
CASSANDRA_PORT="${CASSANDRA_PORT:-9142}"
# Cargo's target dir lives outside the checkout so CI rebuilds stay incremental.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/peregrine-target}"
TARGET="$CARGO_TARGET_DIR"
BIN="${PEREGRINE_BIN:-$TARGET/debug/peregrine}"
failed=()
peregrine_pid=""
cassandra_started=0
work="$(mktemp -d)"

steps_run=0
# Each step's name and start (bash's SECONDS), for the time table at the end: CI must stay
# well under its limit, and this says which step to shorten.
step_names=() step_started=()
step() {
    steps_run=$((steps_run + 1)); step_names+=("$*"); step_started+=("$SECONDS")
    echo; echo "=== $* ==="
}
# `checked NAME CMD...`: runs CMD with its output also kept in the step's log; a failure adds
# NAME to the failed steps and its log's last lines to the end of the run (CI keeps only the end).
failed_logs=()
checked() {
    local name="$1"; shift
    local log="$work/step-$steps_run.log"
    "$@" 2>&1 | tee "$log"
    if [[ ${PIPESTATUS[0]} != 0 ]]; then failed+=("$name"); failed_logs+=("$name|$log"); fi
}
# A client suite `tests/<dir>/run.sh PORT` as one step, named `what`.
suite() { local what="$1" dir="$2" port="$3"; step "$what"; checked "$what" "tests/$dir/run.sh" "$port"; }

proxy_pid=""
cleanup() {
    if [[ -n "$proxy_pid" ]] && kill -0 "$proxy_pid" 2>/dev/null; then
        kill -TERM "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true
    fi
    if [[ -n "$peregrine_pid" ]] && kill -0 "$peregrine_pid" 2>/dev/null; then
        kill -TERM "$peregrine_pid"; wait "$peregrine_pid" 2>/dev/null || true
    fi
    if [[ "$cassandra_started" == 1 ]]; then scripts/cassandra.sh stop --port "$CASSANDRA_PORT" || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "setup"
scripts/setup.sh || { echo "setup failed"; exit 1; }

if [[ "${SKIP_CARGO:-0}" != 1 ]]; then
    step "cargo build --bin peregrine"
    cargo build --bin peregrine || { echo "build failed"; exit 1; }
    step "cargo test --workspace"
    checked "cargo test" cargo test --workspace
    if [[ "${SKIP_FUZZ:-0}" != 1 ]]; then
        step "fuzz targets (${FUZZ_SECONDS:-20} s each)"
        checked "fuzz" scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
    fi
fi
[[ -x "$BIN" ]] || { echo "no peregrine binary at $BIN"; exit 1; }

if [[ "${SKIP_CASSANDRA:-0}" != 1 ]]; then
    step "start Cassandra 5.0.9 on $CASSANDRA_PORT"
    if scripts/cassandra.sh start --port "$CASSANDRA_PORT" --clean; then
        cassandra_started=1
    else
        failed+=("cassandra start")
    fi
fi

step "start peregrine"
PEREGRINE_PORT="${PEREGRINE_PORT:-$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
"$BIN" serve --listen "127.0.0.1:$PEREGRINE_PORT" --data-dir "$work/data" >"$work/peregrine.log" 2>&1 &
peregrine_pid=$!
for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PEREGRINE_PORT") 2>/dev/null && break
    kill -0 "$peregrine_pid" 2>/dev/null || break
    sleep 0.1
done
if ! (exec 3<>"/dev/tcp/127.0.0.1/$PEREGRINE_PORT") 2>/dev/null; then
    echo "peregrine did not listen on $PEREGRINE_PORT"; tail -n 50 "$work/peregrine.log"; exit 1
fi

export CQL_HOST=127.0.0.1 CQL_PORT="$PEREGRINE_PORT" CQL_KIND=peregrine PEREGRINE_BIN="$BIN"
# test_migrate.py also copies onto a two-node Cassandra cluster it starts (about a minute).
export MIGRATE_CLUSTER=1
step "pytest tests/python against peregrine on $PEREGRINE_PORT"
checked "tests/python" "$PY" -m pytest tests/python tests/differential/test_differential.py \
    tests/differential/test_generate.py -k "not test_scenario" -q

step "bench: a short YCSB run against peregrine (crates/bench/tests)"
PEREGRINE_BENCH_HOSTS="127.0.0.1:$PEREGRINE_PORT" \
    checked "bench integration" cargo test -p bench --test workload_against_server

suite "Rust scylla driver against peregrine" rust-driver "$PEREGRINE_PORT"
suite "Java driver against peregrine" java-driver "$PEREGRINE_PORT"
suite "Go driver (gocql) against peregrine" go-driver "$PEREGRINE_PORT"
suite "Node.js cassandra-driver against peregrine" node-driver "$PEREGRINE_PORT"
suite "Spring Boot / Spring Data Cassandra against peregrine" spring-data "$PEREGRINE_PORT"
suite "YCSB 0.17.0 (Java driver 3.0.0) against peregrine" ycsb "$PEREGRINE_PORT"

if [[ "$cassandra_started" == 1 ]]; then
    step "differential: Cassandra (a) vs peregrine (b)"
    checked "differential" \
        "$PY" tests/differential/run.py --a "127.0.0.1:$CASSANDRA_PORT" --b "127.0.0.1:$PEREGRINE_PORT"

    # Random schemas and statements from a fixed seed (deterministic), compared with Cassandra;
    # longer random runs offline: tests/differential/generate.py --seed random --count 5000.
    step "generated differential (seed 1, 1500 statements): Cassandra (a) vs peregrine (b)"
    checked "generated differential" \
        "$PY" tests/differential/generate.py --a "127.0.0.1:$CASSANDRA_PORT" --b "127.0.0.1:$PEREGRINE_PORT" \
        --seed 1 --count 1500

    step "differential through the proxy: Cassandra (a) vs peregrine --upstream Cassandra (b)"
    PROXY_PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    "$BIN" serve --listen "127.0.0.1:$PROXY_PORT" --data-dir "$work/proxy-data" \
        --upstream "127.0.0.1:$CASSANDRA_PORT" >"$work/proxy.log" 2>&1 &
    proxy_pid=$!
    for _ in $(seq 1 300); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && break
        sleep 0.1
    done
    checked "differential through the proxy" \
        "$PY" tests/differential/run.py --a "127.0.0.1:$CASSANDRA_PORT" --b "127.0.0.1:$PROXY_PORT"

    suite "Java driver through the proxy (peregrine --upstream Cassandra)" java-driver "$PROXY_PORT"
    suite "Go driver (gocql) through the proxy (peregrine --upstream Cassandra)" go-driver "$PROXY_PORT"
    suite "Node.js cassandra-driver through the proxy (peregrine --upstream Cassandra)" node-driver "$PROXY_PORT"
    suite "Spring Boot / Spring Data Cassandra through the proxy (peregrine --upstream Cassandra)" spring-data "$PROXY_PORT"
    suite "YCSB through the proxy (peregrine --upstream Cassandra)" ycsb "$PROXY_PORT"
    kill -TERM "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null || true
fi

echo
echo "time per step (s):"
for i in "${!step_names[@]}"; do
    printf '%6d  %s\n' $(( ${step_started[$((i + 1))]:-$SECONDS} - step_started[i] )) "${step_names[i]}"
done
printf '%6d  total\n' "$SECONDS"
total_steps=$((steps_run))
echo "test-all: $((total_steps - ${#failed[@]})) passed, ${#failed[@]} failed"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "FAILED: ${failed[*]}"
    for entry in "${failed_logs[@]}"; do
        echo "--- ${entry%%|*}: last lines"; tail -n 40 "${entry#*|}" | cut -c1-400
    done
    echo "peregrine log: last lines"; tail -n 20 "$work/peregrine.log"
    exit 1
fi
echo "all passed"
