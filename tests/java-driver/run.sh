#!/usr/bin/env bash
# Run the Apache Cassandra Java driver (4.x) tests against a CQL endpoint.
#   tests/java-driver/run.sh PORT [HOST]     (HOST defaults to 127.0.0.1)
# Offline: scripts/setup.sh fetches the Maven dependencies once. Extra arguments after HOST go to
# Maven, e.g. `run.sh 9042 127.0.0.1 -Dtest=PagingTest`.
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -lt 1 ]; then
  echo "usage: $0 PORT [HOST] [maven args...]" >&2
  exit 2
fi
export CQL_PORT="$1"
export CQL_HOST="${2:-127.0.0.1}"
shift $(( $# >= 2 ? 2 : 1 ))
exec mvn -o -q -B -Dstyle.color=never test "$@"
