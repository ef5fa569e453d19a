"""Cassandra 5.0.9's client warning on unlogged batches (the WARNING flag the driver exposes as
`ResponseFuture.warnings`): an UNLOGGED or COUNTER batch writing more than 10 distinct
partitions (`unlogged_batch_across_partitions_warn_threshold`) is warned about, naming the
partition count and the tables; a partition key shared by two tables counts once. LOGGED and
conditional batches and batches of up to 10 partitions are not. Every expected text here was
read from Cassandra 5.0.9 (run this file with CQL_PORT pointing at one to check)."""

import pytest
from cassandra.query import BatchStatement, BatchType

TAIL = ". You should use a logged batch for atomicity, or asynchronous writes for performance."


def batch(kind, statements):
    return f"BEGIN {kind}BATCH " + " ".join(s + ";" for s in statements) + " APPLY BATCH"


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_unlogged_batch_warning_as_cassandra(make_cluster, protocol_version):
    # A fixed keyspace name: the order of two tables in the text follows the hash of
    # `ks.table`, so it is fixed only with the names.
    ks = "bwarn"
    s = make_cluster(protocol_version=protocol_version).connect()
    s.execute(f"DROP KEYSPACE IF EXISTS {ks}")
    s.execute(f"CREATE KEYSPACE {ks} WITH replication = "
              "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.set_keyspace(ks)
    s.execute("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))")
    s.execute("CREATE TABLE u (k int PRIMARY KEY, v text)")
    s.execute('CREATE TABLE "Odd" (k int PRIMARY KEY, v text)')
    s.execute("CREATE TABLE n (k int PRIMARY KEY, c counter)")

    def warnings(query, params=None):
        f = s.execute_async(query, params)
        f.result()
        return f.warnings

    def t_rows(keys):
        return [f"INSERT INTO t (k, c, v) VALUES ({k}, 1, 'x')" for k in keys]

    assert warnings(batch("UNLOGGED ", t_rows(range(11)))) == [
        f"Unlogged batch covering 11 partitions detected against table [{ks}.t]" + TAIL]
    assert warnings(batch("UNLOGGED ", t_rows(range(10)))) is None
    assert warnings(batch("", t_rows(range(11)))) is None  # LOGGED
    # One statement with IN on the key covers 11 partitions.
    in11 = "UPDATE t SET v = 'x' WHERE k IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11) AND c = 1"
    assert warnings(batch("UNLOGGED ", [in11])) == [
        f"Unlogged batch covering 11 partitions detected against table [{ks}.t]" + TAIL]
    # Keys 3..5 are in both tables: 9 distinct partitions, no warning.
    shared = t_rows(range(6)) + [f"INSERT INTO u (k, v) VALUES ({k}, 'x')" for k in range(3, 9)]
    assert warnings(batch("UNLOGGED ", shared)) is None
    # Two tables, in the order Cassandra's HashSet prints them, quoted where CQL needs it.
    odd = t_rows(range(6)) + [f'INSERT INTO "Odd" (k, v) VALUES ({k}, \'x\')' for k in range(6, 12)]
    assert warnings(batch("UNLOGGED ", odd)) == [
        f'Unlogged batch covering 12 partitions detected against tables [{ks}.t, {ks}."Odd"]' + TAIL]
    assert warnings(batch("UNLOGGED ", [in11, "INSERT INTO u (k, v) VALUES (1, 'x')"])) == [
        f"Unlogged batch covering 11 partitions detected against tables [{ks}.u, {ks}.t]" + TAIL]
    # A counter batch is not logged either.
    counters = [f"UPDATE n SET c = c + 1 WHERE k = {k}" for k in range(11)]
    assert warnings(batch("COUNTER ", counters)) == [
        f"Unlogged batch covering 11 partitions detected against table [{ks}.n]" + TAIL]

    # The protocol's BATCH message with prepared statements says the same.
    insert = s.prepare("INSERT INTO t (k, c, v) VALUES (?, 1, 'y')")
    b = BatchStatement(batch_type=BatchType.UNLOGGED)
    for k in range(20, 32):
        b.add(insert, (k,))
    assert warnings(b) == [
        f"Unlogged batch covering 12 partitions detected against table [{ks}.t]" + TAIL]
    logged = BatchStatement(batch_type=BatchType.LOGGED)
    for k in range(20, 32):
        logged.add(insert, (k,))
    assert warnings(logged) is None
    assert s.execute("SELECT count(*) FROM t WHERE k = 31").one()[0] == 1
    s.execute(f"DROP KEYSPACE {ks}")
