"""Damage to a data file (an SSTable) is never silent at start-up (issue 14): its OWN peregrine
writes rows through the driver with small memtables (so they reach table files), stops
cleanly, then one table file is damaged (zeros, a truncation, a flipped byte at several
positions). Start-up (`data_file_check: full`, the default) reads every table file against
the checksum recorded when it was written and refuses to start, naming the file, its table and
key range; the file is left as it was. With the file restored the server starts and every row
is there.

Needs the peregrine binary (as test_durability.py).
"""

import glob
import os

import pytest
from cassandra.concurrent import execute_concurrent_with_args

from cassandra.policies import ConstantReconnectionPolicy

from admin_support import http, nodetool
from test_disk_failure import wait_for
from test_durability import (KS_REPLICATION, _free_port, _port_open, server_factory,  # noqa: F401
                             wait_for_session)
from test_journal_damage import start_fails

ROWS = 4000


def fill(server):
    cluster = server.cluster()
    session = wait_for_session(cluster)
    session.execute(f"CREATE KEYSPACE d WITH replication = {KS_REPLICATION}")
    session.execute("CREATE TABLE d.t (k int PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO d.t (k, v) VALUES (?, ?)")
    execute_concurrent_with_args(session, insert, [(k, f"{k:06d}" + "x" * 500) for k in range(ROWS)],
                                 concurrency=32, raise_on_first_error=True)
    cluster.shutdown()
    server.terminate()


def largest_table(server):
    files = [f for f in glob.glob(os.path.join(server.data, "keyspaces", "*", "tables", "*"))
             if os.path.isfile(f)]
    assert files, f"no table file under {server.data}"
    return max(files, key=os.path.getsize)


def damaged(data, how):
    n = len(data)
    out = bytearray(data)
    if how == "zeros":
        out[n // 2:n // 2 + 512] = bytes(512)
    elif how == "truncated":
        out = out[:n - n // 3]
    else:
        at = {"flip_first": 0, "flip_third": n // 3, "flip_two_thirds": 2 * n // 3,
              "flip_last": n - 1}[how]
        out[at] ^= 0x01
    return bytes(out)


def filled_then_damaged(server_factory, how):
    """A stopped server with ROWS rows in table files, its largest table file damaged `how`:
    (server, that file's path, its good bytes, its damaged bytes)."""
    server = server_factory(sync="batch")
    with open(server.config, "a") as f:
        f.write("storage_memtable_bytes: 1048576\n")
    server.start()
    fill(server)
    path = largest_table(server)
    with open(path, "rb") as f:
        good = f.read()
    bad = damaged(good, how)
    with open(path, "wb") as f:
        f.write(bad)
    return server, path, good, bad


@pytest.mark.parametrize("how", ["zeros", "truncated", "flip_first", "flip_third",
                                 "flip_two_thirds", "flip_last"])
def test_a_damaged_data_file_refuses_to_start_and_says_which(server_factory, how):
    server, path, good, bad = filled_then_damaged(server_factory, how)

    out = start_fails(server)
    assert "damaged data file" in out and "would be lost" in out, out[-3000:]
    assert path in out, f"the refusal does not name {path}:\n{out[-3000:]}"
    with open(path, "rb") as f:
        assert f.read() == bad, "refusing to start changed the data file"

    # The documented way out: restore the file (from a snapshot or backup); then it starts and
    # every row is there.
    with open(path, "wb") as f:
        f.write(good)
    server.start()
    cluster = server.cluster()
    session = wait_for_session(cluster)
    got = sorted(r.k for r in session.execute("SELECT k FROM d.t"))
    cluster.shutdown()
    server.terminate()
    assert got == list(range(ROWS))


def storage_up(admin):
    status, body = http(admin, "GET", "/metrics")
    assert status == 200, body
    line = [x for x in body.splitlines() if x.startswith("peregrine_storage_up ")]
    assert line, body[-2000:]
    return line[0].split()[1] == "1"


@pytest.mark.parametrize("policy", ["stop", "stop_paranoid"])
def test_damage_met_by_a_read_under_each_disk_failure_policy(server_factory, policy):
    """Started with `data_file_check: off`, a damaged table file shows only when a read touches
    it: that read fails (a server error naming the damage). Under `stop` that is all, the node
    serves on; under `stop_paranoid` the read takes the node down (client port closed) and it
    stays down, naming the damaged file, until the file is restored; then it serves again
    by itself with every row there."""
    server, path, good, _ = filled_then_damaged(server_factory, "flip_third")
    admin = _free_port()
    with open(server.config, "a") as f:
        f.write(f"data_file_check: off\ndisk_failure_policy: {policy}\n"
                f"admin_listen: 127.0.0.1:{admin}\n")
    server.start()
    cluster = server.cluster(reconnection_policy=ConstantReconnectionPolicy(0.5))
    session = wait_for_session(cluster)
    with pytest.raises(Exception) as failed:
        list(session.execute("SELECT k FROM d.t"))
    assert "storage" in str(failed.value), failed.value
    if policy == "stop":
        assert storage_up(admin), "disk_failure_policy: stop took the store down on a read"
        assert _port_open("127.0.0.1", server.port)
        cluster.shutdown()
        server.terminate()
        return

    # stop_paranoid: down at once (before the failing read was answered), the port closes.
    assert not storage_up(admin), "stop_paranoid left the store up after damage"
    wait_for(lambda: not _port_open("127.0.0.1", server.port), 10, "the client port did not close")

    def says_which():
        rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(admin), "info")
        assert rc == 0, err
        return "damaged data file" in out and path in out
    wait_for(says_which, 20, "nodetool info did not name the damaged file")
    assert not _port_open("127.0.0.1", server.port), "the port opened with the file damaged"

    # Restored (atomically, the store retries meanwhile): it serves again by itself.
    tmp = path + ".restore"
    with open(tmp, "wb") as f:
        f.write(good)
    os.replace(tmp, path)
    wait_for(lambda: _port_open("127.0.0.1", server.port), 60, "the port did not open again")
    wait_for(lambda: storage_up(admin), 10, "the store did not come back")
    got = []

    def reads_all():
        try:
            got[:] = sorted(r.k for r in session.execute("SELECT k FROM d.t"))
            return True
        except Exception:
            return False
    wait_for(reads_all, 30, "the driver did not reconnect")
    cluster.shutdown()
    server.terminate()
    assert got == list(range(ROWS))
