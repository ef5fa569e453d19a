#!/usr/bin/env bash
# Run the Go driver (gocql, github.com/apache/cassandra-gocql-driver/v2) tests against a CQL endpoint.
#   tests/go-driver/run.sh PORT [HOST]     (HOST defaults to 127.0.0.1)
# Offline: scripts/setup.sh downloads the modules once (`go mod download`); here GOPROXY=off, so a
# missing module is an error, never a fetch. Extra arguments after HOST go to `go test`, e.g.
# `run.sh 9042 127.0.0.1 -run TestPaging`. The closing line is `N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -lt 1 ]; then
  echo "usage: $0 PORT [HOST] [go test args...]" >&2
  exit 2
fi
export CQL_PORT="$1"
export CQL_HOST="${2:-127.0.0.1}"
shift $(( $# >= 2 ? 2 : 1 ))
export GOPROXY=off GOFLAGS="-mod=readonly -buildvcs=false"
summary="$(mktemp)"
trap 'rm -f "$summary"' EXIT
status=0
GO_SUITE_SUMMARY="$summary" go test -count=1 -p 1 -v "$@" . || status=$?
if [ -s "$summary" ]; then
  cat "$summary"
else
  echo "the test binary did not finish (build error or crash)"
  echo "0 passed, 1 failed"
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
