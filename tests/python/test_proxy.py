"""Proxy mode against a real Apache Cassandra 5.0.9.

Starts Cassandra with scripts/cassandra.sh on port 9162 (or $PROXY_UPSTREAM_PORT) and a Peregrine
proxy (`serve --upstream`) on a free port, both stopped at the end of the module. The module is
skipped only when the Cassandra jars are not installed (scripts/setup.sh installs them).

Independent of the session-wide `endpoint` fixture: this module always runs its own proxy.
"""

import contextlib
import os
import random
import socket
import struct
import threading
import time
import uuid

import pytest
from cassandra import InvalidRequest
from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.policies import ConstantReconnectionPolicy, RoundRobinPolicy, TokenAwarePolicy
from cassandra.protocol import SyntaxException
from cassandra.query import BatchStatement, BatchType

import proxy_support as ps
from proxy_support import metric, wait_upstream_quiet
from conftest import _free_port

UPSTREAM_PORT = int(os.environ.get("PROXY_UPSTREAM_PORT", "9162"))
# The module's proxy keeps entries 30 s (so hits counted by a test do not lapse on a slow
# machine); the keyspace SHORT_KS has a 500 ms bound, for the tests that wait it out.
MAX_STALENESS = 0.5  # seconds: `SHORT_KS`.kv
SHORT_KS = "px_short"
# Tables with a longer bound, for tests that time or count cache hits.
REFRESH_KS, REFRESH_STALENESS = "px_refresh", 4.0
HITS_KS = "px_hits"
BASE_YAML = ("request_timeout: 5s\nproxy:\n  max_staleness: 30s\n  connect_timeout: 2s\n"
             f"  table_max_staleness:\n    {REFRESH_KS}.kv: {int(REFRESH_STALENESS * 1000)}ms\n"
             f"    {HITS_KS}.kv: 60s\n    {SHORT_KS}.kv: {int(MAX_STALENESS * 1000)}ms\n")


class Proxy(ps.Proxy):
    """A proxy in front of `upstream` (a list of nodes) with this module's base config."""

    def __init__(self, upstream, extra_yaml="", port=None, peers=()):
        super().__init__(",".join(upstream), BASE_YAML + extra_yaml, port=port, peers=peers)


@pytest.fixture(scope="module")
def upstream():
    ps.start_cassandra(UPSTREAM_PORT)
    try:
        yield f"127.0.0.1:{UPSTREAM_PORT}"
    finally:
        ps.stop_cassandra(UPSTREAM_PORT)


@pytest.fixture(scope="module")
def proxy(upstream):
    p = Proxy([upstream])
    yield p
    p.stop_cleanly()


@pytest.fixture(scope="module")
def direct(upstream):
    """A session straight to Cassandra, for writes that bypass the proxy."""
    c = Cluster(["127.0.0.1"], port=UPSTREAM_PORT, protocol_version=4, connect_timeout=10)
    s = c.connect()
    yield s
    c.shutdown()


@pytest.fixture(scope="module")
def session(proxy):
    c = proxy.cluster(protocol_version=4)
    s = c.connect()
    yield s
    c.shutdown()


@contextlib.contextmanager
def _kv_keyspace(session, name):
    """Keyspace `name` with a fresh table `kv (k int PRIMARY KEY, v text)`, dropped after."""
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {name} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"DROP TABLE IF EXISTS {name}.kv")
    session.execute(f"CREATE TABLE {name}.kv (k int PRIMARY KEY, v text)")
    try:
        yield name
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {name}")


@pytest.fixture
def ks(session):
    with _kv_keyspace(session, "px_" + uuid.uuid4().hex[:10]) as name:
        session.set_keyspace(name)
        yield name


@pytest.fixture
def short_ks(session):
    """`SHORT_KS` with a fresh table `kv`, whose cached reads live `MAX_STALENESS`."""
    with _kv_keyspace(session, SHORT_KS) as name:
        session.set_keyspace(name)
        yield name


@pytest.mark.parametrize("version", [4, 5])
def test_driver_sees_only_the_proxy(proxy, version):
    c = proxy.cluster(protocol_version=version)
    try:
        s = c.connect()
        assert c.protocol_version == version
        hosts = c.metadata.all_hosts()
        assert [h.endpoint.port for h in hosts] == [proxy.port]
        local = s.execute("SELECT rpc_address, release_version, tokens, cluster_name FROM system.local").one()
        assert local.rpc_address == "127.0.0.1"
        assert local.release_version == "5.0.9"  # the cluster's own facts pass through
        assert local.cluster_name == f"peregrine-reference-{UPSTREAM_PORT}"
        assert len(local.tokens) == 1
        assert list(s.execute("SELECT * FROM system.peers_v2")) == []
        assert list(s.execute("SELECT peer, rpc_address FROM system.peers")) == []
        # Schema metadata is the cluster's.
        assert "system_schema" in c.metadata.keyspaces
    finally:
        c.shutdown()


def test_ddl_prepared_insert_and_select(session, ks):
    ins = session.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
    sel = session.prepare("SELECT k, v FROM kv WHERE k = ?")
    for k in range(10):
        session.execute(ins, (k, f"v{k}"))
    for k in range(10):
        assert session.execute(sel, (k,)).one().v == f"v{k}"
    assert sorted(r.k for r in session.execute("SELECT k FROM kv")) == list(range(10))
    session.execute("ALTER TABLE kv ADD w int")
    session.execute("UPDATE kv SET w = 7 WHERE k = 1")
    assert session.execute("SELECT w FROM kv WHERE k = 1").one().w == 7


@pytest.mark.parametrize("version,client_timestamps", [(4, True), (5, True), (4, False), (5, False)])
def test_read_your_writes_through_the_cache(proxy, ks, version, client_timestamps):
    """A prepared INSERT patches cached results in place, with or without client timestamps
    (with them, only where its timestamp wins). Either way every read sees the model's
    value."""
    c = proxy.cluster(protocol_version=version)
    try:
        s = c.connect(ks)
        s.use_client_timestamp = client_timestamps
        ins = s.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
        upd = s.prepare("UPDATE kv SET v = ? WHERE k = ?")
        dele = s.prepare("DELETE FROM kv WHERE k = ?")
        sel = s.prepare("SELECT v FROM kv WHERE k = ?")
        rng = random.Random(4)
        model = {}
        for k in range(10):
            s.execute(ins, (k, "init"))
            model[k] = "init"
        for i in range(200):
            k = rng.randrange(10)
            row = s.execute(sel, (k,)).one()
            assert (row.v if row else None) == model[k], f"step {i}: key {k} before the write"
            op = rng.random()
            if op < 0.1:
                s.execute(dele, (k,))
                model[k] = None
            elif op < 0.2:
                # Unprepared write: invalidates the whole table.
                s.execute(f"UPDATE kv SET v = 'q{i}' WHERE k = {k}")
                model[k] = f"q{i}"
            elif op < 0.3:
                b = f"BEGIN BATCH UPDATE kv SET v = 'b{i}' WHERE k = {k}; APPLY BATCH"
                s.execute(b)
                model[k] = f"b{i}"
            elif op < 0.6:
                s.execute(ins, (k, f"i{i}"))
                model[k] = f"i{i}"
            else:
                s.execute(upd, (f"u{i}", k))
                model[k] = f"u{i}"
            row = s.execute(sel, (k,)).one()
            assert (row.v if row else None) == model[k], f"step {i}: key {k}"
        assert metric(s, "cache_hits_total") > 0
    finally:
        c.shutdown()


def test_writes_patch_cached_point_reads_in_place(proxy, direct, ks):
    """A prepared INSERT, UPDATE or whole-row DELETE without a client timestamp updates the
    cached results of its partition: the next read is a hit with the new value, columns it did not set keep
    theirs, a row it creates appears, and Cassandra agrees. A table with clustering columns
    is only invalidated."""
    c = proxy.cluster(protocol_version=4)
    try:
        s = c.connect(ks)
        s.use_client_timestamp = False
        s.execute("CREATE TABLE wide (k int PRIMARY KEY, v text, n int, b blob)")
        s.execute("CREATE TABLE clus (k int, c int, v text, PRIMARY KEY (k, c))")
        ins_v = s.prepare("INSERT INTO wide (k, v) VALUES (?, ?)")
        ins_all = s.prepare("INSERT INTO wide (k, v, n, b) VALUES (?, ?, ?, ?)")
        sel = s.prepare("SELECT n, v, b FROM wide WHERE k = ?")
        sel_star = s.prepare("SELECT * FROM wide WHERE k = ?")
        s.execute(ins_all, (1, "a", 7, b"\x01"))
        for stmt in (sel, sel_star):  # fill the cache
            s.execute(stmt, (1,))
            s.execute(stmt, (2,))  # no row yet: an empty result is cached too

        patched = metric(s, "cache_patched_total")
        s.execute(ins_v, (1, "b"))
        s.execute(ins_v, (2, "new"))
        assert metric(s, "cache_patched_total") >= patched + 4
        # The CREATE TABLEs above set off the drivers' schema refreshes (a dozen upstream
        # queries, later on a busy machine): count from when they are done.
        up = ps.wait_upstream_quiet(s)
        hits = metric(s, "cache_hits_total")
        r = s.execute(sel, (1,)).one()
        assert (r.n, r.v, r.b) == (7, "b", b"\x01")
        r = s.execute(sel, (2,)).one()
        assert (r.n, r.v, r.b) == (None, "new", None)
        star = s.execute(sel_star, (1,)).one()
        assert (star.k, star.v, star.n, star.b) == (1, "b", 7, b"\x01")
        assert metric(s, "cache_hits_total") >= hits + 3
        assert metric(s, "upstream_requests_total") - up < 3  # driver background queries only
        for k in (1, 2):
            assert direct.execute(f"SELECT n, v, b FROM {ks}.wide WHERE k = {k}").one() == \
                s.execute(sel, (k,)).one()
        # null and unset values
        s.execute(ins_all, (1, None, 8, None))
        r = s.execute(sel, (1,)).one()
        assert (r.n, r.v, r.b) == (8, None, None)
        assert direct.execute(f"SELECT n, v, b FROM {ks}.wide WHERE k = 1").one() == r

        # UPDATE: sets cells of an existing row; creates a row only through a value.
        upd = s.prepare("UPDATE wide SET n = ? WHERE k = ?")
        for k in (3, 4):
            assert s.execute(sel, (k,)).one() is None  # cached: no row
        patched = metric(s, "cache_patched_total")
        s.execute(upd, (9, 1))
        s.execute(upd, (5, 3))
        s.execute(upd, (None, 4))
        assert metric(s, "cache_patched_total") >= patched + 3
        for k, want in ((1, (9, None, None)), (3, (5, None, None)), (4, None)):
            r = s.execute(sel, (k,)).one()
            assert (tuple(r) if r else None) == want, k
            assert direct.execute(f"SELECT n, v, b FROM {ks}.wide WHERE k = {k}").one() == r
        # Nulling a cell of an existing row: the proxy cannot tell whether the row survives,
        # so it drops the entry and asks Cassandra.
        s.execute(upd, (None, 3))
        assert s.execute(sel, (3,)).one() == direct.execute(f"SELECT n, v, b FROM {ks}.wide WHERE k = 3").one()
        assert s.execute(sel, (3,)).one() is None  # the UPDATE-made row is gone
        # ... unless a cell the result shows is still live: then the row survives for sure.
        s.execute(ins_all, (5, "five", 5, b"\x05"))
        s.execute(sel, (5,))
        patched = metric(s, "cache_patched_total")
        s.execute(upd, (None, 5))
        assert metric(s, "cache_patched_total") == patched + 1
        hits = metric(s, "cache_hits_total")
        r = s.execute(sel, (5,)).one()
        assert tuple(r) == (None, "five", b"\x05")
        assert metric(s, "cache_hits_total") == hits + 1
        assert direct.execute(f"SELECT n, v, b FROM {ks}.wide WHERE k = 5").one() == r

        # A whole-row DELETE: the cached read becomes "no row", answered from the cache.
        dele = s.prepare("DELETE FROM wide WHERE k = ?")
        s.execute(sel, (1,))
        patched = metric(s, "cache_patched_total")
        s.execute(dele, (1,))
        assert metric(s, "cache_patched_total") > patched
        hits = metric(s, "cache_hits_total")
        assert s.execute(sel, (1,)).one() is None
        assert metric(s, "cache_hits_total") > hits
        assert direct.execute(f"SELECT n, v, b FROM {ks}.wide WHERE k = 1").one() is None

        cins = s.prepare("INSERT INTO clus (k, c, v) VALUES (?, ?, ?)")
        csel = s.prepare("SELECT c, v FROM clus WHERE k = ?")
        s.execute(cins, (1, 1, "x"))
        assert [tuple(r) for r in s.execute(csel, (1,))] == [(1, "x")]
        patched = metric(s, "cache_patched_total")
        s.execute(cins, (1, 2, "y"))
        assert [tuple(r) for r in s.execute(csel, (1,))] == [(1, "x"), (2, "y")]
        assert metric(s, "cache_patched_total") == patched
    finally:
        c.shutdown()


def test_client_timestamped_writes_patch_only_where_they_win(proxy, direct, ks):
    """With the driver's client timestamps (its default) a prepared write patches the cache
    too, but only when its timestamp is above every cell the entry may hold: a write with an
    older timestamp, which Cassandra ignores, and a write below a future-dated cell leave the
    cache answering what Cassandra answers."""
    c = proxy.cluster(protocol_version=4)
    try:
        s = c.connect(ks)
        assert s.use_client_timestamp
        s.execute("CREATE TABLE cts (k int PRIMARY KEY, v text)")
        ins = s.prepare("INSERT INTO cts (k, v) VALUES (?, ?)")
        sel = s.prepare("SELECT v FROM cts WHERE k = ?")

        def read():
            mine = s.execute(sel, (1,)).one().v
            assert mine == direct.execute(f"SELECT v FROM {ks}.cts WHERE k = 1").one().v
            return mine

        s.execute(ins, (1, "a"))
        assert read() == "a"  # cached
        patched = metric(s, "cache_patched_total")
        s.execute(ins, (1, "b"))
        assert metric(s, "cache_patched_total") == patched + 1
        hits = metric(s, "cache_hits_total")
        assert read() == "b"
        assert metric(s, "cache_hits_total") == hits + 1

        now = int(time.time() * 1e6)
        for ts, value, want in (
            (now - 3_600_000_000, "an hour old", "b"),  # Cassandra keeps "b"
            (now + 600_000_000, "future", "future"),  # wins
            (now + 1_000, "now", "future"),  # loses to the future-dated cell
        ):
            c.timestamp_generator = lambda ts=ts: ts
            s.execute(ins, (1, value))
            assert read() == want, value
    finally:
        c.shutdown()


def test_batches_of_prepared_writes_patch_the_cache(proxy, direct, ks):
    """The prepared writes of a BATCH patch the cached reads of their partitions like single
    EXECUTEs; two statements in one partition (one timestamp: Cassandra merges them) only
    invalidate it, and every read answers what Cassandra answers."""
    c = proxy.cluster(protocol_version=4)
    try:
        s = c.connect(ks)
        s.execute("CREATE TABLE bt (k int PRIMARY KEY, v text, n int)")
        ins = s.prepare("INSERT INTO bt (k, v, n) VALUES (?, ?, ?)")
        upd = s.prepare("UPDATE bt SET v = ? WHERE k = ?")
        sel = s.prepare("SELECT v, n FROM bt WHERE k = ?")

        def check(k, want):
            got = s.execute(sel, (k,)).one()
            assert tuple(got) == want, k
            assert direct.execute(f"SELECT v, n FROM {ks}.bt WHERE k = {k}").one() == got

        for k in range(3):
            s.execute(ins, (k, "a", k))
            s.execute(sel, (k,))  # cached
        patched = metric(s, "cache_patched_total")
        b = BatchStatement(batch_type=BatchType.LOGGED)
        b.add(ins, (0, "b", 10))
        b.add(upd, ("b", 1))
        s.execute(b)
        assert metric(s, "cache_patched_total") == patched + 2
        hits = metric(s, "cache_hits_total")
        for k, want in ((0, ("b", 10)), (1, ("b", 1)), (2, ("a", 2))):
            check(k, want)
        assert metric(s, "cache_hits_total") == hits + 3

        patched = metric(s, "cache_patched_total")
        b = BatchStatement(batch_type=BatchType.UNLOGGED)
        b.add(upd, ("y", 2))
        b.add(upd, ("x", 2))
        s.execute(b)
        assert metric(s, "cache_patched_total") == patched
        check(2, ("y", 2))  # equal timestamps: the larger value wins, not the later statement
    finally:
        c.shutdown()


@pytest.mark.parametrize("version", [4, 5])
def test_upstream_compression_lz4(upstream, direct, version):
    """With `upstream_compression: lz4` the proxy's connections to Cassandra are LZ4
    compressed (Cassandra lists them with COMPRESSION=lz4 in system_views.clients), and
    reads, writes and 4 KB rows work through them at protocol v4 (compressed envelopes) and
    v5 (compressed segments)."""
    p = Proxy([upstream], "  upstream_compression: lz4\n")
    try:
        c = p.cluster(protocol_version=version)
        try:
            s = c.connect()
            ks = f"px_lz4_v{version}"
            s.execute(f"CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
            s.execute(f"CREATE TABLE IF NOT EXISTS {ks}.kv (k int PRIMARY KEY, v text)")
            ins = s.prepare(f"INSERT INTO {ks}.kv (k, v) VALUES (?, ?)")
            sel = s.prepare(f"SELECT v FROM {ks}.kv WHERE k = ?")
            big = "x" * 4096 + "y" * 4096  # compressible, larger than a small frame
            for k in range(20):
                s.execute(ins, (k, f"{k}{big}"))
            for k in range(20):
                assert s.execute(sel, (k,)).one().v == f"{k}{big}"
                assert s.execute(f"SELECT v FROM {ks}.kv WHERE k = {k}").one().v == f"{k}{big}"
            assert direct.execute(f"SELECT v FROM {ks}.kv WHERE k = 3").one().v == f"3{big}"
            s.execute(f"DROP KEYSPACE {ks}")
        finally:
            c.shutdown()
        proxies = [r for r in direct.execute("SELECT client_options FROM system_views.clients")
                   if (r.client_options or {}).get("DRIVER_NAME") == "Peregrine proxy"]
        assert proxies, "no proxy connection seen by Cassandra"
        compressed = [r for r in proxies if r.client_options.get("COMPRESSION") == "lz4"]
        assert compressed, [r.client_options for r in proxies]
    finally:
        p.stop_cleanly()


def test_patched_reads_never_go_back_in_time(proxy, ks):
    """One writer per key (prepared INSERTs without client timestamps, so they patch) and
    concurrent readers: a read sent after a write was acknowledged never returns an older
    value."""
    c = proxy.cluster(protocol_version=4)
    try:
        s = c.connect(ks)
        s.use_client_timestamp = False
        s.execute("CREATE TABLE seq (k int PRIMARY KEY, n int)")
        ins = s.prepare("INSERT INTO seq (k, n) VALUES (?, ?)")
        sel = s.prepare("SELECT n FROM seq WHERE k = ?")
        keys = range(4)
        acked = {k: -1 for k in keys}
        errors, stop = [], threading.Event()
        patched = metric(s, "cache_patched_total")

        def writer(k):
            for n in range(300):
                s.execute(ins, (k, n))
                acked[k] = n

        def reader(seed):
            rng = random.Random(seed)
            while not stop.is_set():
                k = rng.choice(keys)
                floor = acked[k]
                row = s.execute(sel, (k,)).one()
                got = row.n if row else -1
                if got < floor:
                    errors.append(f"key {k}: read {got} after {floor} was acknowledged")

        readers = [threading.Thread(target=reader, args=(i,)) for i in range(3)]
        writers = [threading.Thread(target=writer, args=(k,)) for k in keys]
        for t in readers + writers:
            t.start()
        for t in writers:
            t.join()
        stop.set()
        for t in readers:
            t.join()
        assert not errors, errors[:5]
        assert metric(s, "cache_patched_total") > patched
    finally:
        c.shutdown()


def test_tracing_and_warnings_pass_through(session, ks):
    """A traced request is traced by Cassandra (a cacheable read bypasses the cache) and the
    driver reads the trace through the proxy; Cassandra's warnings reach the client."""
    ins = session.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
    sel = session.prepare("SELECT v FROM kv WHERE k = ?")
    session.execute(ins, (1, "t"))
    session.execute(sel, (1,))  # cached now
    for stmt, args in ((sel, (1,)), ("SELECT v FROM kv WHERE k = 1", None)):
        rs = session.execute(stmt, args, trace=True)
        assert rs.one().v == "t"
        trace = rs.get_query_trace(max_wait_sec=10)
        assert trace is not None, f"no tracing session id came back for {stmt}"
        assert trace.coordinator is not None and trace.events, f"empty trace for {stmt}"
    # Over Cassandra's batch_size_warn_threshold (5 KiB): it answers with a warning.
    big = "x" * 3000
    stmts = " ".join(f"INSERT INTO kv (k, v) VALUES ({k}, '{big}');" for k in range(100, 103))
    rs = session.execute(f"BEGIN BATCH {stmts} APPLY BATCH")
    warnings = rs.response_future.warnings or []
    assert any("Batch" in w and "threshold" in w for w in warnings), warnings


@pytest.mark.parametrize("compression,version", [("lz4", 4), ("lz4", 5), ("snappy", 4)])
def test_cache_hits_over_compressed_connections(proxy, ks, compression, version):
    """Cached results (small, and large enough for several v5 segments) come back intact on
    compressed connections."""
    c = proxy.cluster(protocol_version=version, compression=compression)
    try:
        s = c.connect(ks)
        assert c.control_connection._connection._compression_type == compression
        ins = s.prepare("INSERT INTO kv (k, v) VALUES (?, ?)")
        sel = s.prepare("SELECT v FROM kv WHERE k = ?")
        values = {k: ("compressible " * (k * 4000)) + str(k) for k in range(4)}  # up to 156 KB
        for k, v in values.items():
            s.execute(ins, (k, v))
            s.execute(sel, (k,))  # fill
        hits = metric(s, "cache_hits_total")
        for k, v in values.items():
            assert s.execute(sel, (k,)).one().v == v
        assert metric(s, "cache_hits_total") >= hits + len(values)
    finally:
        c.shutdown()


def test_write_that_bypasses_the_proxy_shows_after_max_staleness(session, direct, short_ks):
    ks = short_ks
    sel = session.prepare("SELECT v FROM kv WHERE k = ?")
    session.execute("INSERT INTO kv (k, v) VALUES (1, 'old')")
    assert session.execute(sel, (1,)).one().v == "old"
    assert session.execute(sel, (1,)).one().v == "old"  # now cached
    direct.execute(f"UPDATE {ks}.kv SET v = 'new' WHERE k = 1")
    time.sleep(MAX_STALENESS + 0.3)
    assert session.execute(sel, (1,)).one().v == "new"


def test_hot_entries_are_refreshed_ahead_within_max_staleness(session, direct):
    """A hit late in an entry's life (past its refresh point, between 60% and 90% of its
    table's max_staleness) re-reads it upstream in the background: the entry is replaced
    before it expires, so a hot key never makes its readers wait on Cassandra, and the
    staleness bound holds. A cold entry just expires."""
    T = REFRESH_STALENESS
    with _kv_keyspace(session, REFRESH_KS):
        sel = session.prepare(f"SELECT v FROM {REFRESH_KS}.kv WHERE k = ?")
        for k in (7, 8):
            session.execute(f"INSERT INTO {REFRESH_KS}.kv (k, v) VALUES ({k}, 'old')")
        filled = time.monotonic()
        assert session.execute(sel, (7,)).one().v == "old"  # misses: filled
        assert session.execute(sel, (8,)).one().v == "old"
        for k in (7, 8):  # writes that bypass the proxy
            direct.execute(f"UPDATE {REFRESH_KS}.kv SET v = 'new' WHERE k = {k}")
        time.sleep(max(0.0, filled + 0.92 * T - time.monotonic()))
        refreshes = metric(session, "cache_refreshes_total")
        # Within the bound the cached value answers, and this late hit asks for a refresh.
        assert session.execute(sel, (7,)).one().v == "old"
        _wait_until(lambda: metric(session, "cache_refreshes_total") > refreshes, 2,
                    "a background refresh")
        time.sleep(max(0.0, filled + T + 0.3 - time.monotonic()))  # the first fills expired
        hits, misses = metric(session, "cache_hits_total"), metric(session, "cache_misses_total")
        assert session.execute(sel, (7,)).one().v == "new"
        assert metric(session, "cache_hits_total") == hits + 1, "the refreshed entry answered"
        assert session.execute(sel, (8,)).one().v == "new"
        assert metric(session, "cache_misses_total") == misses + 1, "the cold entry expired"


def test_repeated_reads_hit_the_cache(session):
    # A table whose entries live 60 s: no hit below can turn into a miss by expiry.
    with _kv_keyspace(session, HITS_KS):
        session.execute(f"INSERT INTO {HITS_KS}.kv (k, v) VALUES (5, 'x')")
        sel = session.prepare(f"SELECT v FROM {HITS_KS}.kv WHERE k = ?")
        session.execute(sel, (5,))  # fills the cache
        before_hits = metric(session, "cache_hits_total")
        before_up = wait_upstream_quiet(session)
        for _ in range(20):
            assert session.execute(sel, (5,)).one().v == "x"
        assert metric(session, "cache_hits_total") >= before_hits + 20
        # The 20 hits sent nothing upstream. (The driver's own background queries - schema
        # agreement, topology refresh - may still pass through meanwhile, hence the slack.)
        assert metric(session, "upstream_requests_total") - before_up < 10
        # Non-cacheable (unprepared) reads always go upstream: 20 of them send at least 20
        # requests, where the 20 hits above sent (nearly) none. Background queries only add.
        before_up = wait_upstream_quiet(session)
        for _ in range(20):
            assert session.execute(f"SELECT v FROM {HITS_KS}.kv WHERE k = 5").one().v == "x"
        assert metric(session, "upstream_requests_total") - before_up >= 20


def test_errors_pass_through(session, ks):
    with pytest.raises(InvalidRequest) as e:
        session.execute("SELECT * FROM no_such_table")
    assert "no_such_table" in str(e.value)
    with pytest.raises(InvalidRequest):
        session.prepare("SELECT * FROM no_such_table WHERE k = ?")
    with pytest.raises(InvalidRequest):
        session.execute("USE no_such_keyspace_xyz")
    with pytest.raises(SyntaxException) as e:
        session.execute("SELEKT * FROM kv")
    assert e.value.code == 0x2000


def test_unprepared_recovery(session, direct, short_ks):
    ks = short_ks
    # Proxy side: an id the proxy never saw (prepared straight on Cassandra) -> UNPREPARED,
    # the driver prepares through the proxy and retries.
    session.execute("INSERT INTO kv (k, v) VALUES (3, 'three')")
    foreign = direct.prepare(f"SELECT v FROM {ks}.kv WHERE k = ?")
    assert session.execute(foreign, (3,)).one().v == "three"
    # Upstream side: Cassandra forgets the statement (table dropped and re-created directly);
    # the proxy re-prepares from the text it remembers and retries once.
    sel = session.prepare("SELECT v FROM kv WHERE k = ?")
    assert session.execute(sel, (3,)).one().v == "three"
    retries = metric(session, "upstream_unprepared_retries_total")
    direct.execute(f"DROP TABLE {ks}.kv")
    direct.execute(f"CREATE TABLE {ks}.kv (k int PRIMARY KEY, v text)")
    direct.execute(f"INSERT INTO {ks}.kv (k, v) VALUES (3, 'again')")
    time.sleep(MAX_STALENESS + 0.3)
    assert session.execute(sel, (3,)).one().v == "again"
    # Either repair path is right: the proxy heard the DROP through the relayed schema events
    # and forgot the statement (the driver re-prepares), or Cassandra answered UNPREPARED and
    # the proxy re-prepared and retried once.
    assert metric(session, "upstream_unprepared_retries_total") in (retries, retries + 1)


def test_unreachable_upstream_fails_fast_with_unavailable(upstream):
    p = Proxy([f"127.0.0.1:{_free_port()}"])
    try:
        started = time.time()
        c = p.cluster(protocol_version=4, connect_timeout=5)
        with pytest.raises(NoHostAvailable) as e:
            c.connect()
        c.shutdown()
        assert time.time() - started < 8
        assert "no upstream node is reachable" in str(e.value), str(e.value)
    finally:
        p.stop()


def test_two_proxies_split_the_ring(upstream):
    pa, pb = _free_port(), _free_port()
    a = Proxy([upstream], port=pa, peers=[f"127.0.0.1:{pb}"])
    b = Proxy([upstream], port=pb, peers=[f"127.0.0.1:{pa}"])
    try:
        c = a.cluster(protocol_version=5, load_balancing_policy=TokenAwarePolicy(RoundRobinPolicy()))
        s = c.connect()
        assert sorted(h.endpoint.port for h in c.metadata.all_hosts()) == sorted([pa, pb])
        tokens = c.metadata.token_map.ring
        assert len(tokens) == 2
        name = "px_" + uuid.uuid4().hex[:10]
        s.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
        try:
            s.execute(f"CREATE TABLE {name}.kv (k int PRIMARY KEY, v text)")
            c.refresh_schema_metadata()
            ins = s.prepare(f"INSERT INTO {name}.kv (k, v) VALUES (?, ?)")
            owners = set()
            for k in range(20):
                s.execute(ins, (k, str(k)))
                replicas = c.metadata.get_replicas(name, ins.bind((k, "")).routing_key)
                owners.add(replicas[0].endpoint.port)
            assert owners == {pa, pb}
        finally:
            s.execute(f"DROP KEYSPACE {name}")
        c.shutdown()
    finally:
        a.stop()
        b.stop()


@pytest.fixture(scope="module")
def auth_upstream():
    """A second Cassandra with PasswordAuthenticator (login cassandra/cassandra)."""
    port = UPSTREAM_PORT + 10
    env = dict(os.environ, CASSANDRA_AUTH="password")
    ps.start_cassandra(port, env=env)
    try:
        yield f"127.0.0.1:{port}"
    finally:
        ps.stop_cassandra(port, env=env)


@pytest.mark.parametrize("version", [4, 5])
def test_login_with_upstream_credentials(auth_upstream, version):
    from cassandra import AuthenticationFailed
    from cassandra.auth import PlainTextAuthProvider

    p = Proxy([auth_upstream])
    try:
        c = p.cluster(protocol_version=version, auth_provider=PlainTextAuthProvider("cassandra", "cassandra"))
        s = c.connect()
        assert s.execute("SELECT release_version FROM system.local").one().release_version == "5.0.9"
        name = "px_" + uuid.uuid4().hex[:10]
        s.execute(f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
        s.execute(f"CREATE TABLE {name}.kv (k int PRIMARY KEY, v text)")
        s.execute("CREATE ROLE IF NOT EXISTS reader WITH PASSWORD = 'r' AND LOGIN = true")
        s.execute(f"INSERT INTO {name}.kv (k, v) VALUES (1, 'secret')")
        sel = s.prepare(f"SELECT v FROM {name}.kv WHERE k = ?")
        assert s.execute(sel, (1,)).one().v == "secret"
        assert s.execute(sel, (1,)).one().v == "secret"  # cached for role cassandra
        # A role without SELECT permission gets Unauthorized, cached rows notwithstanding.
        r = p.cluster(protocol_version=version, auth_provider=PlainTextAuthProvider("reader", "r"))
        rs = r.connect()
        from cassandra import Unauthorized
        with pytest.raises(Unauthorized):
            rs.execute(rs.prepare(f"SELECT v FROM {name}.kv WHERE k = ?"), (1,))
        r.shutdown()
        s.execute(f"DROP KEYSPACE {name}")
        c.shutdown()
        bad = p.cluster(protocol_version=version, auth_provider=PlainTextAuthProvider("cassandra", "wrong"))
        with pytest.raises(NoHostAvailable) as e:
            bad.connect()
        bad.shutdown()
        assert any(isinstance(x, AuthenticationFailed) for x in e.value.errors.values()), e.value.errors
    finally:
        p.stop()


# --- STATUS_CHANGE events for the peer proxies ---------------------------------------------

def _cql_string(s):
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def _send_frame(sock, stream, opcode, body=b""):
    sock.sendall(struct.pack(">BBhBI", 0x04, 0, stream, opcode, len(body)) + body)


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    return buf


def _recv_frame(sock):
    version, _flags, stream, opcode, length = struct.unpack(">BBhBI", _recv_exact(sock, 9))
    assert version == 0x84, hex(version)
    return stream, opcode, _recv_exact(sock, length)


def _parse_status_event(body):
    """(event type, change, (ip, port)) of an EVENT body."""
    pos = 0

    def string():
        nonlocal pos
        (n,) = struct.unpack_from(">H", body, pos)
        pos += 2 + n
        return body[pos - n:pos].decode()

    kind = string()
    if kind not in ("STATUS_CHANGE", "TOPOLOGY_CHANGE"):
        return kind, None, None
    change = string()
    size = body[pos]
    ip = socket.inet_ntop(socket.AF_INET if size == 4 else socket.AF_INET6, body[pos + 1:pos + 1 + size])
    (port,) = struct.unpack_from(">i", body, pos + 1 + size)
    return kind, change, (ip, port)


def _wait_for_status(sock, change, port, timeout):
    """Reads events until STATUS_CHANGE `change` for 127.0.0.1:`port`; other events are skipped
    (a peer that started after this proxy may have been announced DOWN then UP at start)."""
    deadline = time.time() + timeout
    seen = []
    while True:
        left = deadline - time.time()
        if left <= 0:
            pytest.fail(f"no STATUS_CHANGE {change} for port {port} within {timeout}s; saw {seen}")
        sock.settimeout(left)
        try:
            stream, opcode, body = _recv_frame(sock)
        except socket.timeout:
            continue
        assert (stream, opcode) == (-1, 0x0C), (stream, opcode, body)
        ev = _parse_status_event(body)
        seen.append(ev)
        if ev == ("STATUS_CHANGE", change, ("127.0.0.1", port)):
            return


def test_peer_proxy_status_change_events_on_the_wire(upstream):
    pa, pb = _free_port(), _free_port()
    a = Proxy([upstream], port=pa, peers=[f"127.0.0.1:{pb}"])
    b = Proxy([upstream], port=pb, peers=[f"127.0.0.1:{pa}"])
    try:
        sock = socket.create_connection(("127.0.0.1", pa), timeout=10)
        try:
            startup = struct.pack(">H", 1) + _cql_string("CQL_VERSION") + _cql_string("3.0.0")
            _send_frame(sock, 0, 0x01, startup)
            assert _recv_frame(sock)[:2] == (0, 0x02)  # READY
            _send_frame(sock, 1, 0x0B, struct.pack(">H", 1) + _cql_string("STATUS_CHANGE"))
            assert _recv_frame(sock)[:2] == (1, 0x02)  # READY
            b.stop()
            _wait_for_status(sock, "DOWN", pb, timeout=5)
            b = Proxy([upstream], port=pb, peers=[f"127.0.0.1:{pa}"])
            _wait_for_status(sock, "UP", pb, timeout=5)
        finally:
            sock.close()
    finally:
        a.stop()
        b.stop()


def _wait_until(cond, timeout, what):
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            pytest.fail(f"{what} not within {timeout}s")
        time.sleep(0.1)


def test_driver_marks_a_restarted_peer_proxy_up_from_the_event(upstream):
    pa, pb = _free_port(), _free_port()
    a = Proxy([upstream], port=pa, peers=[f"127.0.0.1:{pb}"])
    b = Proxy([upstream], port=pb, peers=[f"127.0.0.1:{pa}"])
    c = None
    try:
        # Reconnection attempts only every 300 s: only the UP event can bring B back quickly.
        c = a.cluster(protocol_version=4, reconnection_policy=ConstantReconnectionPolicy(300))
        s = c.connect()
        [host_b] = [h for h in c.metadata.all_hosts() if h.endpoint.port == pb]
        _wait_until(lambda: host_b.is_up, 10, "peer proxy B up at start")
        b.stop()
        # The driver may mark B down itself (its connections to B closed) or from A's DOWN
        # event. Either way, A must have announced DOWN before B comes back, or it has no UP to
        # announce: a peer away for less than two probes is, to A, never down.
        _wait_until(lambda: host_b.is_up is False, 15, "the driver marking the stopped B down")
        _wait_until(lambda: f"peer proxy 127.0.0.1:{pb} is DOWN" in a.log_tail(20000), 10,
                    "proxy A announcing B down")
        b = Proxy([upstream], port=pb, peers=[f"127.0.0.1:{pa}"])
        restarted = time.time()
        _wait_until(lambda: host_b.is_up, 10, "the driver marking the restarted B up")
        print(f"B marked up {time.time() - restarted:.1f}s after it restarted")
        # And B serves requests again.
        _wait_until(lambda: s.get_pool_state().get(host_b, {}).get("open_count", 0) > 0, 10,
                    "a connection pool to B")
        assert s.execute("SELECT release_version FROM system.local").one().release_version == "5.0.9"
    finally:
        if c is not None:
            c.shutdown()
        a.stop()
        b.stop()
