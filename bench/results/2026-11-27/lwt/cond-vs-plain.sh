#!/usr/bin/env bash
# Issue 17 item 1 on one server: each conditional write against the same unconditional write,
# alternated on one Peregrine (BIN) with nothing else serving, so that no other server's
# background work (Cassandra's Paxos tables, GC) lands in one side's rounds. Prints, per pair,
# the median sustained ops/s and ops per server CPU second of ROUNDS rounds, their ratios, and
# the median of the per-round ratios.
#   cond-vs-plain.sh BIN OUT_DIR   (env: RECORDS DURATION ROUNDS CONC PORT)
set -euo pipefail
BIN=$1 OUT=$2
RECORDS=${RECORDS:-20000} DURATION=${DURATION:-10s} ROUNDS=${ROUNDS:-5} CONC=${CONC:-32}
PORT=${PORT:-19620}
mkdir -p "$OUT"
DATA=$(mktemp -d)
"$BIN" serve --listen "127.0.0.1:$PORT" --admin-listen 127.0.0.1:0 --data-dir "$DATA" \
  > "$OUT/cvp-server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 1 600); do (echo > "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
"$BIN" bench load --preset stress-write --records "$RECORDS" --hosts "127.0.0.1:$PORT" --quiet \
  --out "$DATA/out" > /dev/null 2>&1
# Inserts continue past every key used so far, so each IF NOT EXISTS writes a new row.
next=$RECORDS
# The order turns each round (plain first, then conditional first): a run that follows the
# other's inserts meets its flushes and compactions, so neither side may always come second.
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    order="stress-update lwt-update stress-write lwt-write"
  else
    order="lwt-write stress-write lwt-update stress-update"
  fi
  for preset in $order; do
    "$BIN" bench run --preset "$preset" --records "$RECORDS" --duration "$DURATION" --warmup 2s \
      --concurrency "$CONC" --hosts "127.0.0.1:$PORT" --server-pid "$PID" --insert-start "$next" \
      --quiet --out "$OUT/cvp-runs" --name "$preset-$round" > /dev/null 2>&1
    next=$((next + 2000000))
  done
done
python3 - "$OUT/cvp-runs" "$ROUNDS" <<'EOF' | tee "$OUT/cond-vs-plain.txt"
import json, statistics, sys
runs, rounds = sys.argv[1], int(sys.argv[2])
def med(preset, key):
    vals = []
    for r in range(1, rounds + 1):
        d = json.load(open(f"{runs}/{preset}-{r}.json"))
        assert d["overall"]["errors"] == 0, (preset, r)
        vals.append(d["overall"]["ops_per_sec_sustained"] if key == "ops" else d["ops_per_server_cpu_second"])
    return statistics.median(vals)
print(f"medians of {rounds} alternated rounds on one server")
def per_round(plain, cond):
    out = []
    for r in range(1, rounds + 1):
        p = json.load(open(f"{runs}/{plain}-{r}.json"))["overall"]["ops_per_sec_sustained"]
        c = json.load(open(f"{runs}/{cond}-{r}.json"))["overall"]["ops_per_sec_sustained"]
        out.append(c / p)
    return out
print(f"{'pair':34} {'plain ops/s':>12} {'cond ops/s':>11} {'ratio':>6} {'plain /cpu-s':>13} {'cond /cpu-s':>12} {'ratio':>6}  per-round ratios (median)")
for plain, cond in [("stress-update", "lwt-update"), ("stress-write", "lwt-write")]:
    po, co = med(plain, "ops"), med(cond, "ops")
    pc, cc = med(plain, "cpu"), med(cond, "cpu")
    rr = per_round(plain, cond)
    print(f"{plain + ' / ' + cond:34} {po:12,.0f} {co:11,.0f} {co / po:6.2f} {pc:13,.0f} {cc:12,.0f} {cc / pc:6.2f}  "
          + " ".join(f"{x:.2f}" for x in rr) + f" ({statistics.median(rr):.2f})")
EOF
