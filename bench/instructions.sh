#!/usr/bin/env bash
# Server instructions per operation of two builds, counted by Callgrind: a figure that does
# not move with other load on the machine (wall-clock CPU per operation does), for before/after
# checks of the point path while the machine is busy. It is not a speed figure by itself
# (cache misses and contention do not show), so a change is still confirmed with
# bench/compare-builds.sh on a quiet machine.
#
#   OLD=/path/old/peregrine NEW=/path/new/peregrine bench/instructions.sh
#
# Each server runs under valgrind, is loaded with RECORDS YCSB records, warmed, then counted
# over OPS YCSB C reads (user-space instructions only). Prints instructions per read of both,
# and the functions whose own instructions per read changed most.
# Environment (defaults): RECORDS=20000 OPS=20000 WORKLOAD=c PORT_BASE=9864 OUT=<temp dir>
# OLD_CONFIG / NEW_CONFIG: a config file for the old / new server (e.g. a small block cache, or
# encryption at rest: the same binary as OLD and NEW with two configs counts what a setting costs).
# UPSTREAM=host:port counts proxies in front of that cluster instead: each build serves as a
# proxy (1 GiB cache, an hour's staleness unless a config is given), the reads are warmed
# through it (WARM operations, default 5 x RECORDS, so the measured reads are cache hits), and
# the two are profiled one after the other. BENCH_ARGS replaces `--workload $WORKLOAD` (e.g.
# "--preset stress-read --payload 4096", the 4 KB 100:0 case).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
: "${OLD:?OLD=path of the old peregrine binary}" "${NEW:?NEW=path of the new peregrine binary}"
RECORDS="${RECORDS:-20000}" OPS="${OPS:-20000}" WORKLOAD="${WORKLOAD:-c}" PORT_BASE="${PORT_BASE:-9864}"
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
UPSTREAM="${UPSTREAM:-}"
WARM="${WARM:-$( [ -n "$UPSTREAM" ] && echo $((RECORDS * 5)) || echo 5000 )}"
read -r -a shape <<<"${BENCH_ARGS:---workload $WORKLOAD}"
if [ -n "$UPSTREAM" ]; then
    printf 'proxy:\n  cache_bytes: 1073741824\n  max_staleness: 3600s\n' >"$OUT/proxy.yaml"
    : "${OLD_CONFIG:=$OUT/proxy.yaml}" "${NEW_CONFIG:=$OUT/proxy.yaml}"
fi
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install valgrind)" >&2; exit 1; }

# profile NAME BIN PORT [CONFIG]: the Callgrind profile of the measured reads in $OUT/NAME.cg.1
profile() {
    local name="$1" bin="$2" port="$3" d config=()
    [ -n "${4:-}" ] && config=(--config "$4")
    [ -n "$UPSTREAM" ] && config+=(--upstream "$UPSTREAM")
    d="$(mktemp -d)"
    valgrind --tool=callgrind --compress-strings=no --compress-pos=no \
        --callgrind-out-file="$OUT/$name.cg" "$bin" serve "${config[@]}" --listen "127.0.0.1:$port" \
        --data-dir "$d/data" >"$OUT/$name.log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
    local bench=("$NEW" bench)
    "${bench[@]}" load "${shape[@]}" --records "$RECORDS" --hosts "127.0.0.1:$port" \
        --concurrency 32 --out "$d" --name load --quiet >/dev/null 2>&1
    "${bench[@]}" run "${shape[@]}" --records "$RECORDS" --operations "$WARM" \
        --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name warm --quiet >/dev/null 2>&1
    callgrind_control -z "$pid" >/dev/null
    "${bench[@]}" run "${shape[@]}" --records "$RECORDS" --operations "$OPS" \
        --concurrency 32 --hosts "127.0.0.1:$port" --out "$d" --name run --quiet >/dev/null 2>&1
    callgrind_control -d measured "$pid" >/dev/null
    kill "$pid"; wait "$pid" || true
    rm -rf "$d"
}
if [ -n "$UPSTREAM" ]; then   # one at a time: both would load the same upstream table
    profile old "$OLD" "$PORT_BASE" "${OLD_CONFIG:-}"
    profile new "$NEW" "$((PORT_BASE + 1))" "${NEW_CONFIG:-}"
else
    profile old "$OLD" "$PORT_BASE" "${OLD_CONFIG:-}" &
    profile new "$NEW" "$((PORT_BASE + 1))" "${NEW_CONFIG:-}" &
    wait
fi
python3 "$ROOT/bench/callgrind_diff.py" "$OUT/old.cg.1" "$OUT/new.cg.1" "$OPS"
echo "profiles: $OUT/{old,new}.cg.1 (callgrind_annotate reads them)"
