"""Conditional writes racing each other through the driver: compare-and-set counters advanced
by competing clients (a single UPDATE ... IF, and a conditional BATCH that also writes a static
column), and INSERT ... IF NOT EXISTS of the same keys by several clients. Each applied write
must have seen the value it conditioned on: every counter value is won by exactly one client
and the final value counts the wins; each key is inserted by exactly one client. Holds against
Cassandra 5.0.9 (Paxos) as against Peregrine (the partition's lock)."""

import threading

import pytest

CLIENTS = 3


def _run(threads):
    for t in threads:
        t.start()
    for t in threads:
        t.join()


@pytest.mark.parametrize("with_batch", [False, True], ids=["update", "batch"])
def test_compare_and_set_counters_never_lose_or_double_an_increment(
        make_cluster, session, ks, with_batch):
    session.execute("CREATE TABLE cas (k int, c int, v int, s int static, PRIMARY KEY (k, c))")
    keys, steps = 2, 40
    for k in range(keys):
        session.execute("INSERT INTO cas (k, c, v, s) VALUES (%s, 0, 0, 0)", (k,))
    wins, lost, errors = [], [], []
    lock = threading.Lock()

    def client(cid):
        try:
            sess = make_cluster().connect(ks)
            read = sess.prepare("SELECT v FROM cas WHERE k = ? AND c = 0")
            update = sess.prepare("UPDATE cas SET v = ? WHERE k = ? AND c = 0 IF v = ?")
            batch = sess.prepare(
                "BEGIN BATCH UPDATE cas SET v = ? WHERE k = ? AND c = 0 IF v = ?; "
                "UPDATE cas SET s = ? WHERE k = ? APPLY BATCH")
            done = 0
            while done < steps:
                k = done % keys
                seen = sess.execute(read, (k,)).one().v
                if with_batch:
                    rs = sess.execute(batch, (seen + 1, k, seen, seen + 1, k))
                else:
                    rs = sess.execute(update, (seen + 1, k, seen))
                if rs.was_applied:
                    with lock:
                        wins.append((k, seen + 1, cid))
                    done += 1
                else:
                    # Not applied: the row shows the value that beat this client's.
                    assert rs.one().v != seen
                    with lock:
                        lost.append(cid)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)

    _run([threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)])
    assert not errors, errors
    assert len(wins) == CLIENTS * steps
    print(f"{len(lost)} conditional writes lost a race")
    for k in range(keys):
        won = sorted(v for (key, v, _) in wins if key == k)
        # Each value from 1 to the final one was won once: no increment lost or doubled.
        assert won == list(range(1, len(won) + 1)), f"key {k}: {won}"
        row = session.execute("SELECT v, s FROM cas WHERE k = %s AND c = 0", (k,)).one()
        assert row.v == len(won)
        if with_batch:
            assert row.s == len(won)


def test_competing_inserts_if_not_exists_each_key_won_once(make_cluster, session, ks):
    session.execute("CREATE TABLE once (k int, c int, who int, PRIMARY KEY (k, c))")
    rows = 60
    winners, errors = [], []
    lock = threading.Lock()

    def client(cid):
        try:
            sess = make_cluster().connect(ks)
            ins = sess.prepare("INSERT INTO once (k, c, who) VALUES (?, ?, ?) IF NOT EXISTS")
            for i in range(rows):
                rs = sess.execute(ins, (i % 4, i, cid))
                if rs.was_applied:
                    with lock:
                        winners.append((i, cid))
                else:
                    assert rs.one().who != cid
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    _run([threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)])
    assert not errors, errors
    assert sorted(i for i, _ in winners) == list(range(rows)), "a key was won twice or never"
    stored = {r.c: r.who for r in session.execute("SELECT c, who FROM once")}
    assert stored == dict(winners)
