"""Hostile and careless clients cannot take the node: each test runs its OWN peregrine with the
limits it checks (issue 14, items 2-4).

- a client that pipelines large SELECTs and never reads the answers does not grow the server's
  memory past its bounds, and a normal driver is served meanwhile;
- headers announcing huge bodies cost no memory before the bytes arrive;
- a connection that never finishes its handshake is closed after `handshake_timeout`;
- `native_transport_idle_timeout` closes idle connections (and only idle ones);
- `native_transport_max_concurrent_connections_per_ip` refuses connections over the limit with
  Overloaded, and admits again once one closes.

Needs the peregrine binary (as test_durability.py); skipped without one.
"""

import struct
import time
from types import SimpleNamespace

import pytest
from cassandra.cluster import Cluster

import test_bad_input as bad_input
from test_bad_input import (ERROR, OPTIONS, QUERY, READY, STARTUP, STARTUP_BODY, SUPPORTED,
                            error_of, frame, query_body, read_frame)
from test_durability import Server, _find_peregrine

OVERLOADED = 0x1001
MIB = 1024 * 1024


@pytest.fixture
def binary():
    b = _find_peregrine()
    if b is None:
        pytest.skip("needs the peregrine binary")
    return b


@pytest.fixture
def start(binary, tmp_path):
    servers = []

    def start(extra_config):
        root = tmp_path / f"s{len(servers)}"
        root.mkdir()
        s = Server(binary, str(root), extra_config=extra_config)
        servers.append(s)
        s.start()
        return s

    yield start
    for s in servers:
        s.kill()


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def at(server):
    """The server as the endpoint test_bad_input's helpers take."""
    return SimpleNamespace(host="127.0.0.1", port=server.port)


def raw(server):
    return bad_input.connect(at(server))


def ready(server):
    return bad_input.ready(at(server))


def keyspace_session(server):
    """A driver session on `server` with the keyspace `lim` created."""
    cluster = Cluster(["127.0.0.1"], port=server.port)
    session = cluster.connect()
    session.execute("CREATE KEYSPACE lim WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    return cluster, session


def wait_closed(sock, within):
    """True once the server closed `sock` (EOF or reset) within `within` seconds."""
    sock.settimeout(within)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except OSError:  # timeout
        return False


def test_a_client_that_never_reads_cannot_grow_the_server(start):
    server = start("max_response_backlog_bytes: 1MiB\n")
    cluster, session = keyspace_session(server)
    session.execute("CREATE TABLE lim.big (k int, c int, v blob, PRIMARY KEY (k, c))")
    insert = session.prepare("INSERT INTO lim.big (k, c, v) VALUES (0, ?, ?)")
    for c in range(20):
        session.execute(insert, (c, bytes([c]) * 100_000))  # one SELECT answers ~2 MB
    baseline = rss_bytes(server.proc.pid)

    hog = ready(server)
    hog.setblocking(False)
    body = query_body("SELECT * FROM lim.big WHERE k = 0")
    pipeline = b"".join(frame(QUERY, body, stream=i) for i in range(1, 5001))
    sent = 0
    deadline = time.time() + 3
    # Pipeline up to 5,000 requests of ~2 MB answers each (10 GB), reading none of them: as
    # many as the server takes in 3 s.
    while time.time() < deadline and sent < len(pipeline):
        try:
            sent += hog.send(pipeline[sent:])
        except BlockingIOError:
            time.sleep(0.01)
    peak = baseline
    served = 0
    t_end = time.time() + 3
    while time.time() < t_end:
        peak = max(peak, rss_bytes(server.proc.pid))
        assert session.execute("SELECT k FROM lim.big WHERE k = 0 AND c = 1").one() is not None
        served += 1
    hog.close()
    cluster.shutdown()
    assert sent > 0 and served > 0
    # Bound: the backlog (1 MiB) plus the answers of the requests already running, far below
    # the gigabytes the pipelined requests would answer unbounded.
    assert peak - baseline < 300 * MIB, (sent, baseline, peak)


def test_pipelined_select_answers_are_all_delivered_to_a_slow_reader(start):
    server = start("max_response_backlog_bytes: 64KiB\n")
    cluster, session = keyspace_session(server)
    session.execute("CREATE TABLE lim.t (k int PRIMARY KEY, v blob)")
    session.execute("INSERT INTO lim.t (k, v) VALUES (1, %s)", (b"x" * 50_000,))
    cluster.shutdown()
    s = ready(server)
    n = 200  # 10 MB of answers through a 64 KiB backlog
    s.sendall(b"".join(frame(QUERY, query_body("SELECT v FROM lim.t WHERE k = 1"), stream=i)
                       for i in range(1, n + 1)))
    seen = set()
    for _ in range(n):
        f = read_frame(s)
        assert f is not None and f[3] != ERROR, f and error_of(f[4])
        seen.add(f[2])
    assert seen == set(range(1, n + 1))
    s.close()


def test_headers_alone_cost_no_memory(start):
    server = start("")
    before = rss_bytes(server.proc.pid)
    socks = []
    for _ in range(200):
        s = ready(server)
        # A header announcing a 200 MB body, and no body byte.
        s.sendall(struct.pack(">BBhBi", 4, 0, 1, QUERY, 200 * MIB))
        socks.append(s)
    # Every connection still answers on another socket: the server read all those headers.
    probe = raw(server)
    probe.sendall(frame(OPTIONS, stream=3))
    f = read_frame(probe)
    assert f is not None and f[3] == SUPPORTED
    grown = rss_bytes(server.proc.pid) - before
    for s in socks:
        s.close()
    assert grown < 40 * MIB, grown


def test_a_connection_without_handshake_is_closed(start):
    server = start("handshake_timeout: 1s\n")
    silent = raw(server)
    started = ready(server)
    assert wait_closed(silent, within=10), "silent connection still open"
    # A connection that finished STARTUP is not affected.
    started.sendall(frame(OPTIONS, stream=5))
    f = read_frame(started)
    assert f is not None and f[3] == SUPPORTED, f
    # A connection that sends OPTIONS but never STARTUP is closed too.
    chatty = raw(server)
    chatty.sendall(frame(OPTIONS, stream=1))
    assert read_frame(chatty)[3] == SUPPORTED
    assert wait_closed(chatty, within=10)


def test_idle_connections_are_closed_when_asked(start):
    server = start("native_transport_idle_timeout: 1s\n")
    idle = ready(server)
    busy = ready(server)
    t_end = time.time() + 2.5
    while time.time() < t_end:
        busy.sendall(frame(OPTIONS, stream=2))
        assert read_frame(busy)[3] == SUPPORTED
        time.sleep(0.2)
    assert wait_closed(idle, within=10), "idle connection still open"
    busy.sendall(frame(OPTIONS, stream=2))
    assert read_frame(busy)[3] == SUPPORTED, "a connection in use was closed"


def ready_once_a_place_is_free(server, within=10):
    """A READY connection, retried while the server still counts a connection that was closed
    but whose close it has not yet seen (Server.start's port probe is one)."""
    deadline = time.time() + within
    while True:
        s = raw(server)
        s.sendall(frame(STARTUP, STARTUP_BODY))
        f = read_frame(s)
        if f is not None and f[3] == READY:
            return s
        s.close()
        assert time.time() < deadline, f"no place given back after a close: {f}"
        time.sleep(0.05)


def test_connections_per_address_are_limited(start):
    server = start("native_transport_max_concurrent_connections_per_ip: 3\n")
    # One at a time: each is refused only while an earlier, closed connection still counts.
    open_ = [ready_once_a_place_is_free(server) for _ in range(3)]
    extra = raw(server)
    extra.sendall(frame(OPTIONS, stream=7))
    f = read_frame(extra)
    assert f is not None and f[3] == ERROR, f
    code, message = error_of(f[4])
    assert code == OVERLOADED, (code, message)
    assert "native_transport_max_concurrent_connections_per_ip" in message, message
    assert wait_closed(extra, within=10)
    open_.pop().close()
    # The freed place is given back once the server saw the close.
    open_.append(ready_once_a_place_is_free(server))
    for s in open_:
        s.close()
