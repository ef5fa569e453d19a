#!/usr/bin/env python3
"""Generated differential test: random schemas and statements, Cassandra (A) vs Peregrine (B).

    PY=~/.cache/peregrine/venv/bin/python
    # CI: fixed seed, bounded count (deterministic: same seed -> same statements); about 40 s
    $PY tests/differential/generate.py --a 127.0.0.1:9342 --b 127.0.0.1:9343 --seed 1 --count 1500
    # offline exploration: a random seed (printed), more statements, all examples
    $PY tests/differential/generate.py --a ... --b ... --seed random --count 5000 --examples 5
    # replay one seed and print every statement with both answers
    $PY tests/differential/generate.py --a ... --b ... --seed 7 --count 50 -v

    # materialized views (both sides with materialized_views_enabled: true; Cassandra from
    # `CASSANDRA_MATERIALIZED_VIEWS=1 scripts/cassandra.sh start`, Peregrine from a config file)
    $PY tests/differential/generate.py --a ... --b ... --views --seed 1 --count 300
    # vectors, similarity functions, SAI vector indexes and ANN queries (gen/vectors.py)
    $PY tests/differential/generate.py --a ... --b ... --vectors --seed 1 --count 1500

From the seed it draws (gen/schema.py) user types and tables over every CQL type: frozen and
non-frozen lists/sets/maps, nested collections, tuples, UDTs, static columns, compound partition
keys, clustering columns ASC/DESC, counter tables, plus index / SAI / materialized-view DDL on
some tables. Then (gen/statements.py) it draws INSERT/UPDATE/DELETE (collection and UDT-field
operations, ranges, USING TTL/TIMESTAMP, LWT), BATCH, and SELECTs (full key, partition, slices,
IN, ALLOW FILTERING, token ranges, LIMIT, PER PARTITION LIMIT, DISTINCT, count, aggregates,
writetime/ttl, functions, GROUP BY, JSON, ORDER BY) with literals or bind markers (prepared,
values bound by the driver) and page sizes 1-5 or 100, plus deliberately invalid statements.
From a random stream of its own (gen/extras.py; the other statements stay what the seed gave)
about 8% of the statements are forms of issues 9/10 the rest does not draw: arithmetic, casts,
math/blob/collection functions and literal terms in the selection, UDT field selection, SELECT
JSON of a selection, INSERT JSON with DEFAULT NULL/UNSET, GROUP BY with max/min/sum/avg,
multi-column clustering relations (literal tuples, one marker per tuple, `IN ?`, a null field
now and then, and DELETEs by them), ORDER BY over an IN on the partition key (unpaged, rows
compared in order), arithmetic in WHERE and SET terms, conditional UPDATEs on elements,
fields, IN, !=, CONTAINS and CONTAINS KEY, element and slice selections of sets and maps
(`m['a'..'b']`, `s[..3]`, frozen or not, in toJson() and SELECT JSON, writetime() of an
element), and conditional BATCHes on one partition (IF EXISTS / NOT EXISTS / conditions on
regular and static columns over one or two rows, partition deletions beside writes, and the
refused forms: a batch timestamp, a second table, a row asked two things).

From another stream of its own (gen/indexed.py, about 3% of the statements) it draws indexed
reads over the indexes gen/schema.py's `more_indexes` adds to about half the tables (SAI and
legacy; regular, static, clustering and partition key columns; values/keys/entries/full of
collections): SAI ranges, =, CONTAINS, CONTAINS KEY, m[k] = v, several with AND, with the
partition key, a clustering slice, token(), an unindexed filter, LIMIT, PER PARTITION LIMIT,
small pages, DISTINCT, count(*); refusals on indexes; writes of indexed values and elements;
episodes of expiring index writes, the wait, then indexed reads; and DESCRIBE TABLE / INDEX /
TYPE / MATERIALIZED VIEW of the drawn objects.

From a third stream of its own (gen/queries.py, about 6% of the statements) it draws GROUP BY
over the partition key and clustering prefixes (columns restricted by = left out at times, the
last one through floor() when it is a time) with aggregates of every type, plain columns and
toJson() of aggregates, over one partition, a slice, an IN, a token range, a filter or the whole
table, with ORDER BY, DISTINCT, LIMIT and PER PARTITION LIMIT, in pages of 1-5 rows (features
`grouped_<modifiers>:<shape>`), and the GROUP BY forms Cassandra refuses; fromJson() as a term
in INSERT VALUES, UPDATE SET and WHERE relations (a collection as a JSON string holding its JSON
at times) and its refusals; toJson() of columns, aggregates, casts, arithmetic, token() and
functions in selectors; the masking functions over every type they accept, and with arguments
of the wrong type or number.

From a fourth stream of its own (gen/clauses.py, about 3% of the statements, drawn before the
others) it binds markers where applications put them: `USING TTL ?` / `USING TIMESTAMP ?` (a
TTL, 0, null, unset, a client or unset timestamp, now and then a refused value) on INSERT,
UPDATE, DELETE and BATCH; `LIMIT ?` / `PER PARTITION LIMIT ?` (unset: no limit); `k IN ?` and
`c IN ?` lists (empty, a null element) in SELECT and DELETE; and unset values in SET terms,
collection operations, INSERT values, filters, conditions and keys.

From a fifth stream of its own (gen/alter.py, about 25 episodes of 4-9 statements in CI's
1,500, drawn first) it changes schemas mid-run: a column added (regular, static, collection),
written with client timestamps, read, dropped (at times USING TIMESTAMP), named again and
added back with the same or another type; a user type made for the episode, a non-frozen
column of it, ALTER TYPE ADD / RENAME, field writes and reads, DROP TYPE; a key column renamed
and back; ALTER TABLE WITH options and the refused ALTER TABLE / ALTER TYPE forms. Tables with
views are left to gen/views.py.

With --views (gen/views.py) it also draws materialized views over most non-counter tables
(base key plus at most one non-key column in the view key, IS NOT NULL, sometimes a filter on
a base key column, CLUSTERING ORDER BY; some created in the DDL over empty tables, some later
in the stream over the data so far), base writes whose values for a view-key column come from
a small pool (so rows meet under one view key and move between keys), reads of the views as
of tables (by view key, partitions, slices, IN, whole view with pages of 1-5, writetime/ttl,
aggregates, filtering), and refusals: invalid view DDL, writes and indexes on a view, DROP of
a base or a base column (messages compared). A view's differences show the base's writes;
healing truncates the base.

With --vectors (gen/vectors.py, off by default: without it a seed draws exactly what it drew
before) it also draws 2-3 tables of their own with `vector<float, n>` columns (n 2-4) under an
SAI vector index (COSINE, EUCLIDEAN or DOT_PRODUCT), vectors of other element types, vectors in
lists, maps, sets, tuples and a user type, a table keyed by vectors, and about 12% of the
statements over them from a random stream of their own: writes, reads, similarity_cosine /
_euclidean / _dot_product in selectors, ANN queries (`ORDER BY v ANN OF [...] LIMIT n`, alone,
with the partition key, a clustering slice, a token range or another SAI index, literals or
markers), an index dropped and created again over the data (waiting until 5.0.9 reports it
queryable), and refusals (dimensions, element types, ANN without LIMIT or index, ...). ANN is
approximate in 5.0.9; the drawn data makes the answer exact, so ANN rows are compared in order:
at most 12 rows a table, each row key writing one of two vectors of its own, all drawn so that
against every query vector each has a distinct score under each function (no ties in the order
or at the LIMIT), and on so few rows 5.0.9's graph search finds every row.

Each statement runs on A then on B, in a new keyspace `gen_<seed>_<random>` (the same name on
both servers, dropped at the end), and is compared: success vs error, error code and message
text, column names and types, rows in order (IN over partitions: as a multiset), writetime()
exactly when every write to the table carried USING TIMESTAMP (else null/not-null), ttl() within
5 s. Now and then (from a random stream of its own, so the other statements stay what the seed
gave before) it draws an expiry episode: 1-3 writes with USING TTL 1 or 2, then a wait until the
wall clock is past the latest of their expiries plus a margin (both servers read this machine's
clock; no sleep-and-hope), then a read of the table, so expired cells and rows are compared. After a difference on a write or read, the table is truncated on both sides so one
divergence does not colour the rest; row differences are printed with the table's earlier
writes, to find the one that diverged.

Differences are grouped by signature (`unsupported:group_by`, `message:duplicate_column`,
`columns:collection_writetime`, `rows:count` ... see gen/runner.py); the first --examples of
each are printed. generated_known.txt lists the expected ones (`<signature regex> :: <reason>`);
an unlisted one fails the run; a listed one that did not occur while statements of its feature
passed is reported as "now matches?" (informational). docs/compatibility.md, "Found by the
generator", explains every listed class with a minimal example.

A generator issue is a statement the generator believed valid that A rejected (or believed
invalid that A accepted): it is printed as GENERATOR and fails the run, since the statement says
nothing about Peregrine; fix the generator.

Exit status 0 when there is no unknown difference and no generator issue. The last line reads
`generated: N passed, N failed, N skipped` (skipped = known differences).
"""

import argparse
import json
import logging
import os
import random
import re
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import run  # noqa: E402
from gen import runner  # noqa: E402
from gen.schema import draw_schema  # noqa: E402
from gen.statements import StatementGen, Stmt  # noqa: E402

KNOWN = os.path.join(HERE, "generated_known.txt")


# Re-preparing after a table is dropped and created again with other column types must give
# the new bind types (Cassandra does); a server that keeps the old metadata makes the driver
# refuse the new values.
REPREPARE_PROBE = [
    Stmt("CREATE TABLE reprepare_probe (k int PRIMARY KEY, v int)", feature="ddl_table"),
    Stmt("SELECT * FROM reprepare_probe WHERE k = ?", [1], feature="reprepare_after_schema_change"),
    Stmt("DROP TABLE reprepare_probe", feature="ddl_drop"),
    Stmt("CREATE TABLE reprepare_probe (k text PRIMARY KEY, v int)", feature="ddl_table"),
    Stmt("SELECT * FROM reprepare_probe WHERE k = ?", ["a"], feature="reprepare_after_schema_change"),
]


def draw_all(seed, count, n_tables, views=False, vectors=False):
    """The whole deterministic plan: (tables, ddl statements, dml/select statements). With
    `vectors` the vector tables (gen/vectors.py) follow the others, their DDL after theirs."""
    rng = random.Random(seed)
    udts, tables, ddl = draw_schema(rng, n_tables, views, random.Random(f"indexes-{seed}"))
    g = StatementGen(rng, tables, udts, seed, vectors)
    vector_tables, vector_ddl = g.vectors.schema()
    return (tables + vector_tables, ddl + vector_ddl,
            [Stmt(**vars(s)) for s in REPREPARE_PROBE] + [g.draw() for _ in range(count)])


def fresh_keyspace(session, ks):
    session.execute(f"DROP KEYSPACE IF EXISTS {ks}", timeout=120)
    session.execute(f"CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}",
                    timeout=120)
    session.set_keyspace(ks)


def check_generator(stmt, oa):
    """Why the reference's answer contradicts the generator's expectation, or None. A failure
    of the Python driver itself (it cannot decode some nested values, e.g. a map keyed by a
    frozen set) is not A's answer: both sides are then compared as they are."""
    if str(oa.error).startswith("client:"):
        return None
    if stmt.expect == "ok" and oa.error is not None:
        return "believed valid, rejected by A"
    if stmt.expect == "error" and oa.error is None:
        return "believed invalid, accepted by A"
    return None


def blame_range_delete(sig, features):
    """A row value/count difference on a table that had a range DELETE over a clustering column
    whose order is typed (decimal, tuple, frozen ...) is most likely that delete's doing: the
    two servers deleted different rows. Other row differences keep their signature, and so does
    a counter table's (`rows:counter`: its known divergence, a counter written after a DELETE,
    explains it whatever else the table saw; seed 5 drew one with a decimal range delete)."""
    kind = sig.split(":")[1] if sig.count(":") >= 1 else ""
    if not sig.startswith("rows:") or kind not in ("value", "row_count"):
        return sig
    for f in features:
        if f.startswith("delete_range:") and f.split(":")[1] in runner.TYPED_ORDER:
            return "rows:after_range_delete:" + f.split(":")[1]
    return sig


def rows_read_again(sa, sb, table, key_columns, statics):
    """Whether the rows A reads again after a flush, under a selection of key and `statics`
    columns alone, are in both servers' data: the key columns and `statics` (`SELECT <keys>,
    <statics> FROM table`) give on A the rows B gives and more, and each extra row is a row of
    the whole table (`SELECT *`) on B, alive by regular cells that read leaves unselected (the
    flushed expired-marker class: older than the row's expired marker, read again once a flush
    separated them). --views seed 230: `SELECT ck1, s0, maxwritetime(s0) AS maxwritetime_s0
    FROM t5`, A's extra row ck1 and the partition's s0."""
    try:
        whole = sb.execute(f"SELECT * FROM {table}", timeout=60)
        names = list(whole.column_names)
        keys = [n for n in names if n in key_columns]
        alive_b = {repr(runner._canon(tuple(r[names.index(k)] for k in keys))) for r in whole}
        listing = f"SELECT {', '.join(keys + list(statics))} FROM {table}"
        in_a = [repr(runner._canon(tuple(r)[:len(keys)])) for r in sa.execute(listing, timeout=60)]
        in_b = [repr(runner._canon(tuple(r)[:len(keys)])) for r in sb.execute(listing, timeout=60)]
    except Exception:  # noqa: BLE001 -- no verdict
        return False
    extra = _multiset_rest(in_b, in_a)
    return bool(extra) and all(r in alive_b for r in extra)


def _multiset_rest(small, big):
    """What of `big` is left once each of `small` is taken from it (a multiset; items compared
    as they are), or None when some of `small` is not in `big`."""
    left = list(big)
    for r in small:
        if r not in left:
            return None
        left.remove(r)
    return left


def _multiset_within(small, big):
    """Whether the rows `small` are among `big`, counted as a multiset."""
    def canon(rows):
        return [repr(runner._canon(r)) for r in rows]
    return _multiset_rest(canon(small), canon(big)) is not None


def blame_view_liveness(sig, stmt, oa, ob, sa, sb, view):
    """`rows:view_expired_liveness:F` for a read of `view` (keyed like its base, selecting some
    of its columns) where A answers some of B's rows and B's view holds rows A's does not, each
    a live row of A's own base that matches the view's WHERE: 5.0.9 hides that view row under
    an expired liveness (docs/compatibility.md, "View rows hidden by an expired liveness";
    --views seed 234: an unselected column's tombstone at the server's clock, `UPDATE .. SET a8
    = null`, then a partition deletion and a write of the row at older client timestamps). Else
    `sig`. The key sets are read again from both servers, and each extra key from A's base."""
    base = view.base
    keys = [c.name for c in base.keys]
    if (not sig.startswith("rows:") or view.select_all
            or {c.name for c in view.keys} != set(keys)):
        return sig
    if not _multiset_within(runner._comparable(stmt, oa), runner._comparable(stmt, ob)):
        return sig
    where = re.search(r"\bWHERE\s+(.*?)\s+PRIMARY\s+KEY\b", view.create_text, re.I | re.S)
    if not where:
        return sig
    filters = [p for p in re.split(r"\s+AND\s+", where.group(1), flags=re.I)
               if not re.search(r"\bIS\s+NOT\s+NULL\s*$", p, re.I)]
    try:
        listing = f"SELECT {', '.join(keys)} FROM {view.name}"
        in_a = {repr(runner._canon(tuple(r))) for r in sa.execute(listing, timeout=60)}
        rows_b = [tuple(r) for r in sb.execute(listing, timeout=60)]
        extra = [r for r in rows_b if repr(runner._canon(r)) not in in_a]
        if not extra or len(in_a) + len(extra) != len(rows_b):
            return sig
        probe = sa.prepare(f"SELECT {', '.join(keys)} FROM {base.name} WHERE "
                           + " AND ".join([f"{k} = ?" for k in keys] + filters) + " ALLOW FILTERING")
        if any(len(list(sa.execute(probe, list(r), timeout=60))) != 1 for r in extra):
            return sig
    except Exception:  # noqa: BLE001 -- a key the driver cannot bind back: no verdict
        return sig
    return "rows:view_expired_liveness:" + sig.split(":", 1)[1]


# Statements after which Cassandra 5.0.9 flushes a table's memtable to an SSTable (each seen
# against a 5.0.9 node, with the expired-marker read below): a DROP TABLE or DROP MATERIALIZED
# VIEW flushes every table holding unflushed writes (it recycles the commit log segments,
# CommitLog.forceRecycleAllSegments); a schema change of one table (ALTER TABLE, CREATE or
# DROP INDEX on it, CREATE MATERIALIZED VIEW over it) flushes that table. TRUNCATE, a view's
# ALTER and other tables' schema changes do not.
_FLUSH_ALL = re.compile(r"\s*DROP\s+(?:TABLE|MATERIALIZED\s+VIEW)\b", re.I)
_FLUSH_ONE = re.compile(r"\s*(?:ALTER\s+TABLE\s+(\w+)|CREATE\s+(?:CUSTOM\s+)?INDEX\b.*?\bON\s+(\w+)"
                        r"|CREATE\s+MATERIALIZED\s+VIEW\b.*?\bFROM\s+(\w+))", re.I | re.S)


_TOKEN_COLUMN = re.compile(r"(?:system\.)?token\(", re.I)
_KEY_AGGREGATE = re.compile(r"system\.(?:min|max|avg|sum|count)\((\w+)\)$", re.I)
_COUNT_OF_COLUMN = re.compile(r"system\.count\((\w+)\)$", re.I)
_FUNCTION_OF_COLUMN = re.compile(r"(?:system\.)?\w+\((\w+)\)$", re.I)
# A CAST of a column, as the result names it: `cast(s0 as text)`.
_CAST_OF_COLUMN = re.compile(r"cast\((\w+) as \w+\)$", re.I)


def _null(column, value, key_columns=()):
    """A null value, as a column shows it: toJson() of a null is the text 'null' (--views seed
    87: `toJson(v1[..3.0])` of a row with an expired marker), and a SELECT JSON row is null when
    each of its non-key entries is (--views seed 138: `SELECT JSON v3`, '{"v3": null}')."""
    if column == "[json]" and isinstance(value, str):
        try:
            doc = json.loads(value)
        except ValueError:
            return False
        return isinstance(doc, dict) and all(v is None for k, v in doc.items()
                                             if k.strip('"') not in key_columns)
    # count() of a column counts no null value: a group of rows read again counts 0 (plain
    # seed 421: `SELECT pk0, ck0, count(v1) ... GROUP BY pk0, pk1, pk2, ck0`, A's extra group
    # (.., 0)).
    if value == 0 and _COUNT_OF_COLUMN.match(column):
        return True
    return value is None or (value == "null" and column.lower().startswith("system.tojson("))


class FlushBoundaries:
    """Which tables Cassandra has flushed between their writes and a later expiring write.

    5.0.9 skips the cells of unselected columns older than a row's marker, even an expired
    one, per memtable and per SSTable before it merges them (BTreeRow.filter, CASSANDRA-10657),
    so a row whose only live cells are older than an expired marker is not read while both
    sit in one memtable, and is read once a flush has put them in different SSTables, or has
    put a live collection's cells among them in any SSTable (`flush`). Peregrine
    answers as 5.0.9 before a flush (docs/compatibility.md, "Expiring writes"; scenario 103).
    The generator knows the statements after which 5.0.9 flushes (`_FLUSH_ALL`/`_FLUSH_ONE`),
    so it names that difference precisely: `rows:flushed_expired_marker:F` (see `blame`)."""

    def __init__(self):
        self.flushed = set()   # tables with writes that 5.0.9 has flushed since their TRUNCATE
        self.split = set()     # ... and an expiring write after that flush
        self.dirty = set()     # tables with writes since their last flush or TRUNCATE
        self.expiring = set()  # ... and an expiring write among them

    def after(self, stmt, oa, tables):
        """Notes statement `stmt` (A's outcome `oa`) on the base tables it names (`tables`)."""
        if oa.error is not None:
            return
        m = re.match(r"\s*TRUNCATE\s+(?:TABLE\s+)?(\w+)", stmt.text, re.I)
        if m:
            self.truncated([m.group(1)])
            return
        if _FLUSH_ALL.match(stmt.text):
            self.flush(set(self.dirty))
            return
        m = _FLUSH_ONE.match(stmt.text)
        if m:
            self.flush({next(g for g in m.groups() if g)} & self.dirty)
            return
        if stmt.write:
            self.dirty |= set(tables)
            if stmt.expires:
                self.split |= self.flushed & set(tables)
                self.expiring |= set(tables)

    def flush(self, tables):
        """5.0.9 flushes `tables`' memtables. One holding an expiring write and older cells of
        its row splits them too, though they reach one SSTable: read from an SSTable, the cells
        of an unselected collection are kept whatever their timestamp (SerializationHelper
        skips only simple cells older than the marker), so the row is read again (--views seed
        138: `UPDATE .. USING TTL 86400 AND TIMESTAMP 20 SET m = {..}`, `INSERT (k, c, v0) ..
        USING TTL 1 AND TIMESTAMP 21`, then after the expiry and a flush `SELECT c, v3` reads
        the row, null; before the flush it did not)."""
        self.flushed |= tables
        self.split |= tables & self.expiring
        self.expiring -= tables
        self.dirty -= tables

    def truncated(self, tables):
        for t in tables:
            for s in (self.flushed, self.split, self.dirty, self.expiring):
                s.discard(t)

    def blame(self, sig, stmt, oa, ob, table, key_columns, static_columns=(), read_again=None,
              clustering=()):
        """`rows:flushed_expired_marker:F` for a read of base table `table` after such a split
        where A answers B's rows and more, each extra one with every selected non-key value null
        (its expired marker's cells, or a static column the expiring write wrote); else `sig`.
        Under a LIMIT or PER PARTITION LIMIT the extra rows take the places of as many of B's
        (--views seed 72), which A then leaves out. A row read again also takes the place of
        its partition's static row, which shows only in a partition without rows: B's row with
        the selected `clustering` columns null and A's extra row of that partition otherwise
        alike (--views seed 275: `SELECT pk0, pk1, ck0, z12 FROM t2 WHERE pk0 = true AND pk1 =
        'a'`, A's row (true, 'a', 1234..5, null) for B's static row (true, 'a', null, null))."""
        if not sig.startswith("rows:") or table not in self.split:
            return sig
        # The same rows in aggregate form: A counts the rows it read again in count(*) /
        # count(1) and nothing else differs (the read-again rows hold nulls, which min, max,
        # sum and count(column) leave out; --views seed 182: `SELECT count(1),
        # toJson(min(v2)), min(pk0) ... GROUP BY pk0`, 7 rows counted against 6).
        counts = [i for i, (name, _) in enumerate(oa.columns) if name == "count"]
        rows_a, rows_b = runner._comparable(stmt, oa), runner._comparable(stmt, ob)
        if counts and oa.columns == ob.columns and len(rows_a) == len(rows_b):
            others = [i for i in range(len(oa.columns)) if i not in counts]
            pairs = list(zip(rows_a, rows_b))
            if (all(all(a[i] == b[i] for i in others) for a, b in pairs)
                    and all(isinstance(a[i], int) and isinstance(b[i], int) and a[i] >= b[i]
                            for a, b in pairs for i in counts)):
                return "rows:flushed_expired_marker:" + sig.split(":", 1)[1]
        # token() of the partition key is a key value too (--views seed 72: `SELECT token(pk0,
        # pk1), bigintAsBlob(v1) ... PER PARTITION LIMIT 1`, A's extra row (token, null)), and
        # so is count(*) of a group, which counts the rows read (--views seed 171: `SELECT pk0,
        # count(*), max(v4) ... GROUP BY pk0, ck0 PER PARTITION LIMIT 1`, A's extra group (false,
        # 1, null) in place of B's first).
        # An aggregate of a key column (`max(pk0)`, `avg(pk1)`) is a key value of the group as
        # well, and count(*) under an alias too (--views seed 195: `count(*) AS a2, max(pk0),
        # toJson(min(v3)), avg(pk1) ... GROUP BY pk0, pk1, ck0`, A's extra group (.., 1, ..,
        # 'null', 127)). count() of a key column counts every row read, as count(*) does
        # (--views seed 218: `SELECT ck1, count(*), max(v1), count(ck0), count(pk0) ... GROUP BY
        # pk0, pk1, ck0, ck1`, A's extra group (2, 1, null, 1, 1)).
        # A static column is the partition's, the same in every row or group of it, read again
        # or not, and so is a function of it (plain seed 426: `SELECT pk2, ck0, v3, count(s0),
        # max(v4) ... GROUP BY pk0, pk1, pk2, ck0 PER PARTITION LIMIT 2`, A's extra group (..,
        # null, 1, null)). A selection of key and static columns alone names nothing of the row
        # and keeps its class (--views seed 230: `SELECT ck1, s0, maxwritetime(s0) AS
        # maxwritetime_s0 FROM t5`, A's extra row (ck1, the partition's s0, its write time)),
        # unless `read_again(statics)` finds the rows A reads again in the table's data (see
        # `rows_read_again`). A CAST of a static column is the partition's too (--views seed
        # 254: `SELECT ck1, CAST(s0 AS text) FROM t2 WHERE pk0 = ?`, A's extra row (ck1, s0)).
        counted = set(re.findall(r"count\((?:\*|1)\)\s+AS\s+(\w+)", stmt.text, re.I))
        aliased = {alias: arg for arg, alias in
                   re.findall(r"\b\w+\((\w+)\)\s+AS\s+(\w+)", stmt.text, re.I)}

        def static_of(name):
            f = _FUNCTION_OF_COLUMN.match(name) or _CAST_OF_COLUMN.match(name)
            for c in (name, aliased.get(name), f and f.group(1)):
                if c in static_columns:
                    return c
            return None

        def static_like(name):
            return static_of(name) is not None

        def key_like(name):
            m = _KEY_AGGREGATE.match(name)
            return (name in key_columns or name == "count" or name in counted
                    or bool(m and m.group(1) in key_columns) or bool(_TOKEN_COLUMN.match(name))
                    or static_like(name))
        non_key = [i for i, (name, _) in enumerate(oa.columns) if not key_like(name)]
        statics = sorted({static_of(name) for name, _ in oa.columns} - {None})
        if not non_key and not (statics and read_again and read_again(statics)):
            return sig
        # Rows as compared (writetime() may be compared as null / not null), A's with its own.
        extra = list(zip(runner._comparable(stmt, oa), oa.rows))
        limited = re.search(r"\bLIMIT\s+\d+", stmt.text, re.I)
        displaced = 0
        ck = [i for i, (name, _) in enumerate(oa.columns) if name in clustering]

        def in_place_of(static_row, row):
            return (ck and all(static_row[i] is None for i in ck)
                    and all(row[i] == v for i, v in enumerate(static_row) if i not in ck))
        for r in runner._comparable(stmt, ob):
            i = next((i for i, (c, _) in enumerate(extra) if c == r), None)
            if i is None and any(in_place_of(r, c) for c, _ in extra):
                continue
            if i is None:
                if not limited:
                    return sig
                displaced += 1
                continue
            del extra[i]
        if not extra or any(not _null(oa.columns[i][0], raw[i], key_columns) for _, raw in extra for i in non_key):
            return sig
        if displaced > len(extra):
            return sig
        return "rows:flushed_expired_marker:" + sig.split(":", 1)[1]


def run_plan(sa, sb, ks, tables, ddl, stmts, known, verbose=0, out=print):
    tally = runner.Tally()
    # A view's statements are about its base's data: its writes explain a view's difference,
    # and healing truncates the base (Cassandra refuses TRUNCATE of a view).
    base_of = {v.name: t.name for t in tables for v in t.views}
    view_tables = {v.name: v for t in tables for v in t.views}
    names = {t.name for t in tables} | set(base_of)
    broken = {}     # table -> signature of its differing CREATE
    history = {}    # table -> [(feature, text)] of its writes since it was last truncated
    flushes = FlushBoundaries()
    key_columns = {t.name: {c.name for c in t.pk + t.ck} for t in tables}
    static_columns = {t.name: {c.name for c in t.cols if c.role == "static"} for t in tables}
    clustering_columns = {t.name: {c.name for c in t.ck} for t in tables}

    expired_by = [0.0]   # wall time by which every expiring write so far has expired on both sides

    def one(stmt):
        if stmt.wait_expiry:
            runner.wait_until(expired_by[0])
            return None
        oa = runner.execute(sa, stmt, ks)
        ob = runner.execute(sb, stmt, ks)
        if stmt.expires:
            # Both writes have been applied by now: each expires at most `expires` seconds
            # after it (Cassandra counts whole seconds from its write, so earlier), on this
            # machine's clock, which both servers read.
            expired_by[0] = max(expired_by[0], time.time() + stmt.expires + runner.EXPIRY_MARGIN_S)
        for side, o, s in (("a", oa, sa), ("b", ob, sb)):
            if str(o.error).startswith("client:") or o.error == 0x000A:
                # The driver failed (e.g. could not decode a result) and may have dropped the
                # connection: wait until the session answers again before going on.
                out(f"note: client-side failure on {side}: {o.error_text[:200]}\n    {stmt.text[:300]} -- bound {stmt.params}")
                runner.wait_alive(s)
        if stmt.index_built:
            for o, s in ((oa, sa), (ob, sb)):
                if o.error is None:
                    runner.wait_index_queryable(s, ks, stmt.index_built)
        view = re.match(r"CREATE MATERIALIZED VIEW (\w+)", stmt.text)
        if view:
            for o, s in ((oa, sa), (ob, sb)):
                if o.error is None:
                    runner.wait_view_built(s, ks, view.group(1))
        if verbose:
            out(f"{stmt.feature:24} {stmt.text}" + (f"  -- bound {stmt.params}" if stmt.params else ""))
            out(f"    a: {runner.describe(oa)}\n    b: {runner.describe(ob)}")
        flushes.after(stmt, oa, sorted({base_of.get(t, t) for t in runner.tables_of(stmt, names)}))
        if oa.error == 0x1300:
            # ReadFailure: the reference failed internally (Cassandra 5.0.9 does on some GROUP BY
            # with IN and LIMIT); there is no answer to compare with.
            out(f"note: A failed to execute the read (ReadFailure), not compared: {stmt.text[:300]}")
            return None
        if oa.error == 0x0000 and "NullPointerException" in oa.error_text and stmt.feature.startswith("view_"):
            # Cassandra 5.0.9 fails reads of a view that has a partition with an empty key
            # (from a base clustering value '') with a NullPointerException when it pages
            # (also internally, under a LIMIT): no answer to compare with.
            out(f"note: A failed internally (NullPointerException), not compared: {stmt.text[:300]}")
            return None
        why = check_generator(stmt, oa)
        if why:
            tally.generator.append((stmt, oa, why))
            out(f"GENERATOR ({why}): {stmt.text}" + (f"  -- bound {stmt.params}" if stmt.params else "")
                + f"\n    a: {runner.describe(oa)}")
            return None
        d = runner.differences(stmt, oa, ob)
        if d is None:
            tally.add_pass(stmt, oa)
            return None
        sig, detail = d
        named = runner.tables_of(stmt, names)
        touched = sorted({base_of.get(t, t) for t in named})
        if sig.startswith("rows:") or sig.startswith("columns:"):
            for t in touched:
                detail = detail + [f"earlier write to {t}: {w}" for _, w in history.get(t, [])[-10:]]
            sig = blame_range_delete(sig, [f for t in touched for f, _ in history.get(t, [])])
            if len(named) == 1 and named[0] in key_columns:
                t = named[0]
                sig = flushes.blame(sig, stmt, oa, ob, t, key_columns[t], static_columns[t],
                                    read_again=lambda st: rows_read_again(sa, sb, t, key_columns[t], st),
                                    clustering=clustering_columns[t])
            if len(named) == 1 and named[0] in view_tables:
                sig = blame_view_liveness(sig, stmt, oa, ob, sa, sb, view_tables[named[0]])
        cascade = [broken[t] for t in named + touched if t in broken]
        if cascade and not stmt.feature.startswith(("create_index", "create_sai_index", "create_materialized_view")):
            sig = "cascade:" + cascade[0].split(":", 1)[1]
        tally.add_diff(sig, stmt, oa, ob, detail)
        if stmt.feature.startswith("create_materialized_view"):
            broken[stmt.table] = sig
        return sig, touched

    for d in ddl:
        stmt = Stmt(d.text, expect=d.expect, feature=d.feature, table=d.table)
        res = one(stmt)
        if res and d.feature == "ddl_table":
            broken[d.table] = res[0]
    for stmt in stmts:
        res = one(stmt)
        if stmt.write:
            for t in runner.tables_of(stmt, names):
                history.setdefault(t, []).append(
                    (stmt.feature, stmt.text[:300] + (f"  -- bound {stmt.params}" if stmt.params else "")))
        if res and not res[0].startswith("cascade:"):
            # Heal: one divergence should not make every later statement on the table differ.
            for t in res[1]:
                history.pop(t, None)
                flushes.truncated([t])
                for s in (sa, sb):
                    try:
                        s.execute(f"TRUNCATE {t}", timeout=60)
                    except Exception as e:  # noqa: BLE001
                        out(f"warning: TRUNCATE {t} failed: {e}")
    return tally


def report(tally, known, examples, out=print):
    """Prints the per-signature table; returns (failed, skipped)."""
    failed = len(tally.generator)
    skipped = 0
    rows = []
    for sig, (count, exs) in sorted(tally.diffs.items(), key=lambda kv: (-kv[1][0], kv[0])):
        k = runner.match_known(known, sig)
        status = "known" if k else "NEW"
        if k:
            skipped += count
        else:
            failed += count
        rows.append((status, sig, count, exs, k))
    if rows:
        out("\n== differences by signature ==")
    for status, sig, count, exs, k in rows:
        out(f"\n[{status}] {sig}  x{count}" + (f"  ({k[1]})" if k else ""))
        for ex in exs[:examples]:
            out(f"    {ex.text}" + (f"  -- bound {ex.params}" if ex.params is not None else ""))
            out(f"      a: {ex.a[:400]}\n      b: {ex.b[:400]}")
            if status == "NEW":
                for line in ex.detail[:14]:
                    out("      | " + line.replace("\n", "\n      | ")[:600])
    hit = {runner.match_known(known, sig)[0] for sig in tally.diffs if runner.match_known(known, sig)}
    for _, pat, reason in known:
        if pat not in hit and any(runner.match_known([(_rx(pat), pat, reason)], s) for s in tally.could_differ):
            out(f"now matches? (not seen this run, though statements of its feature passed): {pat}  ({reason})")
    out("\n== summary ==")
    out(f"{'status':8} {'count':>6}  signature")
    for status, sig, count, _, _ in rows:
        out(f"{status:8} {count:6}  {sig}")
    if tally.generator:
        out(f"{'GEN':8} {len(tally.generator):6}  generator issues (A contradicted the generator's expectation)")
    return failed, skipped


def _rx(pat):
    return re.compile(pat)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Random CQL statements against two endpoints, differences catalogued.")
    ap.add_argument("--a", required=True, type=run.parse_hostport, help="reference endpoint host:port (Cassandra)")
    ap.add_argument("--b", required=True, type=run.parse_hostport, help="candidate endpoint host:port (Peregrine)")
    ap.add_argument("--seed", default="1", help="integer seed, or 'random' (the drawn seed is printed)")
    ap.add_argument("--count", type=int, default=1500, help="statements after the schema DDL (default 1500)")
    ap.add_argument("--tables", type=int, default=8, help="tables per keyspace (default 8)")
    ap.add_argument("--known", default=KNOWN, help="known differences file")
    ap.add_argument("--examples", type=int, default=2, help="examples printed per signature (default 2)")
    ap.add_argument("--keep", action="store_true", help="keep the keyspace afterwards")
    ap.add_argument("--views", action="store_true",
                    help="draw materialized views (both sides must run with materialized_views_enabled: true)")
    ap.add_argument("--vectors", action="store_true",
                    help="draw vector tables, similarity functions, SAI vector indexes and ANN queries (gen/vectors.py)")
    ap.add_argument("-v", "--verbose", action="count", default=0, help="print every statement and both answers")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    # The driver logs failed PREPAREs and server warnings; failures are outcomes here.
    logging.getLogger("cassandra").setLevel(logging.CRITICAL)
    seed = random.SystemRandom().randrange(10**9) if args.seed == "random" else int(args.seed)
    print(f"seed {seed}, {args.count} statements, {args.tables} tables" + (", views" if args.views else "")
          + (", vectors" if args.vectors else ""))

    tables, ddl, stmts = draw_all(seed, args.count, args.tables, args.views, args.vectors)
    known = runner.load_known(args.known) if os.path.exists(args.known) else []
    # A fresh keyspace name per run: a server's prepared statements from an earlier run with
    # another schema must not leak in (the probe above tests that case on purpose).
    ks = f"gen_{seed}_{uuid.uuid4().hex[:8]}"
    ca, sa = run.connect(args.a)
    cb, sb = run.connect(args.b)
    t0 = time.time()
    try:
        fresh_keyspace(sa, ks)
        fresh_keyspace(sb, ks)
        tally = run_plan(sa, sb, ks, tables, ddl, stmts, known, args.verbose)
        if not args.keep:
            for s in (sa, sb):
                s.execute(f"DROP KEYSPACE IF EXISTS {ks}", timeout=120)
    finally:
        ca.shutdown()
        cb.shutdown()
    failed, skipped = report(tally, known, args.examples)
    print(f"({time.time() - t0:.1f} s, seed {seed})")
    print(f"generated: {tally.passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
