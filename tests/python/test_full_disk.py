"""A full disk stops writes only while it is full (issue 14, `disk_failure_policy: stop`).

Its OWN peregrine (`commitlog_sync: batch`, 1 MiB memtables) keeps its data on a small tmpfs
mounted here, filled up by another file to a few MiB of headroom. Writes go on until one fails
for lack of space; then the node closes its client port (new connections are refused) and says
why in `nodetool statusbinary` / `nodetool info`, and keeps it closed while the disk stays full
(the store cannot flush what its journal holds). The other file goes, the store reopens, the
port opens again and the same driver session reconnects by itself, without a restart. Every
acknowledged write is there, before and after a restart.

Mounting needs root (CAP_SYS_ADMIN), as CI has; elsewhere the test is skipped, saying why.
"""

import os
import shutil
import subprocess
import tempfile
import time

import pytest

from cassandra.policies import ConstantReconnectionPolicy

from admin_support import http, nodetool
from test_disk_failure import Writes, all_logs, wait_for
from test_durability import Server, _find_peregrine, _free_port, _port_open, wait_for_session

HEADROOM = 6 * 1024 * 1024


@pytest.fixture
def small_disk():
    root = tempfile.mkdtemp(prefix="peregrine-fulldisk-")
    mnt = os.path.join(root, "mnt")
    os.makedirs(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    yield root, mnt
    subprocess.run(["umount", "-l", mnt], capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


def fill(mnt, leave):
    """A file taking all but `leave` bytes of the file system; returns its path."""
    path = os.path.join(mnt, "filler")
    st = os.statvfs(mnt)
    with open(path, "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))
    return path


def server_on(small_disk, config):
    """A started peregrine (`commitlog_sync: batch`) with its data on the small disk and an
    admin endpoint: (server, admin port)."""
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    root, mnt = small_disk
    admin = _free_port()
    server = Server(binary, root, sync="batch",
                    extra_config=f"{config}admin_listen: 127.0.0.1:{admin}\n")
    server.data = os.path.join(mnt, "data")
    server.start()
    return server, admin


def test_writes_stop_while_the_disk_is_full_and_resume_after(small_disk):
    server, admin = server_on(small_disk, "storage_memtable_bytes: 1048576\n")
    mnt = small_disk[1]
    try:
        cluster = server.cluster(reconnection_policy=ConstantReconnectionPolicy(0.5))
        session = wait_for_session(cluster)
        writes = Writes(session, "x" * 2000)
        filler = fill(mnt, HEADROOM)

        writes.until_one_fails(50000)
        assert writes.failures, "no write failed on a full disk"
        assert "storage" in writes.failures[0], writes.failures[0]

        # The port closes, and stays closed while the disk is full: new connections refused.
        wait_for(lambda: not _port_open("127.0.0.1", server.port), 10,
                 "the client port did not close")
        rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(admin), "statusbinary")
        assert (rc, out) == (0, "not running\n"), (rc, out, err)
        # `nodetool info` says why; the first failing write may see only fjall's "Poisoned",
        # the store's reopen attempts (from 100 ms on) add the cause they meet.
        last = []

        def info_says_why():
            rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(admin), "info")
            last[:] = [out]
            assert rc == 0, err
            assert "Native Transport active: false" in out, out
            why = [line for line in out.splitlines() if line.startswith("Native Transport down")]
            assert why, out
            return "No space left on device" in why[0]
        try:
            wait_for(info_says_why, 10, "nodetool info did not name the cause")
        except AssertionError as e:
            raise AssertionError(f"{e}: {last}\n{all_logs(server)[-3000:]}") from None
        still_full_until = time.time() + 3
        while time.time() < still_full_until:
            assert not _port_open("127.0.0.1", server.port), "the port opened with the disk full"
            assert not writes.one(), "a write was acknowledged with the disk full"
            time.sleep(0.1)

        os.remove(filler)
        writes.until_one_succeeds(60)  # the driver reconnected by itself
        writes.more(1000)  # and go on, through more flushes
        rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(admin), "statusbinary")
        assert (rc, out) == (0, "running\n"), (rc, out, err)
        lost = writes.lost()
        assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {lost[:5]}"
        writes.none_lost_after_a_restart(server)
        logs = all_logs(server)
        for line in ("No space left on device", "native transport stopped: storage failed",
                     "native transport started again: the store serves again"):
            assert line in logs, f"{line!r} not logged:\n{logs[-3000:]}"
    finally:
        server.kill()


def test_stop_commit_stops_writes_on_a_full_journal_and_serves_reads(small_disk):
    """`commit_failure_policy: stop_commit`: the journal write that meets a full disk stops
    writes only (the memtable is larger than the disk's headroom, so the journal fails
    first). The client port stays open and acknowledged rows are read; `nodetool info` and
    `/metrics` say writes are stopped and why; once space comes back writes resume by
    themselves, and nothing acknowledged is lost, before or after a restart."""
    server, admin = server_on(small_disk, "commit_failure_policy: stop_commit\n")
    mnt = small_disk[1]
    try:
        cluster = server.cluster(reconnection_policy=ConstantReconnectionPolicy(0.5))
        session = wait_for_session(cluster)
        writes = Writes(session, "x" * 2000)
        select = session.prepare("SELECT v FROM f.t WHERE k = ?")
        filler = fill(mnt, HEADROOM)

        writes.until_one_fails(50000)
        assert writes.failures, "no write failed on a full disk"
        first = writes.failures[0]
        assert "commit_failure_policy: stop_commit" in first, first
        assert "No space left on device" in first, first
        acked = writes.acknowledged
        assert len(acked) > 100, len(acked)

        # The port stays open; reads go on, writes stay refused while the disk is full.
        assert _port_open("127.0.0.1", server.port), "stop_commit closed the client port"
        for k in (acked[0], acked[len(acked) // 2], acked[-1]):
            assert session.execute(select, (k,)).one().v == writes.value, k
        assert not writes.one(), "a write was acknowledged with the journal's disk full"
        rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(admin), "info")
        assert rc == 0, err
        assert "Native Transport active: true" in out, out
        why = [line for line in out.splitlines() if line.startswith("Writes stopped")]
        assert why and "No space left on device" in why[0], out
        status, body = http(admin, "GET", "/metrics")
        assert status == 200
        assert "\nperegrine_storage_writes_up 0\n" in body, body[-2000:]

        os.remove(filler)
        writes.until_one_succeeds(60)  # by itself, the same session
        writes.more(1000)
        rc, out, err = nodetool("-h", "127.0.0.1", "-p", str(admin), "info")
        assert rc == 0 and "Writes stopped" not in out, out
        status, body = http(admin, "GET", "/metrics")
        assert "\nperegrine_storage_writes_up 1\n" in body, body[-2000:]
        lost = writes.lost()
        assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {lost[:5]}"
        writes.none_lost_after_a_restart(server)
        logs = all_logs(server)
        for line in ("writes stopped, reads go on (commit_failure_policy: stop_commit)",
                     "serving writes again"):
            assert line in logs, f"{line!r} not logged:\n{logs[-3000:]}"
        assert "native transport stopped" not in logs, logs[-3000:]
    finally:
        server.kill()
