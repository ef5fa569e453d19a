"""`peregrine nodetool` against a Peregrine it starts: nodetool's output formats (compared with
outputs of the real nodetool 5.0.9 kept in fixtures/nodetool), its exit codes, bad input, the
native transport switches, admin authentication, and snapshot + restore into a fresh data
directory (also under concurrent writes), read back through the Python driver."""

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time

import pytest
from cassandra.cluster import NoHostAvailable

from admin_support import Server, binary, fixture, http, nodetool, server, session  # noqa: F401 (fixtures)
from conftest import _free_port, _port_open


@pytest.fixture(scope="module")
def ks(session):
    session.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    session.execute("CREATE TABLE ks.other (k int PRIMARY KEY, v text)")
    return "ks"


def ok(server, *args):
    rc, out, err = server.nodetool(*args)
    assert rc == 0, f"nodetool {args}: exit {rc}\n{out}\n{err}"
    assert err == ""
    return out


def test_version_is_nodetools_line(server):
    assert ok(server, "version") == fixture("version.txt")


def test_status_has_nodetools_header_and_one_up_node(server):
    out = ok(server, "status").splitlines()
    real = fixture("status.txt").splitlines()
    assert out[:4] == real[:4]
    # The columns are as wide as their widest cell, as nodetool's table printer makes them: the
    # Load cell ("90.5 KiB", "1.01 MiB", ...) sets that column's width, so compare the header's
    # names and check each starts where its value in the node's row starts.
    split = lambda line: re.split(r"\s{2,}", line.strip())
    assert split(out[4]) == split(real[4])
    starts = lambda line: [m.start() for m in re.finditer(r"(?:(?<=^)|(?<=\s\s))\S", line)]
    assert starts(out[4]) == starts(out[5]), (out[4], out[5])
    assert re.match(r"^UN  127\.0\.0\.1  \S+ \S+\s+1\s+100\.0%\s+[0-9a-f-]{36}  rack1$", out[5]), out[5]
    assert out[6] == ""


def test_info_lines_are_nodetools(server):
    out = ok(server, "info")
    labels = {l.split(":")[0] for l in fixture("info.txt").splitlines()}
    seen = set()
    for line in out.splitlines():
        assert re.match(r"^.{23}: ", line), line
        label = line[:23]
        seen.add(label)
        if label.strip() != "Block Cache":
            assert label in labels, f"{label!r} is not a line of the real nodetool info"
    for must in ("ID                     ", "Native Transport active", "Load                   ",
                 "Uptime (seconds)       "):
        assert must in seen
    assert "Native Transport active: true" in out
    # Standalone counts its pinned block indexes and Bloom filters, as Cassandra counts its own.
    assert re.search(r"^Off Heap Memory \(MB\)   : \d+\.\d\d$", out, re.M), out


def test_tablestats_counts_driver_reads_and_writes(server, session, ks):
    ins = session.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
    sel = session.prepare("SELECT v FROM ks.t WHERE k = ?")
    for k in range(20):
        session.execute(ins, (k, f"v{k}"))
    for k in range(7):
        assert session.execute(sel, (k,)).one().v == f"v{k}"
    out = ok(server, "tablestats", "ks.t")
    real = fixture("tablestats_kst.txt")
    real_labels = {l.split(":")[0] for l in real.splitlines() if ":" in l}
    for line in out.splitlines():
        if ":" in line:
            assert line.split(":")[0] in real_labels, f"{line!r} is not a line of the real tablestats"
    assert out.startswith("Total number of tables: 1\n----------------\nKeyspace: ks\n")
    assert re.search(r"^\t\tLocal read count: 7$", out, re.M), out
    assert re.search(r"^\t\tLocal write count: 20$", out, re.M), out
    assert re.search(r"^\t\tLocal read latency: \d+\.\d{3} ms$", out, re.M), out
    assert "cfstats" and nodetool("-p", str(server.admin_port), "cfstats", "ks.t")[1] == out


def test_tablehistograms_header_is_nodetools(server, ks):
    out = ok(server, "tablehistograms", "ks", "t").splitlines()
    real = [l for l in fixture("tablehistograms_kst.txt").splitlines() if not l.startswith("No SSTables")]
    assert out[:3] == real[:3]
    assert [l.split()[0] for l in out[3:10]] == ["50%", "75%", "95%", "98%", "99%", "Min", "Max"]
    assert ok(server, "tablehistograms", "ks.t").splitlines()[0] == "ks/t histograms"


def test_commands_that_print_nothing(server, ks):
    for args in (["flush"], ["flush", "ks"], ["flush", "ks", "t"], ["compact", "ks", "t"],
                 ["garbagecollect", "ks"], ["cleanup", "ks"], ["refreshsizeestimates"],
                 ["enableautocompaction", "ks"], ["stop", "COMPACTION"], ["setcompactionthroughput", "0"],
                 ["invalidatekeycache"]):
        assert ok(server, *args) == "", args
    assert ok(server, "getcompactionthroughput") == "Current compaction throughput: 0 MB/s\n"
    assert ok(server, "compactionstats").startswith("pending tasks")


def test_logging_levels_round_trip(server):
    out = ok(server, "getlogginglevels")
    assert out.splitlines()[1] == "Logger Name                                        Log Level"
    assert ok(server, "setlogginglevel", "storage", "DEBUG") == ""
    assert re.search(r"^storage\s+DEBUG$", ok(server, "getlogginglevels"), re.M)
    ok(server, "setlogginglevel", "storage", "")
    assert "storage" not in ok(server, "getlogginglevels")
    rc, _, err = server.nodetool("setlogginglevel", "storage", "LOUD")
    assert rc == 1 and "Invalid log level LOUD" in err


BAD = [
    (["bogus"], 1, fixture("bogus.txt")),
    (["flush", "nosuch"], 1, fixture("flush_nosuch.txt")),
    (["info", "--bogus"], 1,
     "nodetool: Found unexpected parameters: [--bogus]\nSee 'nodetool help' or 'nodetool help <command>'.\n"),
    (["clearsnapshot"], 1,
     "nodetool: Specify snapshot name or --all\nSee 'nodetool help' or 'nodetool help <command>'.\n"),
    (["stop", "BOGUS"], 1,
     "nodetool: compaction_type: can not convert \"BOGUS\" to a OperationType\nSee 'nodetool help' or 'nodetool help <command>'.\n"),
    (["setcompactionthroughput", "abc"], 1,
     "nodetool: compaction_throughput: can not convert \"abc\" to a Integer\nSee 'nodetool help' or 'nodetool help <command>'.\n"),
    (["tablestats", "nosuch.t"], 1,
     "nodetool: Unknown keyspace: nosuch\nSee 'nodetool help' or 'nodetool help <command>'.\n"),
    (["flush", "ks", "nosuch"], 2, "error: Unknown keyspace/cf pair (ks.nosuch)\n"),
]


@pytest.mark.parametrize("args,code,message", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_input_is_answered_as_nodetool_answers_it(server, ks, args, code, message):
    rc, out, err = server.nodetool(*args)
    assert (rc, out, err) == (code, "", message)


def test_unreachable_node_exits_1():
    port = _free_port()
    rc, out, err = nodetool("-p", str(port), "version")
    assert rc == 1 and out == ""
    assert err == f"nodetool: Failed to connect to '127.0.0.1:{port}' - ConnectException: 'Connection refused'.\n"


def test_admin_endpoint_refuses_what_it_does_not_know(server):
    assert http(server.admin_port, "GET", "/")[0] == 404
    assert http(server.admin_port, "GET", "/nodetool/bogus")[0] == 404
    assert http(server.admin_port, "DELETE", "/metrics")[0] == 405
    assert http(server.admin_port, "POST", "/nodetool/flush", body=b"[1,2]")[0] == 400
    assert http(server.admin_port, "POST", "/nodetool/flush", body=b"x" * 70000)[0] == 413


def wait_until_usable(session, timeout=60):
    """Waits for the driver to reconnect after the port came back (its own backoff)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            session.execute("SELECT release_version FROM system.local")
            return
        except NoHostAvailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_disablebinary_closes_the_cql_port_and_enablebinary_reopens_it(server, session, ks):
    assert ok(server, "statusbinary") == "running\n"
    assert ok(server, "disablebinary") == ""
    assert ok(server, "statusbinary") == "not running\n"
    assert not _port_open("127.0.0.1", server.port)
    assert ok(server, "enablebinary") == ""
    assert ok(server, "statusbinary") == "running\n"
    c = server.cluster()
    try:
        assert c.connect().execute("SELECT k FROM ks.t WHERE k = 1").one().k == 1
    finally:
        c.shutdown()
    wait_until_usable(session)


def restore(snapshot_path):
    """A fresh data directory made of the snapshot (docs/operations.md, "Restore")."""
    fresh = tempfile.mkdtemp(prefix="peregrine-restore-")
    data = os.path.join(fresh, "data")
    shutil.copytree(snapshot_path, data)
    return data


def rows(server, query):
    c = server.cluster()
    try:
        return sorted(tuple(r) for r in c.connect().execute(query))
    finally:
        c.shutdown()


def test_snapshot_restores_into_a_fresh_data_dir(server, session, ks):
    session.execute("CREATE TABLE ks.snap (k int PRIMARY KEY, v text)")
    for k in range(50):
        session.execute("INSERT INTO ks.snap (k, v) VALUES (%s, %s)", (k, f"v{k}"))
    session.execute("INSERT INTO ks.other (k, v) VALUES (1, 'elsewhere')")
    out = ok(server, "snapshot", "-t", "before", "-cf", "snap", "ks")
    assert out == ("Requested creating snapshot(s) for [ks] with snapshot name [before] and options "
                   "{skipFlush=false}\nSnapshot directory: before\n")
    rc, _, err = server.nodetool("snapshot", "-t", "before", "ks")
    assert (rc, err) == (2, "error: Snapshot before already exists.\n")
    # After the snapshot: changes that must not be in it.
    session.execute("DELETE FROM ks.snap WHERE k = 0")
    session.execute("INSERT INTO ks.snap (k, v) VALUES (100, 'after')")
    listed = ok(server, "listsnapshots")
    assert listed.startswith("Snapshot Details: \nSnapshot name  Keyspace name  Column family name  True size  Size on disk\n")
    assert re.search(r"^before\s+", listed, re.M)
    path = os.path.join(server.data_dir, "snapshots", "before")
    restored = Server(data_dir=restore(path))
    try:
        assert rows(restored, "SELECT k, v FROM ks.snap") == [(k, f"v{k}") for k in range(50)]
        # Only the table asked for: other tables' rows are not in the snapshot.
        assert rows(restored, "SELECT k, v FROM ks.other") == []
    finally:
        restored.cleanup()
    assert ok(server, "clearsnapshot", "-t", "before") == \
        "Requested clearing snapshot(s) for [all keyspaces] with snapshot name [before]\n"
    assert ok(server, "listsnapshots") == "Snapshot Details: \nThere are no snapshots\n"


def test_snapshot_under_concurrent_writes_is_consistent(server, session, ks):
    session.execute("CREATE TABLE ks.busy (k int PRIMARY KEY, v int)")
    ins = session.prepare("INSERT INTO ks.busy (k, v) VALUES (?, ?)")
    acked = []
    stop = threading.Event()

    def writer():
        k = 0
        while not stop.is_set():
            session.execute(ins, (k, k))
            acked.append(k)
            k += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        while len(acked) < 200:
            stop.wait(0.01)
        acked_before = len(acked)
        ok(server, "snapshot", "-t", "busy", "ks")
        acked_after = len(acked)
        while len(acked) < acked_after + 100:
            stop.wait(0.01)
    finally:
        stop.set()
        t.join()
    restored = Server(data_dir=restore(os.path.join(server.data_dir, "snapshots", "busy")))
    try:
        got = [k for (k, _) in rows(restored, "SELECT k, v FROM ks.busy")]
    finally:
        restored.cleanup()
    # One writer writes keys in order: a consistent snapshot holds exactly a prefix of them,
    # with every write acknowledged before the snapshot began, and none acknowledged after it
    # ended beyond what was in flight.
    assert got == list(range(len(got)))
    assert acked_before <= len(got) <= acked_after + 1
    ok(server, "clearsnapshot", "--all")


def test_admin_credentials_are_required_when_set():
    s = Server(yaml="admin_username: ops\nadmin_password: s3cret\n")
    try:
        rc, out, err = s.nodetool("version")
        assert rc == 1 and "SecurityException" in err
        rc, out, err = s.nodetool("version", creds=("-u", "ops", "-pw", "wrong"))
        assert rc == 1
        rc, out, err = s.nodetool("-u", "ops", "-pw", "s3cret", "version")
        assert (rc, out) == (0, "ReleaseVersion: 5.0.9\n")
        assert http(s.admin_port, "GET", "/metrics")[0] == 401
    finally:
        s.cleanup()


def test_admin_off_loopback_without_credentials_refuses_to_start():
    d = tempfile.mkdtemp(prefix="peregrine-admin-")
    cfg = os.path.join(d, "p.yaml")
    with open(cfg, "w") as f:
        f.write("admin_listen: 0.0.0.0:7199\n")
    r = subprocess.run([binary(), "serve", "--config", cfg, "--listen", f"127.0.0.1:{_free_port()}",
                        "--data-dir", os.path.join(d, "data")], capture_output=True, text=True, timeout=60)
    shutil.rmtree(d, ignore_errors=True)
    assert r.returncode != 0
    assert "never open off loopback without authentication" in r.stderr


def test_drain_stops_the_native_transport_last(server):
    # Last in the module: after drain the server takes no more clients until enablebinary.
    assert ok(server, "drain") == ""
    assert ok(server, "statusbinary") == "not running\n"
    assert ok(server, "enablebinary") == ""


def test_help_lists_the_commands_with_cassandras_descriptions():
    """`nodetool help` needs no server: the usage, then each command this nodetool answers with
    Cassandra 5.0.9's own description (read off its `nodetool help`), in its layout."""
    code, out, err = nodetool("help")
    assert code == 0, err
    assert out.startswith("usage: nodetool [(-h <host> | --host <host>)]"), out
    assert "The most commonly used nodetool commands are:\n" in out
    listed = re.findall(r"^    (\S+) +(.+)$", out, re.M)
    names = [n for n, _ in listed]
    for command in ["status", "info", "describecluster", "version", "flush", "compact",
                    "garbagecollect", "cleanup", "snapshot", "listsnapshots", "clearsnapshot",
                    "tablestats", "tablehistograms", "compactionstats", "drain", "enablebinary",
                    "disablebinary", "enableautocompaction", "disableautocompaction",
                    "getlogginglevels", "setlogginglevel", "refreshsizeestimates",
                    "getcompactionthroughput", "setcompactionthroughput", "stop"]:
        assert command in names, command
    assert names == sorted(names)
    assert dict(listed)["status"] == "Print cluster information (state, load, IDs, ...)"
    assert out.rstrip().endswith("See 'nodetool help <command>' for more information on a specific command.")
    code, out, _ = nodetool("help", "flush")
    assert (code, out.splitlines()) == (0, ["NAME", "        nodetool flush - Flush one or more tables"])
    code, out, _ = nodetool("help", "bogus")
    assert (code, out.strip()) == (0, "Unknown command bogus")
