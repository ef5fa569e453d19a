"""Proxy mode keeps the client-side bounds of the standalone front end (issue 14, "proxy mode
gets the same connection, memory and timeout bounds"): each test runs its OWN
`peregrine serve --upstream` with the limit it checks, in front of a real Cassandra 5.0.9
started by scripts/cassandra.sh on port 9962 (or $PROXY_BOUNDS_UPSTREAM_PORT), as the other
proxy modules do (skipped, like them, only when the Cassandra jars are not installed).

- a connection that never finishes STARTUP is closed after `handshake_timeout`, an idle one
  after `native_transport_idle_timeout` (and a busy one is not);
- `max_connections` and `native_transport_max_concurrent_connections_per_ip` refuse with
  Overloaded naming the limit;
- headers announcing huge bodies cost no memory before the bytes arrive;
- request bytes read and not answered are bounded node-wide
  (`native_transport_max_request_data_in_flight`): with Cassandra stopped (SIGSTOP) a
  `THROW_ON_OVERLOAD` client gets Overloaded over the bound, another client's connection stops
  being read, and both go on once Cassandra answers (SIGCONT);
- a client that pipelines large SELECTs (answered by Cassandra) and never reads stops being
  read once its unsent answers pass `max_response_backlog_bytes`: the proxy stops sending its
  requests upstream, its RSS stays bounded, and a normal driver session is served meanwhile.

The upstream side (timeouts, in-flight bound, frame sizes from a hostile upstream) is tested
in-process against scripted upstreams: crates/proxy/src/bounds_tests.rs.
"""

import os
import signal
import socket
import struct
import time
import uuid

import pytest
from cassandra.cluster import Cluster

import proxy_support as ps
from test_bad_input import (ERROR, OPTIONS, QUERY, READY, STARTUP, STARTUP_BODY, SUPPORTED,
                            error_of, frame, query_body, read_frame, string_map)
from test_connection_limits import rss_bytes, wait_closed

UPSTREAM_PORT = int(os.environ.get("PROXY_BOUNDS_UPSTREAM_PORT", "9962"))
KS = "pxb_" + uuid.uuid4().hex[:10]
OVERLOADED = 0x1001
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def upstream():
    ps.start_cassandra(UPSTREAM_PORT)
    try:
        yield f"127.0.0.1:{UPSTREAM_PORT}"
    finally:
        ps.stop_cassandra(UPSTREAM_PORT)


@pytest.fixture
def proxies(upstream):
    started = []

    def start(yaml):
        p = ps.Proxy(upstream, yaml, prefix="peregrine-proxy-bounds-")
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop_cleanly()


def raw(proxy, source="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", proxy.port), timeout=5.0,
                                 source_address=(source, 0))
    s.settimeout(5.0)
    return s


def ready(proxy, source="127.0.0.1"):
    s = raw(proxy, source)
    s.sendall(frame(STARTUP, STARTUP_BODY))
    f = read_frame(s)
    assert f is not None and f[3] == READY, f
    return s


def refused(proxy, source):
    """The error a connection from `source` gets (code, message), or None if it was served."""
    s = raw(proxy, source)
    s.sendall(frame(OPTIONS, stream=7))
    f = read_frame(s)
    try:
        if f is not None and f[3] == SUPPORTED:
            return None
        assert f is not None and f[3] == ERROR, f
        assert wait_closed(s, within=10), "a refused connection stays open"
        return error_of(f[4])
    finally:
        s.close()


def test_handshake_and_idle_timeouts_close_connections(proxies):
    proxy = proxies("handshake_timeout: 1s\nnative_transport_idle_timeout: 1s\n")
    silent = raw(proxy)
    chatty = raw(proxy)  # OPTIONS but never STARTUP
    chatty.sendall(frame(OPTIONS, stream=1))
    assert read_frame(chatty)[3] == SUPPORTED
    idle = ready(proxy)
    busy = ready(proxy)
    opened = time.monotonic()
    # The busy connection keeps talking (answered by the proxy itself) while the others wait.
    while time.monotonic() - opened < 2.5:
        busy.sendall(frame(OPTIONS, stream=2))
        assert read_frame(busy)[3] == SUPPORTED
        time.sleep(0.2)
    for name, s in (("silent", silent), ("chatty", chatty), ("idle", idle)):
        assert wait_closed(s, within=10), f"{name} connection still open"
    busy.sendall(frame(OPTIONS, stream=2))
    assert read_frame(busy)[3] == SUPPORTED, "a connection in use was closed"
    # A query that goes upstream counts as use as well: the answer comes from Cassandra.
    busy.sendall(frame(QUERY, query_body("SELECT release_version FROM system.local"), stream=3))
    f = read_frame(busy)
    assert f is not None and f[2] == 3 and f[3] != ERROR, f and error_of(f[4])
    for s in (silent, chatty, idle, busy):
        s.close()


def admitted(proxy, source):
    """A connection from `source` past STARTUP, retried while the proxy still counts a
    connection that was already closed (the start-up probe's, until the proxy reads its EOF)."""
    deadline = time.monotonic() + 10
    while True:
        s = raw(proxy, source)
        s.sendall(frame(STARTUP, STARTUP_BODY))
        f = read_frame(s)
        if f is not None and f[3] == READY:
            return s
        s.close()
        assert time.monotonic() < deadline, f and error_of(f[4])
        time.sleep(0.05)


def test_connection_limits_refuse_with_overloaded(proxies):
    # Loopback addresses are per-IP clients of their own: 127.0.0.2 and 127.0.0.3 fill the
    # node (2 + 2 = max_connections), 127.0.0.4 then meets the node-wide limit. (127.0.0.1 is
    # left out: the start-up probe's connection came from there.)
    proxy = proxies("max_connections: 4\nnative_transport_max_concurrent_connections_per_ip: 2\n")
    first = [admitted(proxy, "127.0.0.2") for _ in range(2)]
    code, message = refused(proxy, "127.0.0.2")
    assert code == OVERLOADED, (code, message)
    assert "native_transport_max_concurrent_connections_per_ip" in message, message
    second = [admitted(proxy, "127.0.0.3") for _ in range(2)]
    code, message = refused(proxy, "127.0.0.4")
    assert code == OVERLOADED, (code, message)
    assert "max_connections" in message, message
    # A place is given back once the proxy saw a close.
    second.pop().close()
    deadline = time.monotonic() + 10
    while refused(proxy, "127.0.0.4") is not None:
        assert time.monotonic() < deadline, "no place given back after a close"
        time.sleep(0.05)
    for s in first + second:
        s.close()


def test_headers_alone_cost_the_proxy_no_memory(proxies):
    proxy = proxies("")
    before = rss_bytes(proxy.proc.pid)
    socks = []
    for _ in range(200):
        s = ready(proxy)
        # A header announcing a 200 MB body, and no body byte.
        s.sendall(struct.pack(">BBhBi", 4, 0, 1, QUERY, 200 * MIB))
        socks.append(s)
    # The proxy read every header: a probe sent after them all is answered.
    probe = ready(proxy)
    probe.sendall(frame(OPTIONS, stream=3))
    f = read_frame(probe)
    assert f is not None and f[3] == SUPPORTED
    grown = rss_bytes(proxy.proc.pid) - before
    for s in socks + [probe]:
        s.close()
    assert grown < 40 * MIB, grown


def test_a_client_that_never_reads_cannot_grow_the_proxy(upstream, proxies):
    direct = Cluster(["127.0.0.1"], port=UPSTREAM_PORT, protocol_version=4, connect_timeout=10)
    ds = direct.connect()
    ds.execute(f"CREATE KEYSPACE {KS} WITH replication = "
               "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    ds.execute(f"CREATE TABLE {KS}.big (k int, c int, v blob, PRIMARY KEY (k, c))")
    ds.execute(f"CREATE TABLE {KS}.small (k int PRIMARY KEY, v int)")
    insert = ds.prepare(f"INSERT INTO {KS}.big (k, c, v) VALUES (0, ?, ?)")
    for c in range(20):
        ds.execute(insert, (c, bytes([c]) * 100_000))  # one SELECT answers ~2 MB
    ds.execute(f"INSERT INTO {KS}.small (k, v) VALUES (1, 1)")
    direct.shutdown()

    proxy = proxies("max_response_backlog_bytes: 1MiB\nrequest_timeout: 10s\n")
    cluster = proxy.cluster(protocol_version=4)
    session = cluster.connect()
    small = f"SELECT v FROM {KS}.small WHERE k = 1"  # unprepared: never cached, always upstream
    assert session.execute(small).one().v == 1
    # Warm the upstream path with a few large answers, so the baseline includes them.
    for _ in range(3):
        assert len(session.execute(f"SELECT * FROM {KS}.big WHERE k = 0").all()) == 20
    baseline = rss_bytes(proxy.proc.pid)
    before = ps.upstream_requests_settled(session, 0.3, 10)
    assert before is not None

    hog = ready(proxy)
    n = 5000  # ~10 GB of answers if all were run
    body = query_body(f"SELECT * FROM {KS}.big WHERE k = 0")
    hog.setblocking(False)
    pipeline = b"".join(frame(QUERY, body, stream=i) for i in range(1, n + 1))
    sent = 0
    send_until = time.monotonic() + 5
    while sent < len(pipeline) and time.monotonic() < send_until:
        try:
            sent += hog.send(pipeline[sent:])
        except BlockingIOError:
            time.sleep(0.01)
    # The proxy stops sending the hog's requests upstream once its answers back up: the
    # upstream request count settles far below what it pipelined.
    settled = ps.upstream_requests_settled(session, 1.0, 30)
    assert settled is not None, "the proxy kept running the hog's requests"
    ran = settled - before
    assert 0 < ran < n // 4, (ran, sent)
    peak = rss_bytes(proxy.proc.pid)
    # A normal client is served meanwhile, and fast.
    latencies = []
    for _ in range(50):
        t = time.monotonic()
        assert session.execute(small).one().v == 1
        latencies.append(time.monotonic() - t)
        peak = max(peak, rss_bytes(proxy.proc.pid))
    latencies.sort()
    hog.close()
    cluster.shutdown()
    # Bound: the backlog (1 MiB) plus the answers of the requests running when it filled
    # (1 MiB / 64 KiB = 16 of ~2 MB), far below the gigabytes the pipeline asks for.
    print(f"proxy-bounds figures: sent={sent} ran={ran} grown={(peak - baseline) // MIB} MiB p99={latencies[-1]:.3f}s")
    assert peak - baseline < 150 * MIB, (sent, ran, baseline, peak)
    assert latencies[-3] < 1.0, latencies[-5:]


def test_request_bytes_in_flight_are_bounded(upstream, proxies):
    direct = Cluster(["127.0.0.1"], port=UPSTREAM_PORT, protocol_version=4, connect_timeout=10)
    ds = direct.connect()
    ks = KS + "_f"
    ds.execute(f"CREATE KEYSPACE {ks} WITH replication = "
               "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    ds.execute(f"CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)")
    direct.shutdown()
    proxy = proxies("native_transport_max_request_data_in_flight: 1MiB\nrequest_timeout: 30s\n")

    def insert(k, size):
        return query_body(f"INSERT INTO {ks}.t (k, v) VALUES ({k}, '{'x' * size}')")

    local = query_body("SELECT * FROM system_views.peregrine_cache")  # answered by the proxy
    thrower = raw(proxy)
    thrower.sendall(frame(STARTUP, string_map({"CQL_VERSION": "3.0.0", "THROW_ON_OVERLOAD": "1"})))
    assert read_frame(thrower)[3] == READY
    patient = ready(proxy)
    for s in (thrower, patient):  # the upstream connection is open before Cassandra stops
        s.sendall(frame(QUERY, insert(0, 10), stream=1))
        f = read_frame(s)
        assert f is not None and f[3] != ERROR, f and error_of(f[4])
    patient.sendall(frame(QUERY, local, stream=2))
    assert read_frame(patient)[2] == 2
    pid = ps.cassandra_pid(UPSTREAM_PORT)
    os.kill(pid, signal.SIGSTOP)
    try:
        # 600 KB in flight (Cassandra does not answer), then 600 KB more: over 1 MiB.
        thrower.sendall(frame(QUERY, insert(1, 600_000), stream=10))
        thrower.sendall(frame(QUERY, insert(2, 600_000), stream=11))
        f = read_frame(thrower)
        assert f is not None and f[2] == 11 and f[3] == ERROR, f
        code, message = error_of(f[4])
        assert code == OVERLOADED, (code, message)
        # A client without THROW_ON_OVERLOAD: its request past the bound is taken (one
        # request never deadlocks), then its connection is not read while over the bound,
        # even for what the proxy answers itself.
        patient.sendall(frame(QUERY, insert(3, 600_000), stream=20))
        patient.sendall(frame(QUERY, local, stream=21))
        patient.settimeout(1.5)
        with pytest.raises(socket.timeout):
            read_frame(patient)
    finally:
        os.kill(pid, signal.SIGCONT)
    patient.settimeout(30)
    # What Cassandra answers requests that waited through its pause is its business (a
    # timeout is possible); the proxy's part is that they are answered, none Overloaded.
    def outcome(f):
        return error_of(f[4])[0] if f[3] == ERROR else "ok"

    answered = {}
    for _ in range(2):
        f = read_frame(patient)
        assert f is not None, "patient connection closed"
        answered[f[2]] = outcome(f)
    assert answered.keys() == {20, 21}, answered
    assert answered[21] == "ok" and answered[20] != OVERLOADED, answered
    f = read_frame(thrower)
    assert f is not None and f[2] == 10 and outcome(f) != OVERLOADED, f
    # Under the bound again: the thrower is served.
    thrower.sendall(frame(QUERY, insert(4, 600_000), stream=12))
    f = read_frame(thrower)
    assert f is not None and f[2] == 12 and f[3] != ERROR, f and error_of(f[4])
    thrower.close()
    patient.close()
