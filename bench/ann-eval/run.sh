#!/bin/bash
# ANN library comparison behind the choice in the workspace Cargo.toml (usearch).
#   bench/ann-eval/run.sh [N]   (default 20000 vectors; 200 queries; 384 dims; fixed seed)
# Builds each candidate cold in release and prints build time, graph build time, recall@10
# against brute force and single-thread queries/s at several ef values.
set -euo pipefail
cd "$(dirname "$0")"
N="${1:-20000}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/ann-eval"
for l in hnsw instant usearch; do
  s=$(date +%s)
  (cd "$l" && cargo build --release -q)
  echo "BUILD $l $(( $(date +%s) - s ))s"
  "$CARGO_TARGET_DIR/release/eval-$l" "$N"
done
