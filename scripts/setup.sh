#!/usr/bin/env bash
# Idempotent installer for the project-level test tools on a fresh machine.
#
#   scripts/setup.sh            # install what is missing, print what it does
#
# Installs:
#   * a Python venv at $PEREGRINE_VENV (default $HOME/.cache/peregrine/venv) with the pinned
#     packages of scripts/requirements.txt (cassandra-driver, cqlsh, pytest, lz4, snappy, ...);
#   * Apache Cassandra 5.0.9's runtime jars from Maven Central into
#     $PEREGRINE_CASSANDRA_HOME/lib (default $HOME/.cache/peregrine/cassandra-5.0.9/lib),
#     used by scripts/cassandra.sh;
#   * the Maven dependencies of tests/java-driver (the Apache Cassandra Java driver 4.x, JUnit 5)
#     into ~/.m2, so tests/java-driver/run.sh works offline;
#   * YCSB 0.17.0's core and the DataStax Java driver 3.0.0 for tests/ycsb (`run.sh --setup`).
#   * the Maven dependencies of tests/spring-data (Spring Boot 3 with Spring Data Cassandra) into
#     ~/.m2 (`run.sh --setup`), so its runs are offline;
#   * the Go modules of tests/go-driver (gocql) and the npm packages of tests/node-driver
#     (cassandra-driver), so their run.sh work offline.
# Each step is skipped when already done, so a second run takes well under a second.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${PEREGRINE_CACHE:-$HOME/.cache/peregrine}"
VENV="${PEREGRINE_VENV:-$CACHE/venv}"
CASSANDRA_VERSION=5.0.9
CASSANDRA_HOME="${PEREGRINE_CASSANDRA_HOME:-$CACHE/cassandra-$CASSANDRA_VERSION}"
REQ="$HERE/requirements.txt"
PYTHON="${PYTHON:-python3}"

log() { echo "[setup] $*"; }

mkdir -p "$CACHE"

# ---------------------------------------------------------------- Python venv
stamp="$VENV/.peregrine-requirements.sha256"
want="$(sha256sum "$REQ" | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    log "venv $VENV is up to date (requirements unchanged)"
else
    if [[ ! -x "$VENV/bin/python" ]]; then
        log "creating venv $VENV with $("$PYTHON" --version 2>&1)"
        "$PYTHON" -m venv "$VENV"
    fi
    log "installing pinned packages from $REQ"
    start=$SECONDS
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQ"
    # Import check: fail here, not in the middle of a test run.
    "$VENV/bin/python" - <<'PY'
import cassandra, lz4.block, snappy, pytest
from cassandra.cluster import Cluster  # noqa: F401
assert cassandra.__version__ == "3.30.1", cassandra.__version__
snappy.decompress(snappy.compress(b"x" * 100))
PY
    "$VENV/bin/cqlsh" --version >/dev/null
    echo "$want" >"$stamp"
    log "venv ready in $((SECONDS - start)) s"
fi

# ------------------------------------------------------- Cassandra 5.0.9 jars
lib="$CASSANDRA_HOME/lib"
if [[ -f "$lib/cassandra-all-$CASSANDRA_VERSION.jar" && -f "$lib/.complete" ]]; then
    log "Cassandra $CASSANDRA_VERSION jars present in $lib ($(ls "$lib"/*.jar | wc -l) jars)"
else
    command -v mvn >/dev/null || { echo "[setup] mvn not found: apt-get install -y maven" >&2; exit 1; }
    log "fetching Cassandra $CASSANDRA_VERSION runtime jars from Maven Central into $lib"
    start=$SECONDS
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    cat >"$tmp/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>peregrine</groupId>
  <artifactId>cassandra-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$CASSANDRA_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
    mkdir -p "$lib"
    mvn -q -B -Dstyle.color=never -f "$tmp/pom.xml" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$lib"
    [[ -f "$lib/cassandra-all-$CASSANDRA_VERSION.jar" ]] || { echo "[setup] cassandra-all jar missing after mvn" >&2; exit 1; }
    ls "$lib"/jamm-*.jar >/dev/null
    touch "$lib/.complete"
    log "Cassandra jars ready in $((SECONDS - start)) s ($(ls "$lib"/*.jar | wc -l) jars, $(du -sh "$lib" | cut -f1))"
fi

# ------------------------------------------------------------------- Java 17
JAVA17="${JAVA_HOME_17:-/usr/lib/jvm/java-17-openjdk-amd64}"
if [[ -x "$JAVA17/bin/java" ]]; then
    log "Java 17 at $JAVA17"
else
    log "Java 17 not found at $JAVA17: installing openjdk-17-jre-headless"
    apt-get update -q >/dev/null && apt-get install -y -q openjdk-17-jre-headless >/dev/null
fi

# ------------------------------------------- Java driver tests' Maven dependencies
# tests/java-driver/run.sh runs Maven offline (`mvn -o`): fetch the driver, JUnit, logback and the
# build plugins into ~/.m2 once. Redone when the pom changes (its hash is the stamp) or when the
# driver jar it names is missing from the local repository.
JAVA_TESTS="$(cd "$HERE/../tests/java-driver" && pwd)"
stamp="$CACHE/java-driver-tests.pom.sha256"
want="$(sha256sum "$JAVA_TESTS/pom.xml" | cut -d' ' -f1)"
driver_version="$(sed -n 's:.*<java-driver.version>\(.*\)</java-driver.version>.*:\1:p' "$JAVA_TESTS/pom.xml")"
driver_jar="$HOME/.m2/repository/org/apache/cassandra/java-driver-core/$driver_version/java-driver-core-$driver_version.jar"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f "$driver_jar" ]]; then
    log "Java driver $driver_version test dependencies present (tests/java-driver/pom.xml unchanged)"
else
    command -v mvn >/dev/null || { echo "[setup] mvn not found: apt-get install -y maven" >&2; exit 1; }
    log "fetching the Java driver $driver_version test dependencies from Maven Central"
    start=$SECONDS
    mvn -q -B -Dstyle.color=never -f "$JAVA_TESTS/pom.xml" dependency:go-offline
    # go-offline misses the JUnit 5 provider that surefire resolves only when it runs tests: run
    # surefire once on a class without tests (compiles the suite, needs no CQL endpoint).
    mvn -q -B -Dstyle.color=never -f "$JAVA_TESTS/pom.xml" test \
        -Dtest=DriverLog -Dsurefire.failIfNoSpecifiedTests=false
    [[ -f "$driver_jar" ]] || { echo "[setup] $driver_jar missing after mvn" >&2; exit 1; }
    echo "$want" >"$stamp"
    log "Java driver test dependencies ready in $((SECONDS - start)) s"
fi

# ------------------------------------------------- YCSB 0.17.0 (tests/ycsb)
"$HERE/../tests/ycsb/run.sh" --setup

# ------------------------- Spring Boot / Spring Data Cassandra (tests/spring-data)
# Redone when its pom changes (the hash is the stamp); its run.sh does the same check itself.
"$HERE/../tests/spring-data/run.sh" --setup

# ------------------------------------------- Go and Node.js driver tests' dependencies
# tests/go-driver/run.sh runs `go test` with GOPROXY=off: download the modules go.sum pins into the
# module cache once, and compile the suite so the first run does not. Redone when go.sum changes
# (its hash is the stamp) or when the driver module is missing from the cache.
GO_TESTS="$(cd "$HERE/../tests/go-driver" && pwd)"
command -v go >/dev/null || { echo "[setup] go not found (tests/go-driver needs Go >= 1.24)" >&2; exit 1; }
stamp="$CACHE/go-driver-tests.sum.sha256"
want="$(cat "$GO_TESTS/go.mod" "$GO_TESTS/go.sum" | sha256sum | cut -d' ' -f1)"
gocql_version="$(sed -n 's:^require github.com/apache/cassandra-gocql-driver/v2 \(v[^ ]*\)$:\1:p' "$GO_TESTS/go.mod")"
gocql_dir="${GOMODCACHE:-$(go env GOMODCACHE)}/github.com/apache/cassandra-gocql-driver/v2@$gocql_version"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -n "$gocql_version" && -f "$gocql_dir/go.mod" ]]; then
    log "Go driver $gocql_version test modules present (tests/go-driver/go.sum unchanged)"
else
    log "downloading the Go driver test modules (tests/go-driver/go.mod)"
    start=$SECONDS
    (cd "$GO_TESTS" && go mod download && go test -c -o /dev/null .)
    [[ -f "$gocql_dir/go.mod" ]] || { echo "[setup] $gocql_dir missing after go mod download" >&2; exit 1; }
    echo "$want" >"$stamp"
    log "Go driver test modules ready in $((SECONDS - start)) s"
fi

# tests/node-driver/run.sh needs its node_modules: `npm ci` from package-lock.json, redone when
# the lock file changes (its hash is the stamp, kept inside node_modules so `npm ci` clears it).
NODE_TESTS="$(cd "$HERE/../tests/node-driver" && pwd)"
if ! command -v npm >/dev/null; then
    log "node/npm not found: installing nodejs and npm"
    apt-get update -q >/dev/null && apt-get install -y -q nodejs npm >/dev/null
fi
stamp="$NODE_TESTS/node_modules/.peregrine-lock.sha256"
want="$(sha256sum "$NODE_TESTS/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -f "$NODE_TESTS/node_modules/cassandra-driver/package.json" ]]; then
    log "Node.js driver test packages present (tests/node-driver/package-lock.json unchanged)"
else
    log "installing the Node.js driver test packages (npm ci in tests/node-driver)"
    start=$SECONDS
    (cd "$NODE_TESTS" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" >"$stamp"
    log "Node.js driver test packages ready in $((SECONDS - start)) s"
fi

log "done. venv: $VENV  cassandra: $CASSANDRA_HOME"
