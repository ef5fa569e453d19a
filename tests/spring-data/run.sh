#!/usr/bin/env bash
# A Spring Boot 3 application on Spring Data Cassandra (Apache Cassandra Java driver 4.x), and its
# JUnit 5 tests, against a CQL endpoint.
#
#   tests/spring-data/run.sh --setup             # fetch the Maven dependencies into ~/.m2 (idempotent)
#   tests/spring-data/run.sh PORT [HOST] [mvn args...]   # HOST defaults to 127.0.0.1
#
# A run is offline (`mvn -o`); it does the --setup step first when the pom changed since the last
# one (its hash is the stamp) or its dependencies are missing, so a fresh machine needs nothing
# else than Maven and a JDK 17 (scripts/setup.sh runs --setup). Extra arguments go to Maven, e.g.
# `run.sh 9042 127.0.0.1 -Dtest=PagingTest`. The build goes to ~/.cache/peregrine-spring-data. The
# closing line is `N passed, N failed` (from Surefire's reports).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${PEREGRINE_CACHE:-$HOME/.cache/peregrine}"
BUILD="$HOME/.cache/peregrine-spring-data/target"
MVN=(mvn -B -Dstyle.color=never -f "$HERE/pom.xml")

# Maven leaves colour resets (ESC[0m) in its output even in batch mode: strip them (from stdout
# and stderr, merged) so that the closing line stands alone.
plain() { sed -u $'s/\e\\[[0-9;]*m//g'; }

setup() {
    local stamp="$CACHE/spring-data-tests.pom.sha256" want
    want="$(sha256sum "$HERE/pom.xml" | cut -d' ' -f1)"
    local starter="$HOME/.m2/repository/org/springframework/boot/spring-boot-starter-data-cassandra"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -d "$starter" ]]; then
        echo "[spring-data] Maven dependencies present (tests/spring-data/pom.xml unchanged)"
        return 0
    fi
    command -v mvn >/dev/null || { echo "[spring-data] mvn not found: apt-get install -y maven" >&2; return 1; }
    echo "[spring-data] fetching the Spring Boot / Spring Data Cassandra test dependencies from Maven Central"
    local start=$SECONDS
    "${MVN[@]}" -q dependency:go-offline
    # go-offline misses the JUnit platform provider Surefire resolves only when it runs tests:
    # run Surefire once on a class without tests (compiles the suite, needs no CQL endpoint).
    "${MVN[@]}" -q test -Dtest=DriverLog -Dsurefire.failIfNoSpecifiedTests=false
    mkdir -p "$CACHE"
    echo "$want" >"$stamp"
    echo "[spring-data] dependencies ready in $((SECONDS - start)) s"
}

if [[ "${1:-}" == "--setup" ]]; then
    setup 2>&1 | plain
    exit 0
fi
if [ $# -lt 1 ]; then
    echo "usage: $0 PORT [HOST] [mvn args...] | $0 --setup" >&2
    exit 2
fi
export CQL_PORT="$1"
export CQL_HOST="${2:-127.0.0.1}"
shift $(( $# >= 2 ? 2 : 1 ))
setup 2>&1 | plain | { grep -v 'dependencies present' || true; }

reports="$BUILD/surefire-reports"
rm -rf "$reports"
status=0
"${MVN[@]}" -o -q test "$@" 2>&1 | plain || status=$?

# Surefire's own summary is not printed under -q: count its XML reports.
if compgen -G "$reports/TEST-*.xml" >/dev/null; then
    read -r tests failed skipped < <(cat "$reports"/TEST-*.xml | awk '
        /<testsuite / {
            for (i = 1; i <= NF; i++) {
                if (split($i, kv, "=") == 2) { gsub(/[">]/, "", kv[2]); v[kv[1]] = kv[2] }
            }
            t += v["tests"]; f += v["failures"] + v["errors"]; s += v["skipped"]
        }
        END { print t + 0, f + 0, s + 0 }')
    echo "$((tests - failed - skipped)) passed, $failed failed, $skipped skipped"
    [[ "$failed" -eq 0 ]] || [[ "$status" -ne 0 ]] || status=1
else
    echo "no test reports (build error or crash)"
    echo "0 passed, 1 failed"
    [[ "$status" -ne 0 ]] || status=1
fi
exit "$status"
