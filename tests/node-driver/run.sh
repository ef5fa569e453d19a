#!/usr/bin/env bash
# Run the Node.js cassandra-driver tests against a CQL endpoint.
#   tests/node-driver/run.sh PORT [HOST]     (HOST defaults to 127.0.0.1)
# Offline: scripts/setup.sh installs node_modules once (`npm ci`). Extra arguments after HOST go
# to `node --test`, e.g. `run.sh 9042 127.0.0.1 --test-name-pattern=paging`. The test files run one
# after another; the closing line is `N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -lt 1 ]; then
  echo "usage: $0 PORT [HOST] [node --test args...]" >&2
  exit 2
fi
export CQL_PORT="$1"
export CQL_HOST="${2:-127.0.0.1}"
shift $(( $# >= 2 ? 2 : 1 ))
if [ ! -d node_modules/cassandra-driver ]; then
  echo "node_modules missing: run scripts/setup.sh" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
tap="$(mktemp)"
trap 'rm -f "$tap"' EXIT
status=0
node --test --test-concurrency=1 \
  --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" \
  "$@" ./*.test.js || status=$?
passed="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$tap")"
failed="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$tap")"
if [ -z "$passed" ] || [ -z "$failed" ]; then
  echo "node --test did not report its counts"
  passed="${passed:-0}" failed=$(( ${failed:-0} + 1 ))
  [ "$status" -ne 0 ] || status=1
fi
echo "$passed passed, $failed failed"
exit "$status"
