"""A full disk stops writes only while it is full (issue 14, `disk_failure_policy: stop`).

Its OWN peregrine (`commitlog_sync: batch`, 1 MiB memtables) keeps its data on a small tmpfs
mounted here, filled up by another file to a few MiB of headroom. Writes go on until one fails
for lack of space; writes keep being tried for a while with the disk still full (the store
refuses them, or takes those that fit, and reopens itself); then the other file goes and writes
resume by themselves, without a restart. Every acknowledged write is there, before and after a
restart.

Mounting needs root (CAP_SYS_ADMIN), as CI has; elsewhere the test is skipped, saying why.
"""

import os
import shutil
import subprocess
import tempfile
import time

import pytest

from test_disk_failure import Writes
from test_durability import Server, _find_peregrine, wait_for_session

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


def test_writes_stop_while_the_disk_is_full_and_resume_after(small_disk):
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    root, mnt = small_disk
    server = Server(binary, root, sync="batch", extra_config="storage_memtable_bytes: 1048576\n")
    server.data = os.path.join(mnt, "data")
    server.start()
    try:
        cluster = server.cluster()
        session = wait_for_session(cluster)
        writes = Writes(session, "x" * 2000)
        filler = fill(mnt, HEADROOM)

        writes.until_one_fails(50000)
        assert writes.failures, "no write failed on a full disk"
        assert "storage" in writes.failures[0], writes.failures[0]

        # Still full: writes keep failing or fit in what is left; none is acknowledged and lost.
        still_full_until = time.time() + 3
        while time.time() < still_full_until:
            writes.one()

        os.remove(filler)
        writes.until_one_succeeds(60)
        writes.more(1000)  # and go on, through more flushes
        lost = writes.lost()
        assert not lost, f"{len(lost)} acknowledged writes lost, e.g. {lost[:5]}"
        cluster.shutdown()
        server.terminate()
        assert "No space left on device" in server.logs(), server.logs()[-3000:]

        server.start()
        cluster = server.cluster()
        session = wait_for_session(cluster)
        writes.session = session
        lost = writes.lost()
        assert not lost, f"{len(lost)} acknowledged writes lost after a restart, e.g. {lost[:5]}"
        cluster.shutdown()
        server.terminate()
    finally:
        server.kill()
