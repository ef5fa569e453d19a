"""Power loss keeps what the store fsynced, and nothing else (issue 14): `commitlog_sync: batch`
loses no acknowledged write, `periodic` loses only writes acknowledged in the last
`commitlog_sync_period` (+ a slack, below), and what survives opens cleanly.

How a power loss is made: its OWN peregrine runs with an LD_PRELOAD shim
(fixtures/fsync_shadow.c, built here with `cc`) that wraps fsync(2)/fdatasync(2) and, at each
call, copies what that call makes durable into a shadow directory: a regular file's whole
content, a directory's entries (name -> inode). After `kill -9`, the image "as the disk holds it
after the power came back" is rebuilt from the shadow alone: each directory as it was when it
was last fsynced, each file it then named as that file was when last fsynced (an empty file if
never: its name was durable, its data not). One exception: a listed name whose inode number
was later reused by a file (or directory) that was fsynced is left out, its deletion being
durable by then (a journaling filesystem commits metadata in order; files are told apart by
inode and birth time, as the shim records them). peregrine restarts on that image (with the
shim again, the image counting as durable), and every acknowledged row is checked, value
included.

Why this way: it is the simplest sound model that needs nothing installed (a C compiler, which
every CI machine here has for Rust's linker) and no privilege. A FUSE filesystem would model
the same thing from below but needs libfuse/fusermount (absent here) or a Go/Rust FUSE
daemon built in setup; dm-log-writes needs kernel modules a container cannot load. The shim
records durability points rather than writes, so no write path (write, pwrite, writev,
copy_file_range) can be missed: a write is in the image only if an fsync of its file came after
it, and of its directory entry only if an fsync of the directory came after that.

Crash points, over several cycles on the same data (each restart is the next cycle's start;
small memtables make flushes, journal rotations and compactions frequent): in the middle of
concurrent writes; right after `nodetool flush` (a table being written, the version and journal
being switched); right after `nodetool compact`. Some cycles also keep a torn prefix of the
unsynced bytes (below). At the end a clean stop (SIGTERM) must leave everything durable.

Also modelled, on "torn" cycles: the kernel had begun writing back unsynced data in file order
when the power went: each file keeps, beyond its fsynced content, the live bytes up to a random
512-byte boundary inside the region that differs (a torn journal tail, a partial table file).

Writeback out of file order, on "scrambled" cycles (their own tests, both modes): every
4 KiB block of a file's unsynced bytes is independently written back or left as it was durably
(zeros in a journal's preallocated tail), the last one written back and at least one before it
not: a later unsynced journal page on disk, an earlier one not.
The journal's sync points let the start-up check tell that hole (an unsynced tail: cut, the
batches after it counted in the log, the node starts) from damage to synced batches, which is
still refused: shown by zeroing bytes of the journal that were fsynced before a sync point.

Not modelled: a disk that lies about flushes or tears a sector; metadata that ext4 happens to
make durable without a directory fsync (the model is stricter than ext4, so it can only lose
more); sync(2), syncfs(2), msync(2) and O_SYNC writes (unused by peregrine and fjall; they too
could only make the image lose more); a write racing an fsync of the same file from another
thread counts as synced if it lands before the shim's copy (microseconds).

Debugging: POWERLOSS_SEED=<n> replays a run's random choices (its seed is printed with -s);
POWERLOSS_KEEP=1 keeps the data directories, shadows and logs.

`periodic` bound: a lost write was acknowledged at most `commitlog_sync_period + SLACK` before
the kill. SLACK (1 s) covers the syncer's 50 ms wake-up, the fsync itself, and scheduling on a
loaded two-core machine; the largest loss age seen is printed (pytest -s).
"""

import ctypes
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time

import pytest

from admin_support import nodetool
from test_durability import (KS_REPLICATION, Server, _find_peregrine, _free_port,
                             wait_for_session)

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM_SOURCE = os.path.join(HERE, "fixtures", "fsync_shadow.c")
PERIOD = 1.0
SLACK = 1.0
WRITERS = 4
VALUE_PAD = "x" * 1000
# Small memtables make flushes (each rotates and syncs the journal) frequent. In `periodic`
# mode a flush every few hundred milliseconds would hide the period itself, so there they are
# larger: losses then reach back most of the period (0.9 s seen with PERIOD 1 s).
MEMTABLE = {"batch": 1 << 20, "periodic": 4 << 20}


@pytest.fixture(scope="module")
def shim():
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("needs a C compiler (cc) to build the fsync shim")
    out_dir = tempfile.mkdtemp(prefix="peregrine-fsync-shim-")
    lib = os.path.join(out_dir, "fsync_shadow.so")
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib, SHIM_SOURCE, "-ldl", "-lpthread"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(out_dir, ignore_errors=True)
        pytest.skip(f"cannot build the fsync shim: {r.stderr.strip()[-500:]}")
    yield lib
    shutil.rmtree(out_dir, ignore_errors=True)


# ------------------------------------------------------------------ the shadow and the image

def new_shadow(path):
    os.makedirs(os.path.join(path, "files"))
    os.makedirs(os.path.join(path, "dirs"))
    return path


def write_sparse(path, data):
    """Writes `data` to a new file, leaving 64 KiB runs of zeros as holes."""
    with open(path, "wb") as f:
        f.truncate(len(data))
        step = 1 << 16
        zero = bytes(step)
        for at in range(0, len(data), step):
            chunk = data[at:at + step]
            if chunk != zero[:len(chunk)]:
                f.seek(at)
                f.write(chunk)


_libc = ctypes.CDLL(None, use_errno=True)
_STATX_BTIME, _AT_SYMLINK_NOFOLLOW = 0x800, 0x100


def identity(path):
    """"<inode>-<birth>": how the shim names a file or directory (fixtures/fsync_shadow.c).
    The birth time (statx; 0 where the filesystem keeps none) tells apart two files that had
    the same inode number, one deleted before the other was created."""
    buf = ctypes.create_string_buffer(256)  # struct statx
    if _libc.statx(-100, os.fsencode(path), _AT_SYMLINK_NOFOLLOW, _STATX_BTIME, buf) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), path)
    mask, = struct.unpack_from("<I", buf, 0)
    ino, = struct.unpack_from("<Q", buf, 32)
    sec, nsec = struct.unpack_from("<qI", buf, 80)  # stx_btime
    return f"{ino}-{sec * 1_000_000_000 + nsec if mask & _STATX_BTIME else 0}"


def seed(shadow, root):
    """Records everything under `root` as durable (an image after the power came back)."""
    for dirpath, dirnames, filenames in os.walk(root):
        lines = []
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            kind, ident = "d" if name in dirnames else "f", identity(path)
            lines.append(f"{kind} {ident} {name}\n")
            if kind == "f":
                with open(path, "rb") as f:
                    write_sparse(os.path.join(shadow, "files", ident), f.read())
        with open(os.path.join(shadow, "dirs", identity(dirpath)), "w") as f:
            f.writelines(lines)


def live_files(root):
    """identity -> path of every file under `root` as the page cache holds it (after kill -9)."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            p = os.path.join(dirpath, name)
            out[identity(p)] = p
    return out


def latest_births(shadow):
    """inode -> the latest birth time the shadow holds a record of (files and directories)."""
    latest = {}
    for kind in ("files", "dirs"):
        for record in os.listdir(os.path.join(shadow, kind)):
            if not record.endswith(".tmp"):
                ino, birth = map(int, record.split("-"))
                latest[ino] = max(latest.get(ino, 0), birth)
    return latest


def reborn(latest, child):
    """Whether the inode of `child` ("<inode>-<birth>") was reused by a file (or directory) born
    later and fsynced. Then `child` was deleted first, and that deletion is durable: a
    journaling filesystem commits metadata changes in order, so the fsync that made the new
    file durable committed the deletion too (the name a stale listing holds would not survive
    a power loss)."""
    ino, birth = map(int, child.split("-"))
    return latest.get(ino, 0) > birth


def torn(durable, live, rng):
    """`durable` with the live bytes written back in file order up to a random 512-byte
    boundary inside the region where they differ (and the file grown as far as that)."""
    n = max(len(durable), len(live))
    a, b = durable.ljust(n, b"\0"), live.ljust(n, b"\0")
    first = next((i for i in range(0, n, 4096) if a[i:i + 4096] != b[i:i + 4096]), None)
    if first is None:
        return durable, None, None
    last = max(i for i in range(first, n, 4096) if a[i:i + 4096] != b[i:i + 4096])
    cut = rng.randrange(first, min(n, last + 4096) + 1) // 512 * 512
    out = b[:cut] + a[cut:]
    return out[:max(len(durable), min(cut, len(live)))], first, cut


def scrambled(durable, live, rng):
    """`durable` with its unsynced 4 KiB blocks (those differing from `live`) written back out
    of order: each is written back or left as it was durably (zeros where nothing was, as in a
    journal's preallocated tail), at random; when there are two or more, the last is written
    back and an earlier one not, so a hole precedes written-back bytes. (A block is never
    zeroed where it held durable bytes: a page is written whole or not at all.)
    Returns (bytes, number of blocks differing, blocks lost before the last kept one)."""
    n = max(len(durable), len(live))
    a, b = durable.ljust(n, b"\0"), live.ljust(n, b"\0")
    blocks = [i for i in range(0, n, 4096) if a[i:i + 4096] != b[i:i + 4096]]
    if not blocks:
        return durable, 0, 0
    kept = [rng.random() < 0.5 for _ in blocks]
    if len(blocks) >= 2:
        kept[-1] = True
        if all(kept[:-1]):
            kept[rng.randrange(len(blocks) - 1)] = False
    out = bytearray(a)
    for i, k in zip(blocks, kept):
        if k:
            out[i:i + 4096] = b[i:i + 4096]
    last_kept = max((j for j, k in enumerate(kept) if k), default=-1)
    lost_before = sum(1 for k in kept[:last_kept] if not k)
    return bytes(out[:max(len(durable), len(live))]), len(blocks), lost_before


def scrambling(rng, holes):
    """An `alter` for build_image: every file's unsynced blocks written back out of order.
    Journals with a hole before written-back bytes are counted in `holes`."""
    def alter(name, durable, live):
        kept, n, lost_before = scrambled(durable, live, rng)
        if n == 0:
            return durable, None
        if name.endswith(".jnl") and lost_before:
            holes.append(name)
        return kept, f"{name}: {n} unsynced block(s), {lost_before} lost before a kept one"
    return alter


def tearing(rng):
    """An `alter` for build_image: half the files keep a torn prefix of their unsynced bytes."""
    def alter(name, durable, live):
        if rng.random() >= 0.5:
            return durable, None
        kept, first, cut = torn(durable, live, rng)
        if kept == durable:
            return durable, None
        return kept, f"{name}: unsynced from {first}, written back up to {cut}"
    return alter


def build_image(shadow, root, live_root, out, alter=None):
    """The directory tree a power loss leaves: see the module docstring. `alter(name, durable
    bytes, live bytes)` may change what a file keeps, answering (bytes, note or None). Returns
    the notes, for messages."""
    live = live_files(live_root) if alter else {}
    notes = []
    latest = latest_births(shadow)

    def build(ino, path):
        os.makedirs(path, exist_ok=True)
        listing = os.path.join(shadow, "dirs", ino)
        if not os.path.exists(listing):
            return
        for line in open(listing):
            kind, child, name = line.rstrip("\n").split(" ", 2)
            target = os.path.join(path, name)
            if reborn(latest, child):
                notes.append(f"{os.path.relpath(target, out)}: deleted, its inode reused")
                continue
            if kind == "d":
                build(child, target)
                continue
            durable_path = os.path.join(shadow, "files", child)
            data = open(durable_path, "rb").read() if os.path.exists(durable_path) else b""
            if alter and child in live:
                data, note = alter(os.path.relpath(target, out), data,
                                   open(live[child], "rb").read())
                if note:
                    notes.append(note)
            write_sparse(target, data)

    build(root, out)
    return notes


# ------------------------------------------------------------------ the node and the writers

class Node:
    """peregrine under the shim, restarted on a fresh power-loss image each cycle."""

    def __init__(self, binary, shim, root, sync):
        self.shim, self.root = shim, root
        self.admin = _free_port()
        self.server = Server(binary, root, sync=sync, extra_config=(
            f"commitlog_sync_period: {int(PERIOD * 1000)}ms\n"
            f"storage_memtable_bytes: {MEMTABLE[sync]}\n"
            f"admin_listen: 127.0.0.1:{self.admin}\n"))
        self.generation = 0
        self.shadow = None

    def start(self, data):
        """Starts on `data` (which counts as durable as it is)."""
        self.generation += 1
        self.shadow = new_shadow(os.path.join(self.root, f"shadow{self.generation}"))
        os.makedirs(data, exist_ok=True)
        seed(self.shadow, data)
        self.server.data = data
        saved = {k: os.environ.get(k) for k in ("LD_PRELOAD", "FSYNC_SHADOW")}
        os.environ["LD_PRELOAD"], os.environ["FSYNC_SHADOW"] = self.shim, self.shadow
        try:
            self.server.start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def power_loss(self, alter=None):
        """kill -9, then the image the disk would hold: a new data directory."""
        self.server.kill()
        image = os.path.join(self.root, f"data{self.generation + 1}")
        notes = build_image(self.shadow, identity(self.server.data), self.server.data,
                            image, alter)
        return image, notes


class Writers:
    """Concurrent inserts of numbered rows; remembers when each was acknowledged."""

    def __init__(self):
        self.acked = {}  # k -> monotonic time the acknowledgement arrived
        self.attempted = set()
        self.next_k = 0
        self.lock = threading.Lock()

    def run(self, session, stop):
        insert = session.prepare("INSERT INTO f.t (k, v) VALUES (?, ?)")

        def loop():
            while not stop.is_set():
                with self.lock:
                    k, self.next_k = self.next_k, self.next_k + 1
                    self.attempted.add(k)
                try:
                    session.execute(insert, (k, f"{k}:{VALUE_PAD}"))
                except Exception:
                    return  # the node is gone
                t = time.monotonic()
                with self.lock:
                    self.acked[k] = t

        threads = [threading.Thread(target=loop, daemon=True) for _ in range(WRITERS)]
        for t in threads:
            t.start()
        return threads


def check(session, writers, killed_at, sync, expected_gone, log):
    """Every acknowledged row is there with its value (batch), or was acknowledged within
    the last period + slack before the kill (periodic). Returns the newly lost keys."""
    rows = {r.k: r.v for r in session.execute("SELECT k, v FROM f.t")}
    stray = [k for k in rows if k not in writers.attempted]
    assert not stray, f"rows never written: {stray[:5]}"
    bad = [k for k, v in rows.items() if v != f"{k}:{VALUE_PAD}"]
    assert not bad, f"rows with a wrong value: {bad[:5]}"
    lost = {k for k in writers.acked if k not in rows and k not in expected_gone}
    if sync == "batch":
        assert not lost, (f"{len(lost)} acknowledged writes lost, e.g. {sorted(lost)[:5]}\n"
                          + "\n".join(log))
    else:
        ages = sorted(killed_at - writers.acked[k] for k in lost)
        log.append(f"lost {len(lost)} acknowledged writes, oldest acknowledged "
                   f"{ages[-1] if ages else 0:.3f}s before the kill")
        too_old = [a for a in ages if a > PERIOD + SLACK]
        assert not too_old, (f"{len(too_old)} writes acknowledged more than {PERIOD}s + "
                             f"{SLACK}s before the power loss are lost (oldest "
                             f"{max(too_old):.2f}s)\n" + "\n".join(log))
    return lost


CYCLES = [  # (what happens just before the power goes, keep torn unsynced bytes)
    ("writes", False),
    ("flush", True),
    ("writes", True),
    ("compact", False),
    ("flush", False),
]


CUT = re.compile(r"is damaged at offset (\d+) .*?; (\d+) later batch\(es\) holding (\d+) write")


def run_cycles(shim, sync, seed_value, scramble=False):
    """The cycles above (`scramble`: each power loss writes the unsynced blocks back out of
    order instead). Returns, per restart, the journal cuts its log reported:
    (offset, later batches, later writes)."""
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    rng = random.Random(seed_value)
    root = tempfile.mkdtemp(prefix=f"peregrine-powerloss-{sync}-")
    node = Node(binary, shim, root, sync)
    log = [f"seed {seed_value}, {sync}{', scrambled' if scramble else ''}"]
    cuts, holes = [], []
    ok = False
    try:
        node.start(os.path.join(root, "data1"))
        assert os.listdir(os.path.join(node.shadow, "dirs")), \
            "the fsync shim recorded nothing: is the binary linked statically?"
        cluster = node.server.cluster()
        session = wait_for_session(cluster)
        session.execute(f"CREATE KEYSPACE f WITH replication = {KS_REPLICATION}")
        session.execute("CREATE TABLE f.t (k int PRIMARY KEY, v text)")
        writers, gone = Writers(), set()
        for i, (point, keep_torn) in enumerate(CYCLES):
            stop = threading.Event()
            threads = writers.run(session, stop)
            # The first cycle outlives a sync period, so the schema is durable in either mode.
            time.sleep((PERIOD + SLACK if i == 0 else 0) + rng.uniform(0.5, 1.5))
            if point != "writes":
                rc = [None]
                tool = threading.Thread(target=lambda: rc.__setitem__(0, nodetool(
                    "-h", "127.0.0.1", "-p", str(node.admin), point, "f")), daemon=True)
                tool.start()
                time.sleep(rng.uniform(0.0, 0.3))
            killed_at = time.monotonic()
            alter = scrambling(rng, holes) if scramble else tearing(rng) if keep_torn else None
            image, notes = node.power_loss(alter)
            stop.set()
            for t in threads:
                t.join(timeout=30)
            cluster.shutdown()
            log.append(f"cycle {i} ({point}{', torn' if keep_torn else ''}): "
                       f"{len(writers.acked)} acknowledged so far; " + "; ".join(notes))
            node.start(image)
            cluster = node.server.cluster()
            session = wait_for_session(cluster)
            gone |= check(session, writers, killed_at, sync, gone, log)
            # What the start said of the journal (a torn tail cut off), for the record.
            started = open(os.path.join(root, f"peregrine.{node.server.starts}.log"),
                           errors="replace").read()
            said = [line[line.find("write-ahead journal"):]
                    for line in started.splitlines() if "write-ahead journal" in line]
            log.extend("  " + line for line in said)
            cuts.append([tuple(int(x) for x in m.groups()) for m in map(CUT.search, said) if m])
        # A clean stop leaves everything durable: power lost right after it loses nothing.
        stop = threading.Event()
        threads = writers.run(session, stop)
        time.sleep(0.5)
        stop.set()
        for t in threads:
            t.join(timeout=30)
        cluster.shutdown()
        node.server.terminate()
        image = os.path.join(root, "after-clean-stop")
        build_image(node.shadow, identity(node.server.data), node.server.data, image)
        node.start(image)
        cluster = node.server.cluster()
        session = wait_for_session(cluster)
        rows = {r.k for r in session.execute("SELECT k FROM f.t")}
        lost = [k for k in writers.acked if k not in rows and k not in gone]
        assert not lost, f"{len(lost)} writes lost by a power loss after a clean stop"
        cluster.shutdown()
        node.server.terminate()
        log.append(f"journals with a hole before written-back bytes: {len(holes)}")
        print("\n".join(log))
        ok = True
        return cuts
    finally:
        node.server.kill()
        if ok and not os.environ.get("POWERLOSS_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept {root}\n{node.server.logs()}")


def test_batch_loses_no_acknowledged_write(shim):
    run_cycles(shim, "batch", int(os.environ.get("POWERLOSS_SEED", random.randrange(1 << 30))))


def test_periodic_loses_at_most_the_sync_period(shim):
    run_cycles(shim, "periodic", int(os.environ.get("POWERLOSS_SEED", random.randrange(1 << 30))))


@pytest.mark.parametrize("sync", ["batch", "periodic"])
def test_out_of_order_writeback_starts_and_keeps_what_was_acknowledged(shim, sync):
    """Each power loss writes the unsynced blocks back out of order (a hole in the journal's
    unsynced tail with later batches on disk): the node starts every time (it used to refuse),
    `batch` loses no acknowledged write, `periodic` only writes of the last period; in
    `periodic` mode at least one start cut a hole with intact batches after it."""
    cuts = run_cycles(shim, sync, int(os.environ.get("POWERLOSS_SEED", random.randrange(1 << 30))),
                      scramble=True)
    if sync == "periodic":
        assert any(later > 0 for cycle in cuts for _, later, _ in cycle), \
            f"no cycle had a hole with intact batches after it: {cuts}"


def newest_journal(data):
    return max((f for f in os.listdir(data) if f.endswith(".jnl")),
               key=lambda f: int(f[:-len(".jnl")]))


@pytest.mark.parametrize("sync", ["batch", "periodic"])
def test_damage_to_synced_journal_bytes_is_still_refused(shim, sync):
    """Real damage: bytes of the journal fsynced before later sync points (in the shadow, so
    certainly durable) zeroed after a power loss. The node refuses to start, naming the journal
    and the offset and saying the bytes were fsynced; `journal_recovery: truncate` starts it."""
    binary = _find_peregrine()
    if binary is None:
        pytest.skip("needs the peregrine binary")
    root = tempfile.mkdtemp(prefix=f"peregrine-powerloss-synced-{sync}-")
    node = Node(binary, shim, root, sync)
    ok = False
    try:
        node.start(os.path.join(root, "data1"))
        cluster = node.server.cluster()
        session = wait_for_session(cluster)
        session.execute(f"CREATE KEYSPACE f WITH replication = {KS_REPLICATION}")
        session.execute("CREATE TABLE f.t (k int PRIMARY KEY, v text)")
        writers, stop = Writers(), threading.Event()
        threads = writers.run(session, stop)
        # Three sync periods of writes: sync points are durable in the middle of the journal.
        deadline = time.monotonic() + 3 * PERIOD + SLACK
        while time.monotonic() < deadline:
            time.sleep(0.1)
        image, _ = node.power_loss()
        stop.set()
        for t in threads:
            t.join(timeout=30)
        cluster.shutdown()
        name = newest_journal(image)
        path = os.path.join(image, name)
        data = bytearray(open(path, "rb").read())
        used = len(data.rstrip(b"\0"))
        assert used > 64 << 10, f"{name} holds only {used} durable bytes"
        at = used // 3
        data[at:at + 512] = bytes(512)
        with open(path, "wb") as f:
            f.write(data)

        r = subprocess.run([binary, "serve", "--config", node.server.config, "--listen",
                            f"127.0.0.1:{_free_port()}", "--data-dir", image],
                           capture_output=True, text=True, timeout=120)
        out = r.stdout + r.stderr
        assert r.returncode != 0, f"started on a journal damaged in synced bytes\n{out[-2000:]}"
        assert f"{name} is damaged at offset" in out and "were fsynced" in out, out[-2000:]
        assert "journal_recovery: truncate" in out, out[-2000:]
        assert open(path, "rb").read() == bytes(data), "refusing to start changed the journal"

        with open(node.server.config, "a") as f:
            f.write("journal_recovery: truncate\n")
        node.start(image)
        cluster = node.server.cluster()
        session = wait_for_session(cluster)
        rows = session.execute("SELECT k FROM f.t").all()
        assert rows, "nothing survived before the damage"
        logs = open(os.path.join(root, f"peregrine.{node.server.starts}.log"),
                    errors="replace").read()
        assert "as `journal_recovery: truncate` asks" in logs, logs[-2000:]
        print(f"{sync}: refused at offset {at} of {name}; {len(rows)} rows kept after truncating")
        cluster.shutdown()
        node.server.terminate()
        ok = True
    finally:
        node.server.kill()
        if ok and not os.environ.get("POWERLOSS_KEEP"):
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept {root}\n{node.server.logs()}")
