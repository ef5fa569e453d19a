"""Shared fixtures for tests/python and tests/differential: one CQL endpoint per test session.

The endpoint is either
  * an existing server: env CQL_HOST (and CQL_PORT, default 9042), e.g. a real Cassandra from
    scripts/cassandra.sh (CQL_HOST=127.0.0.1 CQL_PORT=9142) or an already running Peregrine; or
  * a Peregrine started here: `$PEREGRINE_BIN serve --listen 127.0.0.1:<free port> --data-dir <tmp>`
    (PEREGRINE_BIN defaults to target/release/peregrine, then target/debug/peregrine, also under
    $CARGO_TARGET_DIR); stopped at the end of the session.
Optional CQL_USER / CQL_PASSWORD log in with PlainTextAuthProvider.
"""

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import pytest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(host, port):
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _find_peregrine():
    if os.environ.get("PEREGRINE_BIN"):
        return os.environ["PEREGRINE_BIN"]
    roots = [os.path.join(REPO, "target")]
    if os.environ.get("CARGO_TARGET_DIR"):
        roots.insert(0, os.environ["CARGO_TARGET_DIR"])
    for root in roots:
        for profile in ("release", "debug"):
            p = os.path.join(root, profile, "peregrine")
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    return None


class Endpoint:
    def __init__(self, host, port, kind):
        self.host, self.port, self.kind = host, port, kind
        user, pw = os.environ.get("CQL_USER"), os.environ.get("CQL_PASSWORD")
        self.auth = PlainTextAuthProvider(user, pw) if user else None
        self.user, self.password = user, pw

    def cluster(self, **kw):
        kw.setdefault("port", self.port)
        kw.setdefault("connect_timeout", 10)
        if self.auth is not None:
            kw.setdefault("auth_provider", self.auth)
        return Cluster([self.host], **kw)

    def __repr__(self):
        return f"{self.kind} at {self.host}:{self.port}"


@pytest.fixture(scope="session")
def endpoint():
    host = os.environ.get("CQL_HOST")
    if host:
        port = int(os.environ.get("CQL_PORT", "9042"))
        if not _port_open(host, port):
            pytest.fail(f"CQL_HOST/CQL_PORT given but nothing listens on {host}:{port}")
        yield Endpoint(host, port, os.environ.get("CQL_KIND", "external"))
        return
    binary = _find_peregrine()
    if binary is None or not os.path.exists(binary):
        pytest.fail("no endpoint: set CQL_HOST/CQL_PORT, or build peregrine (cargo build) or set PEREGRINE_BIN")
    port = _free_port()
    data = tempfile.mkdtemp(prefix="peregrine-pytest-")
    log_path = os.path.join(data, "peregrine.log")
    log = open(log_path, "wb")
    proc = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir",
                             os.path.join(data, "data")], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + float(os.environ.get("PEREGRINE_START_TIMEOUT", "60"))
    while not _port_open("127.0.0.1", port):
        if proc.poll() is not None:
            log.close()
            pytest.fail(f"peregrine exited with {proc.returncode} during start:\n" + open(log_path).read()[-4000:])
        if time.time() > deadline:
            proc.kill()
            pytest.fail(f"peregrine did not open 127.0.0.1:{port} in time; log in {log_path}")
        time.sleep(0.1)
    try:
        yield Endpoint("127.0.0.1", port, "peregrine")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        if proc.returncode not in (0, -15):
            sys.stderr.write(f"peregrine exited with {proc.returncode}; log kept in {log_path}\n")
        else:
            shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def cluster(endpoint):
    c = endpoint.cluster(protocol_version=4)
    c.connect()
    yield c
    c.shutdown()


@pytest.fixture(scope="session")
def session(cluster):
    return cluster.connect()


@pytest.fixture
def make_cluster(endpoint):
    """Factory for extra clusters (other protocol versions, compression); shut down after the test."""
    made = []

    def make(**kw):
        c = endpoint.cluster(**kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.shutdown()


@pytest.fixture
def ks(session):
    """A fresh keyspace for one test; the session's keyspace is set to it."""
    name = "t_" + uuid.uuid4().hex[:12]
    session.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    session.set_keyspace(name)
    yield name
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {name}")
    except Exception as e:  # a failing drop must not hide the test's own result
        logging.getLogger(__name__).warning("drop keyspace %s failed: %s", name, e)


@pytest.fixture(scope="session")
def cqlsh_bin():
    p = os.path.join(os.path.dirname(sys.executable), "cqlsh")
    if not os.path.exists(p):
        p = shutil.which("cqlsh")
    if not p:
        pytest.fail("cqlsh not found next to the Python interpreter nor on PATH: run scripts/setup.sh")
    return p
