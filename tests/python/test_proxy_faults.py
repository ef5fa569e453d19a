"""Proxy mode under concurrency and upstream faults, against a real Apache Cassandra 5.0.9.

Starts Cassandra with scripts/cassandra.sh on port 9182 (or $PROXY_FAULTS_UPSTREAM_PORT) and one
Peregrine proxy (`serve --upstream`), both stopped at the end of the module. The tests run in file
order; the last one kills Cassandra with SIGKILL and restarts it on the same data directory.

- coherence: concurrent writers and cached readers through the proxy; no read may return a value
  older than the last write acknowledged before the read was sent;
- upstream events: a table created straight on Cassandra shows in the proxy client's metadata,
  and a schema change invalidates the proxy's cache;
- faults: a stopped upstream (SIGSTOP) gives ReadTimeout/WriteTimeout within `request_timeout`;
  a killed upstream gives fast errors, `serve_stale_on_upstream_error` tables answer from the
  cache, and the same proxy process serves again once Cassandra is back.
"""

import itertools
import os
import random
import signal
import threading
import time
import uuid

import pytest
from cassandra import OperationTimedOut, ReadTimeout, Unavailable, WriteTimeout
from cassandra.cluster import Cluster, NoHostAvailable

import proxy_support as ps
from proxy_support import metric

UPSTREAM_PORT = int(os.environ.get("PROXY_FAULTS_UPSTREAM_PORT", "9182"))
REQUEST_TIMEOUT = 2.0  # the proxy's `request_timeout`
MAX_STALENESS = 0.5  # the proxy's `proxy.max_staleness`
KS = "pxf_" + uuid.uuid4().hex[:10]
COHERENCE_SECONDS = float(os.environ.get("PROXY_COHERENCE_SECONDS", "15"))


def _cassandra_pid():
    return ps.cassandra_pid(UPSTREAM_PORT)


def _start_cassandra():
    ps.start_cassandra(UPSTREAM_PORT)


@pytest.fixture(scope="module")
def upstream():
    _start_cassandra()
    try:
        yield f"127.0.0.1:{UPSTREAM_PORT}"
    finally:
        try:  # a test that failed half way may have left it stopped
            os.kill(_cassandra_pid(), signal.SIGCONT)
        except (OSError, ValueError):
            pass
        ps.stop_cassandra(UPSTREAM_PORT)


@pytest.fixture(scope="module")
def direct(upstream):
    """A session straight to Cassandra; creates the module's keyspace and tables."""
    c = Cluster(["127.0.0.1"], port=UPSTREAM_PORT, protocol_version=4, connect_timeout=10)
    s = c.connect()
    s.execute(f"CREATE KEYSPACE {KS} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}")
    for t, v in (("kv", "bigint"), ("stale", "text"), ("slow", "text"), ("load", "text")):
        s.execute(f"CREATE TABLE {KS}.{t} (k int PRIMARY KEY, v {v})")
    yield s
    c.shutdown()


@pytest.fixture(scope="module")
def proxy(upstream, direct):
    p = ps.Proxy(upstream, f"""request_timeout: {int(REQUEST_TIMEOUT * 1000)}ms
proxy:
  max_staleness: {int(MAX_STALENESS * 1000)}ms
  connect_timeout: 1s
  serve_stale_on_upstream_error: [{KS}.stale]
  table_max_staleness:
    {KS}.slow: 60s
""")
    yield p
    p.stop_cleanly()


def test_no_read_older_than_an_acknowledged_write(proxy):
    """Writers update a few keys with increasing values (each write's timestamp is its value,
    so the highest value always wins in Cassandra whatever the arrival order); readers check
    every prepared (cacheable) read against the highest value acknowledged before it was sent."""
    keys = 6
    base_ts = 1_700_000_000_000_000
    wc = proxy.cluster(protocol_version=4)
    rc = proxy.cluster(protocol_version=5)
    ws, rs = wc.connect(), rc.connect()
    try:
        upd = ws.prepare(f"UPDATE {KS}.kv USING TIMESTAMP ? SET v = ? WHERE k = ?")
        sel = rs.prepare(f"SELECT v FROM {KS}.kv WHERE k = ?")
        for k in range(keys):
            ws.execute(upd, (base_ts, 0, k))
        counter = itertools.count(1)
        lock = threading.Lock()
        acked = [0] * keys  # highest acknowledged value per key
        stop = threading.Event()
        violations, errors = [], []
        stats = {"reads": 0, "writes": 0}

        def writer(seed, prepared):
            rng = random.Random(seed)
            while not stop.is_set():
                k = rng.randrange(keys)
                v = next(counter)
                try:
                    if prepared:
                        ws.execute(upd, (base_ts + v, v, k))
                    else:  # unprepared: the proxy invalidates the whole table
                        ws.execute(f"UPDATE {KS}.kv USING TIMESTAMP {base_ts + v} SET v = {v} WHERE k = {k}")
                except Exception as e:  # noqa: BLE001 - any failure fails the test below
                    errors.append(f"write {k}={v}: {e!r}")
                    continue
                with lock:
                    acked[k] = max(acked[k], v)
                    stats["writes"] += 1

        def reader(seed):
            rng = random.Random(seed)
            while not stop.is_set():
                k = rng.randrange(keys)
                with lock:
                    floor = acked[k]
                sent = time.monotonic()
                try:
                    row = rs.execute(sel, (k,)).one()
                except Exception as e:  # noqa: BLE001
                    errors.append(f"read {k}: {e!r}")
                    continue
                got = row.v if row else None
                if got is None or got < floor:
                    violations.append((k, got, floor, sent))
                with lock:
                    stats["reads"] += 1

        hits_before = metric(rs, "cache_hits_total")
        threads = [threading.Thread(target=writer, args=(1, True)),
                   threading.Thread(target=writer, args=(2, True)),
                   threading.Thread(target=writer, args=(3, False))]
        threads += [threading.Thread(target=reader, args=(10 + i,)) for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(COHERENCE_SECONDS)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        hits = metric(rs, "cache_hits_total") - hits_before
        print(f"coherence: {stats['writes']} writes, {stats['reads']} reads, {hits} cache hits")
        assert not errors, errors[:5]
        assert not violations, f"{len(violations)} stale reads, first: {violations[:5]}"
        assert stats["writes"] > 100 and stats["reads"] > 100, stats
        assert hits > 50, f"only {hits} cache hits: the cache was not exercised"
        # The final state: every key at its highest acknowledged value.
        for k in range(keys):
            assert rs.execute(sel, (k,)).one().v == acked[k]
    finally:
        wc.shutdown()
        rc.shutdown()


def _wait(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_schema_change_made_on_cassandra_reaches_proxy_clients(proxy, direct):
    c = proxy.cluster(protocol_version=4)
    s = c.connect()
    try:
        assert "evt" not in c.metadata.keyspaces[KS].tables
        started = time.monotonic()
        direct.execute(f"CREATE TABLE {KS}.evt (k int PRIMARY KEY, v text)")
        # The driver refreshes its metadata on the relayed SCHEMA_CHANGE event (it waits up to
        # its 2 s schema_event_refresh_window first).
        assert _wait(lambda: "evt" in c.metadata.keyspaces[KS].tables, 8), "no SCHEMA_CHANGE relayed"
        print(f"table created on Cassandra seen by the proxy client after {time.monotonic() - started:.1f}s")

        # The event also invalidates the cache: `slow` has max_staleness 60s.
        sel = s.prepare(f"SELECT v FROM {KS}.slow WHERE k = ?")
        s.execute(f"INSERT INTO {KS}.slow (k, v) VALUES (1, 'old')")
        assert s.execute(sel, (1,)).one().v == "old"
        direct.execute(f"UPDATE {KS}.slow SET v = 'new' WHERE k = 1")  # bypasses the proxy
        time.sleep(MAX_STALENESS + 0.2)
        assert s.execute(sel, (1,)).one().v == "old"  # cached, within the table's 60 s
        direct.execute(f"ALTER TABLE {KS}.slow ADD extra int")
        assert _wait(lambda: s.execute(sel, (1,)).one().v == "new", 5), "schema event did not invalidate"
    finally:
        c.shutdown()


def _states(pid):
    """Scheduler state letter -> thread count for every thread of `pid`."""
    counts = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        counts[state] = counts.get(state, 0) + 1
    return counts


def _all_threads_stopped(pid):
    """SIGSTOP is asynchronous: kill() returns before every thread has stopped."""
    return set(_states(pid)) <= {"T", "t"}


def test_stopped_upstream_times_out_within_request_timeout(proxy):
    c = proxy.cluster(protocol_version=4)
    s = c.connect()
    try:
        ins = s.prepare(f"INSERT INTO {KS}.load (k, v) VALUES (?, ?)")
        sel = s.prepare(f"SELECT v FROM {KS}.load WHERE k = ?")
        s.execute(ins, (1, "one"))
        assert s.execute(sel, (1,)).one().v == "one"
        pid = _cassandra_pid()
        os.kill(pid, signal.SIGSTOP)
        try:
            assert _wait(lambda: _all_threads_stopped(pid), 5), f"Cassandra {pid} did not stop: {_states(pid)}"
            for k, (stmt, args, err) in enumerate([(sel, (2,), ReadTimeout), (ins, (3, "x"), WriteTimeout),
                                                   (sel, (4,), ReadTimeout)]):
                started = time.monotonic()
                before = metric(s, "upstream_requests_total")
                try:
                    answer = s.execute(stmt, args)
                except err:
                    answer = None
                took = time.monotonic() - started
                # An answer here would have to come from somewhere other than the stopped
                # upstream: say where it could have, so a failure explains itself.
                assert answer is None, (
                    f"request {k} answered {list(answer)} after {took:.2f}s with Cassandra stopped; "
                    f"upstream requests sent meanwhile: {metric(s, 'upstream_requests_total') - before}; "
                    f"Cassandra threads: {_states(pid)}; proxy log tail:\n{proxy.log_tail()}")
                assert REQUEST_TIMEOUT - 0.3 < took < REQUEST_TIMEOUT + 1.0, f"request {k} took {took:.2f}s"
        finally:
            os.kill(pid, signal.SIGCONT)
        assert _wait(lambda: s.execute(sel, (1,)).one().v == "one", 10)
        s.execute(ins, (5, "five"))
        assert s.execute(sel, (5,)).one().v == "five"
    finally:
        c.shutdown()


FAST_ERRORS = (Unavailable, NoHostAvailable, ReadTimeout, WriteTimeout)


def _error_name(e):
    if isinstance(e, NoHostAvailable):
        inner = ",".join(sorted({type(x).__name__ for x in e.errors.values()}))
        return f"NoHostAvailable({inner})"
    return type(e).__name__


def test_killed_upstream_fails_fast_serves_stale_and_proxy_reconnects(proxy):
    c = proxy.cluster(protocol_version=4)
    s = c.connect()
    proxy_pid = proxy.proc.pid
    try:
        ins = s.prepare(f"INSERT INTO {KS}.load (k, v) VALUES (?, ?)")
        sel = s.prepare(f"SELECT v FROM {KS}.load WHERE k = ?")
        st_sel = s.prepare(f"SELECT v FROM {KS}.stale WHERE k = ?")
        # Prepared writes: they invalidate their partition only (an unprepared one would
        # invalidate the whole table, and no stale row would be left to serve).
        st_ins = s.prepare(f"INSERT INTO {KS}.stale (k, v) VALUES (?, ?)")
        for k in range(3):
            s.execute(st_ins, (k, f"kept-{k}"))
            assert s.execute(st_sel, (k,)).one().v == f"kept-{k}"
        s.execute(ins, (1000, "before"))
        assert s.execute(sel, (1000,)).one().v == "before"
        # A row read (so kept) and then written through the proxy: never served stale.
        s.execute(st_ins, (2, "changed"))

        log, stop = [], threading.Event()

        def load(seed):
            rng = random.Random(seed)
            while not stop.is_set():
                k = rng.randrange(50)
                started = time.monotonic()
                try:
                    if rng.random() < 0.3:
                        s.execute(ins, (k, f"v{k}"))
                    else:
                        s.execute(sel, (k,))
                    outcome = "ok"
                except Exception as e:  # noqa: BLE001 - classified below
                    outcome = e
                log.append((started, time.monotonic() - started, outcome))
                if outcome != "ok":
                    time.sleep(0.05)

        threads = [threading.Thread(target=load, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        try:
            time.sleep(2)
            killed_at = time.monotonic()
            os.kill(_cassandra_pid(), signal.SIGKILL)
            time.sleep(MAX_STALENESS + 2)

            # serve_stale_on_upstream_error: the cached rows (past max_staleness) answer...
            stale_before = metric(s, "cache_stale_served_total")
            for k in range(2):
                assert s.execute(st_sel, (k,)).one().v == f"kept-{k}"
            assert metric(s, "cache_stale_served_total") == stale_before + 2
            # ...but not a row invalidated by a write, nor one never read, nor other tables.
            for stmt, k in ((st_sel, 2), (st_sel, 99), (sel, 1000)):
                with pytest.raises(FAST_ERRORS):
                    s.execute(stmt, (k,))

            _start_cassandra()  # same data directory and port
            restarted_at = time.monotonic()

            def answers():
                try:
                    return s.execute(sel, (1000,)).one().v == "before"
                except FAST_ERRORS:
                    return False
            assert _wait(answers, 20), "the proxy did not reconnect to the restarted upstream"
            recovered_at = time.monotonic()
            time.sleep(2)
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)

        assert proxy.proc.poll() is None and proxy.proc.pid == proxy_pid  # the same proxy process
        slowest = max(took for _, took, _ in log)
        kinds = {}
        for started, took, outcome in log:
            if outcome != "ok":
                kinds[_error_name(outcome)] = kinds.get(_error_name(outcome), 0) + 1
        print(f"{len(log)} requests, slowest {slowest:.2f}s, errors {kinds}, "
              f"reconnected {recovered_at - restarted_at:.1f}s after the restart")
        # Never a hang: every request answered within request_timeout (plus scheduling slack).
        assert slowest < REQUEST_TIMEOUT + 1.0, slowest
        bad = [o for _, _, o in log if o != "ok" and not isinstance(o, FAST_ERRORS)]
        assert not bad, bad[:5]
        assert not any(isinstance(o, OperationTimedOut) for _, _, o in log)
        assert sum(kinds.values()) > 0 and all(started >= killed_at - REQUEST_TIMEOUT for started, _, o in log if o != "ok")
        after = [o for started, _, o in log if started > recovered_at + 0.5]
        assert after and all(o == "ok" for o in after), [o for o in after if o != "ok"][:5]
        # Upstream events flow again on the re-opened control connection.
        direct = Cluster(["127.0.0.1"], port=UPSTREAM_PORT, protocol_version=4, connect_timeout=10)
        try:
            direct.connect().execute(f"CREATE TABLE {KS}.after_restart (k int PRIMARY KEY)")
        finally:
            direct.shutdown()
        assert _wait(lambda: "after_restart" in c.metadata.keyspaces[KS].tables, 10)
    finally:
        c.shutdown()
