#!/usr/bin/env bash
# Build and run the Rust `scylla` driver tests against a CQL endpoint.
#   tests/rust-driver/run.sh PORT [HOST]     (HOST defaults to 127.0.0.1)
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -lt 1 ]; then
  echo "usage: $0 PORT [HOST]" >&2
  exit 2
fi
export CQL_PORT="$1"
export CQL_HOST="${2:-127.0.0.1}"
export CARGO_TARGET_DIR="$HOME/.cache/peregrine-target-rustdriver"
exec cargo test --tests -- --test-threads=1
