"""A damaged write-ahead journal is never silent (issue 14): each test runs its OWN peregrine
in `commitlog_sync: batch`, writes rows the driver sees acknowledged, kills it, damages the
journal, and starts it again.

- zeros or a flipped byte in the middle: the server refuses to start, naming the file, the offset
  and how many batches would be lost; with `journal_recovery: truncate` it starts, says what it
  dropped, and keeps every row written before the damage;
- a torn last write (the file cut inside its last batch): a normal start, nothing acknowledged lost.

Needs the peregrine binary (as test_durability.py).
"""

import os
import socket
import subprocess
import time

import pytest

from test_durability import KS_REPLICATION, server_factory, wait_for_session  # noqa: F401

ROWS = 400


def fill(server):
    cluster = server.cluster()
    session = wait_for_session(cluster)
    session.execute(f"CREATE KEYSPACE j WITH replication = {KS_REPLICATION}")
    session.execute("CREATE TABLE j.t (k int PRIMARY KEY, v text)")
    insert = session.prepare("INSERT INTO j.t (k, v) VALUES (?, ?)")
    for k in range(ROWS):
        session.execute(insert, (k, "x" * 200))
    cluster.shutdown()
    server.kill()


def journal(server):
    path = os.path.join(server.data, "0.jnl")
    with open(path, "rb") as f:
        data = bytearray(f.read())
    used = len(data.rstrip(b"\0"))
    return path, data, used


def start_fails(server):
    """Runs the server expecting it to refuse to start (a damaged journal or data file); its
    output. While it checks its files the client port must refuse connections: it opens only
    once the store is ready (as Cassandra's native port), so no client waits on a node that is
    not there yet."""
    p = subprocess.Popen(
        [server.binary, "serve", "--config", server.config, "--listen", f"127.0.0.1:{server.port}",
         "--data-dir", server.data],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    accepted = 0
    deadline = time.time() + 60
    while p.poll() is None and time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            accepted += 1
        except OSError:
            pass
        time.sleep(0.002)
    out = p.communicate(timeout=60)[0].decode(errors="replace")
    assert p.returncode != 0, "the server started on damaged files"
    assert accepted == 0, f"the client port accepted {accepted} connection(s) before the store was open"
    return out


def keys(server):
    cluster = server.cluster()
    session = wait_for_session(cluster)
    got = sorted(r.k for r in session.execute("SELECT k FROM j.t"))
    cluster.shutdown()
    return got


@pytest.mark.parametrize("damage", ["zeros", "flipped_byte"])
def test_damage_in_the_middle_refuses_then_truncate_keeps_what_came_before(server_factory, damage):
    server = server_factory(sync="batch")
    server.start()
    fill(server)
    path, data, used = journal(server)
    at = used // 2
    if damage == "zeros":
        data[at:at + 4096] = bytes(4096)
    else:
        # A byte of a row's value, where only the batch checksum can tell.
        at = data.index(b"x" * 100, at) + 50
        data[at] ^= 0x01
    with open(path, "wb") as f:
        f.write(data)

    out = start_fails(server)
    assert "0.jnl is damaged at offset" in out, out
    assert "journal_recovery: truncate" in out, out
    with open(path, "rb") as f:
        assert f.read() == bytes(data), "refusing to start changed the journal"

    with open(server.config, "a") as f:
        f.write("journal_recovery: truncate\n")
    server.start()
    got = keys(server)
    server.terminate()
    assert "dropped" in server.logs(), server.logs()[-2000:]
    # Rows are written in key order, one batch each: what survives is a prefix.
    assert 0 < len(got) < ROWS
    assert got == list(range(len(got)))


def test_a_torn_last_write_starts_normally(server_factory):
    server = server_factory(sync="batch")
    server.start()
    fill(server)
    path, data, used = journal(server)
    with open(path, "r+b") as f:
        f.truncate(used - 3)  # inside the last batch's end marker
    server.start()
    got = keys(server)
    server.terminate()
    assert "torn by a crash" in server.logs(), server.logs()[-2000:]
    # The last batch written may be the torn one: every row before it is there.
    assert got[:ROWS - 1] == list(range(ROWS - 1)), got[-5:]
