#!/usr/bin/env bash
# Graph settings against build CPU, queries per CPU second and recall@10 on the index alone
# (crates/engine/examples/vector_tuning.rs), natively in release, pinned to one CPU.
#   tuning.sh EXAMPLE_BIN DATA ROWS OUT [SETTING...]
# EXAMPLE_BIN: target/release/examples/vector_tuning
#   (cargo build --release -p engine --example vector_tuning)
# DATA: a dir with base.fvecs and query.fvecs (~/.cache/peregrine/vectors-100k).
# CPU (default 1), REPEAT (query passes timed, default 3).
set -euo pipefail
BIN=$1 DATA=$2 ROWS=$3 OUT=$4
shift 4
SETTINGS=("$@")
if [ ${#SETTINGS[@]} -eq 0 ]; then
  SETTINGS=(default efc=96 efc=64 m=12 m=12,efc=96 q=bf16 q=bf16,cand=2,margin=0.003 q=f16)
fi
mkdir -p "$OUT"
taskset -c "${CPU:-1}" "$BIN" "$DATA/base.fvecs" "$DATA/query.fvecs" "$ROWS" "${REPEAT:-3}" \
  "${SETTINGS[@]}" > "$OUT/tuning-$ROWS.txt" 2> "$OUT/tuning-$ROWS.log"
cat "$OUT/tuning-$ROWS.txt"
