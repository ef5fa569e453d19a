"""Server-free tests of the statement generator (generate.py, gen/): determinism, literal
rendering, signatures and the known-differences file."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402
import run  # noqa: E402
from gen import runner  # noqa: E402
from gen.statements import Stmt  # noqa: E402
from gen.types import T, literal  # noqa: E402


def plan_text(seed, count=300, views=False):
    _, ddl, stmts = generate.draw_all(seed, count, 8, views)
    return [d.text for d in ddl] + [(s.text, repr(s.params), s.expect, s.feature, s.fetch_size) for s in stmts]


def test_same_seed_draws_the_same_statements():
    assert plan_text(11) == plan_text(11)


def test_views_mode_is_deterministic_and_draws_views_reads_and_refusals():
    assert plan_text(11, views=True) == plan_text(11, views=True)
    # Without --views: views only as the refusal of a server with views off.
    _, ddl, stmts = generate.draw_all(11, 300, 8)
    assert all(d.expect == "error" for d in ddl if "MATERIALIZED" in d.text)
    assert not any(s.feature.startswith(("view_", "bad_view")) for s in stmts)
    features = set()
    for seed in range(1, 6):
        _, ddl, stmts = generate.draw_all(seed, 500, 8, True)
        for d in ddl:
            features.add(d.feature.split(":")[0] + ":" + d.expect)
        for s in stmts:
            features.add(s.feature.split(":")[0].split("_")[0] + ":" + str(s.expect))
    for want in ["create_materialized_view:ok", "bad_view:error", "view:ok"]:
        assert want in features, (want, sorted(features))


def test_schema_changes_come_in_episodes_on_tables_without_views(monkeypatch):
    from gen import alter
    _, _, stmts = generate.draw_all(1, 1500, 8, True)
    episodes = [s for s in stmts if s.feature.startswith("alter:")]
    assert len(episodes) > 40, len(episodes)
    kinds = {s.feature for s in episodes}
    for want in ["alter:add", "alter:drop", "alter:readd", "alter:alter_type_add", "alter:rename", "alter:refusal"]:
        assert want in kinds, (want, sorted(kinds))
    assert all(s.expect is None for s in episodes)
    # The other streams draw what they drew without these episodes.
    features = lambda: [s.feature for s in generate.draw_all(3, 500, 8)[2]
                        if not s.feature.startswith(("alter:", "expiring_")) and not s.wait_expiry
                        and s.feature != "select_after_expiry"]
    with_episodes = features()
    monkeypatch.setattr(alter, "ALTER_CHANCE", 0.0)
    without = features()
    assert with_episodes == without[:len(with_episodes)]


def test_expiring_writes_come_in_episodes_that_end_with_a_wait_then_a_read():
    episodes = 0
    for seed in range(1, 11):
        _, _, stmts = generate.draw_all(seed, 1000, 8)
        for i, s in enumerate(stmts):
            if s.wait_expiry:
                episodes += 1
                # Right before the wait: the episode's writes and nothing else, each with a
                # short TTL and its own timestamp, none reading what it changes.
                j = i
                while j > 0 and stmts[j - 1].expires:
                    j -= 1
                    w = stmts[j]
                    assert w.table == s.table and w.feature.startswith("expiring_"), w.text
                    assert re.search(r" USING TTL [12] AND TIMESTAMP \d+ ", w.text + " "), w.text
                    assert w.feature[len("expiring_"):] not in ("list_index_set", "list_remove")
                assert j < i, "a wait without expiring writes before it"
                assert not stmts[j - 1].expires
                after = stmts[i + 1]
                if after.feature.startswith("after_expiry:"):
                    # gen/indexed.py's episodes end with indexed reads of the table.
                    assert after.table == s.table and " WHERE " in after.text, after.text
                else:
                    assert after.text == f"SELECT * FROM {s.table}" and after.feature == "select_after_expiry"
        assert all(s.wait_expiry or not s.expires or s.feature.startswith("expiring_") for s in stmts)
    assert episodes >= 10, episodes


def test_expiry_episodes_leave_the_other_statements_as_the_seed_drew_them(monkeypatch):
    from gen import statements
    features = lambda: [s.feature for s in generate.draw_all(3, 500, 8)[2]]
    with_episodes = features()
    monkeypatch.setattr(statements, "EXPIRY_EPISODE", 0.0)
    without = features()
    assert any(f == "select_after_expiry" for f in with_episodes)
    kept = [f for f in with_episodes if not f.startswith("expiring_") and f not in ("wait_expiry", "select_after_expiry")]
    assert kept == without[:len(kept)]


def _indexed_family(feature):
    return (feature.startswith(("index_", "describe_", "after_expiry:", "expiring_index_write"))
            and feature != "index_query")


def test_indexed_reads_leave_the_other_statements_as_the_seed_drew_them(monkeypatch):
    from gen import indexed
    def features():
        # Without the expiry episodes too: they start at a draw's position, not the stream's.
        return [s.feature for s in generate.draw_all(3, 500, 8)[2]
                if not _indexed_family(s.feature) and not s.wait_expiry
                and not s.feature.startswith(("expiring_", "clause_bind:", "alter:")) and s.feature != "select_after_expiry"]
    with_family = features()
    monkeypatch.setattr(indexed, "INDEX_CHANCE", 0.0)
    without = features()
    assert with_family == without[:len(with_family)]


def test_indexed_reads_draw_every_index_kind_and_shape():
    targets, shapes = set(), set()
    for seed in range(1, 31):
        tables, _, _ = generate.draw_all(seed, 0, 8)
        for t in tables:
            targets.update((ix.target, ix.sai) for ix in t.indexes)
    for seed in range(1, 11):
        _, _, stmts = generate.draw_all(seed, 1500, 8)
        shapes.update(s.feature.split(":")[0] for s in stmts if _indexed_family(s.feature))
        shapes.update("after_expiry" for s in stmts if s.feature.startswith("after_expiry:"))
        # An indexed read names the values an index holds: its bound values match its markers.
        for s in stmts:
            if _indexed_family(s.feature) and s.params is not None:
                assert s.text.count("?") == len(s.params), s.text
    for target in ["simple", "values", "keys", "entries", "full"]:
        assert (target, True) in targets and (target, False) in targets, (target, sorted(targets))
    for want in ["index_range", "index_eq", "index_contains", "index_contains_key", "index_entry",
                 "index_full", "index_and", "index_with_partition", "index_with_slice", "index_token",
                 "index_filtering", "index_refusal", "index_write", "describe_table", "describe_index",
                 "describe_type", "after_expiry"]:
        assert want in shapes, (want, sorted(shapes))


def test_different_seeds_draw_different_statements():
    assert plan_text(11) != plan_text(12)


def test_every_statement_has_a_feature_and_an_expectation():
    _, _, stmts = generate.draw_all(5, 500, 8)
    for s in stmts:
        assert s.feature, s.text
        assert s.expect in ("ok", "error", None), s.text
        if s.params is not None:
            assert s.text.count("?") == len(s.params), s.text


def test_schema_covers_every_native_type_over_a_few_seeds():
    seen = set()
    for seed in range(1, 30):
        tables, _, _ = generate.draw_all(seed, 0, 8)
        for t in tables:
            for c in t.cols:
                seen.update(re.findall(r"[a-z]+", c.type.cql()))
    for name in ["ascii", "bigint", "blob", "boolean", "date", "decimal", "double", "duration", "float", "inet",
                 "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint", "uuid", "varchar",
                 "varint", "counter", "list", "set", "map", "tuple", "frozen"]:
        assert name in seen, name


def test_literals():
    assert literal(T("text"), "it's") == "'it''s'"
    assert literal(T("list", (T("int"),)), [1, 2]) == "[1, 2]"
    assert literal(T("set", (T("text"),)), {"b", "a"}) == "{'a', 'b'}"
    assert literal(T("time"), 3600 * 10**9 + 5) == "'01:00:00.000000005'"
    assert literal(T("blob"), b"\x01") == "0x01"


def test_signatures():
    s = Stmt("SELECT x FROM t", feature="group_by")
    ok = run.Outcome(columns=[("x", "int")], rows=[(1,)])
    err = run.Outcome(error=0x2200, error_text='Error from server: code=2200 [Invalid query] message="nope"')
    err2 = run.Outcome(error=0x2200, error_text='Error from server: code=2200 [Invalid query] message="other"')
    assert runner.differences(s, ok, ok) is None
    assert runner.differences(s, ok, err)[0] == "unsupported:group_by"
    assert runner.differences(s, err, ok)[0] == "accepts_invalid:group_by"
    assert runner.differences(s, err, err2)[0] == "message:group_by"
    s.feature = "full_scan"
    empty = run.Outcome(columns=[("x", "set<int>")], rows=[(("set", ()),)])
    null = run.Outcome(columns=[("x", "set<int>")], rows=[(None,)])
    assert runner.differences(s, null, empty)[0] == "rows:empty_collection_vs_null"


def test_a_limit_with_another_row_count_is_no_clustering_order_class():
    s = Stmt("SELECT * FROM t WHERE v <= '::1' LIMIT 3 ALLOW FILTERING", feature="allow_filtering:inet",
             order_types=("set",))
    one = run.Outcome(columns=[("v", "inet")], rows=[("::1",)])
    three = run.Outcome(columns=[("v", "inet")], rows=[("::1",), ("10.0.0.2",), ("::2",)])
    other = run.Outcome(columns=[("v", "inet")], rows=[("::2",)])
    assert runner.differences(s, one, three)[0] == "rows:row_count:allow_filtering:inet"
    assert runner.differences(s, one, other)[0] == "rows:limited_order:clustering_set"


def _flush_read(flushes, a_rows, b_rows, cols=(("k", "int"), ("v0", "int")), statics=(), read_again=None):
    s = Stmt("SELECT k, v0 FROM t", feature="select")
    a = run.Outcome(columns=list(cols), rows=a_rows)
    b = run.Outcome(columns=list(cols), rows=b_rows)
    return flushes.blame("rows:row_count:select", s, a, b, "t", {"k"}, set(statics), read_again)


def test_collection_slices_draw_every_form_on_sets_and_maps_keyed_by_native_types():
    forms = set()
    for seed in range(1, 21):
        tables, _, stmts = generate.draw_all(seed, 1500, 8)
        cols = {t.name: {c.name: c for c in t.cols} for t in tables}
        for s in stmts:
            if s.feature != "collection_slice":
                continue
            sel = s.text.split(" FROM ")[0]
            for name, inside in re.findall(r"(\w+)\[([^\]]*)\]", sel):
                c = cols[s.table][name]
                assert c.type.kind in ("map", "set") and c.type.args[0].is_native, s.text
                assert c.role not in ("pk", "ck"), s.text
                lo, dots, hi = inside.partition("..")
                forms.add("element" if not dots else ("both" if lo and hi else ("upper" if hi else "lower")))
            forms |= {f for f in ("toJson(", "writetime(", "JSON ", " AS e", "?") if f in sel}
            assert not re.search(r"writetime\(\w+\[\?", sel), s.text
            forms |= {"frozen" for name in re.findall(r"(\w+)\[", sel) if not cols[s.table][name].type.multicell}
            # At most one slice of a column: two from one lower bound make 5.0.9 blank values.
            sliced = re.findall(r"(\w+)\[[^\]]*\.\.", sel)
            assert len(sliced) == len(set(sliced)), s.text
    assert forms == {"element", "both", "upper", "lower", "toJson(", "writetime(", "JSON ", " AS e", "?",
                     "frozen"}, forms


QUERY_FAMILY = ("grouped_", "group_by_refusal:", "from_json_term:", "from_json_refusal:", "to_json_selector", "masking_fn",
                "masking_refusal:")


def test_query_forms_leave_the_other_statements_as_the_seed_drew_them(monkeypatch):
    from gen import queries
    def features():
        return [s.feature for s in generate.draw_all(3, 500, 8)[2]
                if not s.feature.startswith(QUERY_FAMILY) and not s.wait_expiry
                and not s.feature.startswith(("expiring_", "clause_bind:", "alter:")) and s.feature != "select_after_expiry"
                and not _indexed_family(s.feature)]
    with_family = features()
    monkeypatch.setattr(queries, "QUERY_CHANCE", 0.0)
    without = features()
    assert with_family == without[:len(with_family)]


def test_query_forms_draw_grouping_json_and_masking_forms():
    seen = set()
    for seed in range(1, 11):
        tables, _, stmts = generate.draw_all(seed, 1500, 8)
        by_name = {t.name: t for t in tables}
        for s in stmts:
            if not s.feature.startswith(QUERY_FAMILY):
                continue
            if s.params is not None:
                assert s.text.count("?") == len(s.params), s.text
            head, _, shape = s.feature.partition(":")
            seen.add(head if head.startswith(("grouped_", "group_by_", "to_json", "masking_fn")) else s.feature)
            if head.startswith("grouped_"):
                seen.update(m for m in ("paged", "limit", "ppl", "order") if m in head.split("_"))
                seen.update(x for x in ("floor(", "DISTINCT", "toJson(") if x in s.text)
                seen.add("shape:" + shape)
                assert " GROUP BY " in s.text, s.text
                assert ("paged" in head) == (s.fetch_size < 100), s.text
                # 5.0.9 cannot page a grouped range read of a table without clustering columns.
                if not by_name[s.table].ck and shape in ("scan", "token", "filter"):
                    assert s.fetch_size >= 100, s.text
            if s.feature.startswith("masking_fn"):
                seen.update(f for f in ("mask_null(", "mask_default(", "mask_replace(", "mask_inner(",
                                        "mask_outer(", "mask_hash(") if f in s.text)
            if s.feature.startswith("from_json"):
                assert "fromJson(" in s.text or "fromjson(" in s.text.lower(), s.text
    for want in ["group_by_refusal", "paged", "limit", "ppl", "order", "floor(", "DISTINCT", "toJson(",
                 "shape:partition", "shape:prefix", "shape:slice", "shape:scan", "shape:in", "shape:token",
                 "shape:filter", "from_json_term:insert", "from_json_term:update", "from_json_term:select",
                 "from_json_term:delete", "from_json_refusal:bad_value", "from_json_refusal:not_text",
                 "from_json_refusal:null_key", "from_json_refusal:selection", "from_json_refusal:arity",
                 "to_json_selector", "masking_fn", "mask_null(", "mask_default(", "mask_replace(",
                 "mask_inner(", "mask_outer(", "mask_hash(", "masking_refusal:inner_not_text",
                 "masking_refusal:inner_bad_bound", "masking_refusal:hash_algorithm"]:
        assert want in seen, (want, sorted(seen))


def test_clause_binds_leave_the_other_statements_as_the_seed_drew_them(monkeypatch):
    from gen import clauses
    def features():
        return [s.feature for s in generate.draw_all(3, 500, 8)[2]
                if not s.feature.startswith("clause_bind:") and not s.wait_expiry
                and not s.feature.startswith(("expiring_", "alter:")) and s.feature != "select_after_expiry"]
    with_family = features()
    monkeypatch.setattr(clauses, "CLAUSE_CHANCE", 0.0)
    without = features()
    assert with_family == without[:len(with_family)]


def test_clause_binds_draw_markers_in_clauses_and_unset_values():
    from cassandra.query import UNSET_VALUE
    seen = set()
    for seed in range(1, 11):
        for s in generate.draw_all(seed, 1500, 8)[2]:
            if not s.feature.startswith("clause_bind:"):
                continue
            assert s.params is not None and s.text.count("?") == len(s.params), s.text
            seen.add(s.feature.split(":")[1])
            seen.update(x for x in ("USING TTL ? AND TIMESTAMP ?", "USING TIMESTAMP ? AND TTL ?", "LIMIT ?",
                                    "PER PARTITION LIMIT ?", "IN ?", "BEGIN BATCH USING TIMESTAMP ?") if x in s.text)
            if any(p is UNSET_VALUE for p in s.params):
                seen.add("unset")
            # Not `l = l + ?` with an unset value: 5.0.9 fails it with a server error.
            assert not re.search(r"(\w+) = \1 \+ \?", s.text) or "unset_collection_list" not in s.feature
    for want in ["write_attrs_insert", "write_attrs_update", "write_attrs_delete", "write_attrs_batch",
                 "limits_partition", "limits_scan", "in_marker_partition", "in_marker_clustering",
                 "in_marker_delete", "counter_attrs_ttl", "counter_attrs_timestamp", "counter_attrs_condition",
                 "unset_set", "unset_insert", "unset_filter", "unset_condition", "unset_key",
                 "USING TTL ? AND TIMESTAMP ?", "USING TIMESTAMP ? AND TTL ?", "LIMIT ?", "PER PARTITION LIMIT ?",
                 "IN ?", "BEGIN BATCH USING TIMESTAMP ?", "unset"]:
        assert want in seen, (want, sorted(seen))


def test_conditional_batches_keep_to_one_partition_and_draw_every_form():
    forms = set()
    for seed in range(1, 21):
        _, _, stmts = generate.draw_all(seed, 1500, 8)
        for s in stmts:
            if s.feature != "lwt_batch":
                continue
            body = s.text.split(" BATCH", 1)[1]
            assert " IF " in body and s.text.endswith("; APPLY BATCH"), s.text
            tables = set(re.findall(r"(?:UPDATE|INTO|FROM) (\w+)", body))
            forms.add("tables:%d" % len(tables))
            assert s.table in tables, s.text
            for f in (" IF EXISTS", " IF NOT EXISTS", " = null", " != null", "DELETE FROM", "INSERT INTO",
                      "USING TIMESTAMP", "UNLOGGED", "?"):
                if f in s.text:
                    forms.add(f)
    assert forms == {"tables:1", "tables:2", " IF EXISTS", " IF NOT EXISTS", " = null", " != null",
                     "DELETE FROM", "INSERT INTO", "USING TIMESTAMP", "UNLOGGED", "?"}, forms


def test_arithmetic_into_an_indexed_varint_column_is_a_varint_operation():
    drawn = 0
    for seed in range(1, 61):
        tables, _, stmts = generate.draw_all(seed, 1500, 8)
        by_name = {t.name: t for t in tables}
        for s in stmts:
            m = re.match(r"UPDATE (\w+) SET (\w+) = (.*) WHERE", s.text)
            if s.feature != "arith_term" or not m:
                continue
            t = by_name[m.group(1)]
            c = next(c for c in t.cols if c.name == m.group(2))
            if c.type.kind == "varint" and any(i.column == c.name for i in t.indexes):
                drawn += 1
                assert m.group(3).startswith("(varint) "), s.text
    assert drawn > 0


def test_a_count_over_an_inet_filter_is_named_for_the_sai_inet_class():
    # Seed 197: count(v0) over `v1 <= ?` (SAI on v1), pages of 3: 5.0.9 counts 1, B 9.
    _, _, stmts = generate.draw_all(197, 1500, 8)
    s = next(s for s in stmts if s.text.startswith("SELECT count(v0) FROM t5 WHERE v1 <= ?"))
    assert s.feature == "aggregate:allow_filtering:inet"
    known = runner.load_known(generate.KNOWN)
    for sig in ["rows:aggregate:allow_filtering:inet", "rows:count:allow_filtering:inet"]:
        assert runner.match_known(known, sig), sig


def test_flush_boundaries_name_a_row_5_0_9_reads_after_a_flush():
    ok = run.Outcome(columns=[], rows=[])
    old_write = Stmt("INSERT INTO t (k, v1) VALUES (1, 1) USING TIMESTAMP 1000", write=True)
    expiring = Stmt("INSERT INTO t (k, v0) VALUES (1, 2) USING TTL 1 AND TIMESTAMP 2000", write=True, expires=1)

    def episode(*between):
        f = generate.FlushBoundaries()
        f.after(old_write, ok, ["t"])
        for text in between:
            f.after(Stmt(text), ok, [])
        f.after(expiring, ok, ["t"])
        return f

    flushed = "rows:flushed_expired_marker:row_count:select"
    for text in ["DROP TABLE other", "DROP MATERIALIZED VIEW other_mv", "ALTER TABLE t ADD z int",
                 "CREATE INDEX ON t (v1)", "CREATE CUSTOM INDEX i ON t (v1) USING 'sai'",
                 "CREATE MATERIALIZED VIEW mv AS SELECT k, v1 FROM t WHERE k IS NOT NULL PRIMARY KEY (k)"]:
        assert _flush_read(episode(text), [(1, None)], []) == flushed, text
    # No flush of t between the writes: the difference keeps its class.
    for between in [(), ("ALTER TABLE other ADD z int",), ("CREATE INDEX ON other (v)",),
                    ("DROP TABLE other", "TRUNCATE t")]:
        assert _flush_read(episode(*between), [(1, None)], []) == "rows:row_count:select", between
    f = episode("DROP TABLE other")
    # Only rows A has beyond B's, each with its selected non-key values null.
    assert _flush_read(f, [(1, 5)], []) == "rows:row_count:select"
    assert _flush_read(f, [], [(1, None)]) == "rows:row_count:select"
    assert _flush_read(f, [(1, None), (2, 3)], [(2, 3)]) == flushed
    assert _flush_read(f, [(1, None), (2, 3)], [(2, 4)]) == "rows:row_count:select"
    # A row read again takes the place of its partition's static row (--views seed 275).
    kcv = [("k", "int"), ("c", "int"), ("v0", "int")]

    def in_place(a_rows, b_rows, clustering=("c",)):
        a, b = run.Outcome(columns=kcv, rows=a_rows), run.Outcome(columns=kcv, rows=b_rows)
        s = Stmt("SELECT k, c, v0 FROM t WHERE k = 1", feature="select")
        return f.blame("rows:row_count:select", s, a, b, "t", {"k", "c"}, clustering=set(clustering))
    assert in_place([(1, 5, None)], [(1, None, None)]) == flushed
    assert in_place([(1, 5, None)], [(1, None, None)], clustering=()) == "rows:row_count:select"
    assert in_place([(1, 5, None)], [(2, None, None)]) == "rows:row_count:select"
    assert in_place([(1, 5, 3)], [(1, None, 3)]) == "rows:row_count:select"
    assert in_place([(1, 5, None)], [(1, 4, None)]) == "rows:row_count:select"
    assert _flush_read(f, [(1,)], [], cols=[("k", "int")]) == "rows:row_count:select"
    # token() of the key is a key value: the extra row's selected non-key values are null.
    tok = [("system.token(k)", "bigint"), ("v0", "int")]
    assert _flush_read(f, [(-5, None), (7, 3)], [(7, 3)], cols=tok) == flushed
    assert _flush_read(f, [(-5, 1), (7, 3)], [(7, 3)], cols=tok) == "rows:row_count:select"
    # count() of a key column, like count(*), counts the row read (--views seed 218).
    cnt = [("k", "int"), ("system.count(k)", "bigint"), ("system.max(v0)", "int")]
    assert _flush_read(f, [(1, 1, None), (2, 1, 3)], [(2, 1, 3)], cols=cnt) == flushed
    assert _flush_read(f, [(1, 1, 4), (2, 1, 3)], [(2, 1, 3)], cols=cnt) == "rows:row_count:select"
    # count() of a regular column counts no null: 0 in the extra group (plain seed 421).
    cv = [("k", "int"), ("system.count(v0)", "bigint")]
    assert _flush_read(f, [(1, 0), (2, 1)], [(2, 1)], cols=cv) == flushed
    assert _flush_read(f, [(1, 1), (2, 1)], [(2, 1)], cols=cv) == "rows:row_count:select"
    # count() of a static column is the partition's (plain seed 426).
    cs = [("k", "int"), ("system.count(s0)", "bigint"), ("system.max(v0)", "int")]
    assert _flush_read(f, [(1, 1, None), (2, 1, 3)], [(2, 1, 3)], cols=cs, statics={"s0"}) == flushed
    assert _flush_read(f, [(1, 1, None), (2, 1, 3)], [(2, 1, 3)], cols=cs) == "rows:row_count:select"
    assert _flush_read(f, [(1, 1, 4), (2, 1, 3)], [(2, 1, 3)], cols=cs, statics={"s0"}) == "rows:row_count:select"
    # A static column and its functions are the partition's, beside a regular column.
    st = [("k", "int"), ("s0", "int"), ("system.maxwritetime(s0)", "bigint"), ("v0", "int")]
    assert _flush_read(f, [(1, 5, 9, None), (2, 5, 9, 3)], [(2, 5, 9, 3)], cols=st, statics={"s0"}) == flushed
    assert _flush_read(f, [(1, 5, 9, None), (2, 5, 9, 3)], [(2, 5, 9, 3)], cols=st) == "rows:row_count:select"
    # Key and static columns alone name nothing of the row: the class only when the rows A
    # reads again are found in the data (`read_again`, asked with the static columns read).
    ks = [("k", "int"), ("s0", "int"), ("system.maxwritetime(s0)", "bigint")]
    asked = []
    for found, want in [(True, flushed), (False, "rows:row_count:select"), (None, "rows:row_count:select")]:
        again = None if found is None else (lambda statics, found=found: asked.append(statics) or found)
        assert _flush_read(f, [(1, 5, 9), (2, 5, 9)], [(2, 5, 9)], cols=ks, statics={"s0"}, read_again=again) == want
    assert asked == [["s0"], ["s0"]]
    # A CAST of a static column is the partition's as well (--views seed 254).
    kc = [("k", "int"), ("cast(s0 as text)", "text")]
    yes = lambda statics: statics == ["s0"]  # noqa: E731
    assert _flush_read(f, [(1, "5"), (2, "5")], [(2, "5")], cols=kc, statics={"s0"}, read_again=yes) == flushed
    assert _flush_read(f, [(1, "5"), (2, "5")], [(2, "5")], cols=kc, read_again=yes) == "rows:row_count:select"
    # toJson() of a null is the text 'null'.
    js = [("k", "int"), ("system.tojson(v0)", "text")]
    assert _flush_read(f, [(1, "null"), (2, "3")], [(2, "3")], cols=js) == flushed
    assert _flush_read(f, [(1, "4"), (2, "3")], [(2, "3")], cols=js) == "rows:row_count:select"
    assert _flush_read(f, [(1, "null")], [], cols=[("k", "int"), ("v0", "text")]) == "rows:row_count:select"
    # Under a (PER PARTITION) LIMIT A's extra rows take the places of as many of B's.
    limited = Stmt("SELECT token(k), v0 FROM t PER PARTITION LIMIT 1", feature="functions")
    for a_rows, b_rows, want in [([(-5, None), (7, 3)], [(-5, 2), (7, 3)], flushed),
                                 ([(-5, None), (7, 3)], [(-5, 2), (7, 4)], "rows:row_count:select"),
                                 ([(-5, 1), (7, 3)], [(-5, 2), (7, 3)], "rows:row_count:select")]:
        a, b = run.Outcome(columns=tok, rows=a_rows), run.Outcome(columns=tok, rows=b_rows)
        assert f.blame("rows:row_count:select", limited, a, b, "t", {"k"}) == want, (a_rows, b_rows)
    assert _flush_read(f, [(-5, None), (7, 3)], [(-5, 2), (7, 3)], cols=tok) == "rows:row_count:select"
    # A writetime() compared as null / not null: the extra row's is still null.
    s = Stmt("SELECT k, writetime(v0) AS w FROM t", feature="writetime", nullness={"w"})
    a = run.Outcome(columns=[("k", "int"), ("w", "bigint")], rows=[(1, None), (2, 7)])
    b = run.Outcome(columns=[("k", "int"), ("w", "bigint")], rows=[(2, 8)])
    assert f.blame("rows:writetime", s, a, b, "t", {"k"}) == "rows:flushed_expired_marker:writetime"
    b = run.Outcome(columns=[("k", "int"), ("w", "bigint")], rows=[(2, None)])
    assert f.blame("rows:writetime", s, a, b, "t", {"k"}) == "rows:writetime"
    # A statement A refused flushes nothing.
    f = generate.FlushBoundaries()
    f.after(old_write, ok, ["t"])
    f.after(Stmt("DROP TABLE other"), run.Outcome(error=0x2200, error_text="no"), [])
    f.after(expiring, ok, ["t"])
    assert _flush_read(f, [(1, None)], []) == "rows:row_count:select"


def test_a_flush_after_an_expiring_write_splits_its_row_too():
    # --views seed 138: the older collection cells and the expired marker flushed together
    # into one SSTable; 5.0.9 then reads the row (SerializationHelper keeps the collection's
    # cells), SELECT JSON v3 answering '{"v3": null}' for it.
    ok = run.Outcome(columns=[], rows=[])
    f = generate.FlushBoundaries()
    f.after(Stmt("UPDATE t USING TTL 86400 AND TIMESTAMP 20 SET m = {1: 1} WHERE k = 0", write=True), ok, ["t"])
    f.after(Stmt("INSERT INTO t (k, v0) VALUES (0, 7) USING TTL 1 AND TIMESTAMP 21", write=True, expires=1),
            ok, ["t"])
    assert _flush_read(f, [(0, None)], []) == "rows:row_count:select"
    f.after(Stmt("DROP MATERIALIZED VIEW other_mv"), ok, [])
    assert _flush_read(f, [(0, None)], []) == "rows:flushed_expired_marker:row_count:select"
    js = Stmt("SELECT JSON v3 FROM t WHERE k = 0", feature="select_json_selection")
    for a_rows, want in [(['{"v3": "b"}', '{"v3": null}'], "rows:flushed_expired_marker:select_json_selection"),
                         (['{"v3": "b"}', '{"v3": "c"}'], "rows:select_json_selection")]:
        a = run.Outcome(columns=[("[json]", "text")], rows=[(r,) for r in a_rows])
        b = run.Outcome(columns=[("[json]", "text")], rows=[('{"v3": "b"}',)])
        assert f.blame("rows:select_json_selection", js, a, b, "t", {"k"}) == want, a_rows
    # A TRUNCATE forgets the expiring write; a flush of another table splits nothing.
    f = generate.FlushBoundaries()
    f.after(Stmt("INSERT INTO t (k, v0) VALUES (0, 7) USING TTL 1", write=True, expires=1), ok, ["t"])
    f.after(Stmt("ALTER TABLE other ADD z int"), ok, [])
    f.after(Stmt("TRUNCATE t"), ok, [])
    f.after(Stmt("DROP TABLE other"), ok, [])
    assert _flush_read(f, [(0, None)], []) == "rows:row_count:select"


def test_small_pages_over_an_sai_inet_filter_are_named_for_the_sai_inet_class():
    # Seed 298: `v2 <= '2001:db8::7' PER PARTITION LIMIT 2 ALLOW FILTERING` (SAI on v2), pages of
    # 5: 5.0.9 answers 3 rows, B 6; the PER PARTITION LIMIT plays no part.
    _, _, stmts = generate.draw_all(298, 1500, 8)
    s = next(s for s in stmts if s.text.startswith("SELECT JSON * FROM t6 WHERE v2 <= '2001:db8::7'"))
    assert s.feature == "allow_filtering:inet"
    assert runner.match_known(runner.load_known(generate.KNOWN), "rows:row_count:allow_filtering:inet:paged")


def test_no_condition_on_an_element_of_a_map_keyed_by_a_non_native_type():
    # Cassandra 5.0.9 fails `IF m[k] ...` with a server error (IndexOutOfBoundsException) when m
    # is keyed by a frozen collection, tuple or UDT and holds elements (--views seed 71).
    drawn = {"native": 0, "other": 0}
    for seed in range(1, 41):
        tables, _, stmts = generate.draw_all(seed, 1500, 8)
        cols = {t.name: {c.name: c.type for c in t.cols} for t in tables}
        for s in stmts:
            if s.feature != "lwt_condition":
                continue
            for name in re.findall(r"(\w+)\[", s.text.split(" IF ", 1)[1]):
                ty = cols[s.table][name]
                if ty.kind == "map":
                    drawn["native" if ty.args[0].is_native else "other"] += 1
    assert drawn["native"] > 0 and drawn["other"] == 0, drawn


def test_known_file_parses_and_matches():
    known = runner.load_known(generate.KNOWN)
    assert known, "generated_known.txt is empty"
    assert runner.match_known(known, "cascade:rows:value:int")[0] == "cascade:.*"
    assert runner.match_known(known, "rows:value:no_such_type") is None


def test_a_view_row_5_0_9_hides_under_a_live_base_row_is_named_for_the_expired_liveness_class():
    from gen.schema import Column, Table
    base = Table("t", [Column("k", T("int"), "pk"), Column("c", T("int"), "ck"), Column("v0", T("int"), "reg"),
                       Column("a8", T("int"), "reg")])
    view = Table("mv", [Column("c", T("int"), "pk"), Column("k", T("int"), "ck"), Column("v0", T("int"), "reg")])
    view.base = base
    view.create_text = ("CREATE MATERIALIZED VIEW mv AS SELECT k, c, v0 FROM t WHERE k IS NOT NULL AND c IS NOT NULL "
                        "AND c > 0 PRIMARY KEY (c, k)")

    class Session:
        def __init__(self, view_keys, base_keys=()):
            self.view_keys, self.base_keys, self.probes = view_keys, base_keys, []

        def prepare(self, text):
            return text

        def execute(self, query, params=None, timeout=None):
            if params is None:
                assert query == "SELECT k, c FROM mv", query
                return self.view_keys
            self.probes.append(query)
            return [tuple(params)] if tuple(params) in self.base_keys else []

    cols = [("c", "int"), ("v0", "int")]
    s = Stmt("SELECT c, v0 FROM mv", feature="view_full_scan")
    a, b = run.Outcome(columns=cols, rows=[(1, None)]), run.Outcome(columns=cols, rows=[(1, None), (2, None)])
    named = "rows:view_expired_liveness:row_count:view_full_scan"

    def blame(sa, a=a, b=b, v=view):
        return generate.blame_view_liveness("rows:row_count:view_full_scan", s, a, b, sa, Session([(0, 1), (0, 2)]), v)
    sa = Session([(0, 1)], base_keys={(0, 2)})
    assert blame(sa) == named
    # The probe reads A's base by the whole key and the view's filter, not its IS NOT NULLs.
    assert sa.probes == ["SELECT k, c FROM t WHERE k = ? AND c = ? AND c > 0 ALLOW FILTERING"]
    # A's base has no such row (or A's view holds a row B's lacks): another difference.
    assert blame(Session([(0, 1)])) == "rows:row_count:view_full_scan"
    assert blame(Session([(0, 1), (0, 3)], base_keys={(0, 2)})) == "rows:row_count:view_full_scan"
    # A answers rows B does not: not this class.
    other = run.Outcome(columns=cols, rows=[(1, 5)])
    assert blame(Session([(0, 1)], base_keys={(0, 2)}), a=other) == "rows:row_count:view_full_scan"
    # A view with a regular column in its key, or of every column, is not this class.
    keyed = Table("mv", view.cols + [Column("a8", T("int"), "ck")])
    keyed.base, keyed.create_text = base, view.create_text
    assert blame(Session([(0, 1)], base_keys={(0, 2)}), v=keyed) == "rows:row_count:view_full_scan"


def test_rows_read_again_are_rows_of_b_that_a_key_and_static_read_of_b_leaves_out():
    class Result(list):
        column_names = ["k", "c", "s0", "v"]

    class Session:
        def __init__(self, whole, listed):
            self.whole, self.listed = whole, listed   # SELECT * / SELECT k, c, s0

        def execute(self, query, timeout=None):
            if query == "SELECT * FROM t":
                return Result(self.whole)
            assert query == "SELECT k, c, s0 FROM t", query
            return self.listed

    def again(a_listed, b_whole, b_listed=((0, 1, 5), (1, None, 6))):
        a = Session([], list(a_listed))
        b = Session(list(b_whole), list(b_listed))
        return generate.rows_read_again(a, b, "t", {"k", "c"}, ["s0"])
    b_whole = [(0, 1, 5, 7), (0, 2, 5, 3), (1, None, 6, None)]
    # A reads (0, 2) again; B's whole-row read has it alive, its key and static read does not.
    assert again([(0, 1, 5), (0, 2, 5), (1, None, 6)], b_whole)
    # (0, 2) is no row of B's: another difference.
    assert not again([(0, 1, 5), (0, 2, 5), (1, None, 6)], [b_whole[0], b_whole[2]])
    # A reads nothing more, or lacks a row of B's.
    assert not again([(0, 1, 5), (1, None, 6)], b_whole)
    assert not again([(0, 2, 5), (1, None, 6)], b_whole)


def test_vectors_mode_leaves_the_other_statements_as_the_seed_drew_them():
    """--vectors adds its tables, DDL and statements from a stream of its own: take them out
    and the plan is the one drawn without the flag (the expiry episodes' waits may move)."""
    def plan(vectors):
        tables, ddl, stmts = generate.draw_all(7, 600, 8, False, vectors)
        vector_tables = {t.name for t in tables if t.name.startswith("vt") or t.name == "vk"}
        rest = [(s.text, repr(s.params)) for s in stmts
                if s.table not in vector_tables and not s.wait_expiry and not s.feature.startswith("vector")]
        return [d.text for d in ddl if d.table not in vector_tables and "vudt" not in d.text
                and "vbad" not in d.text], rest, stmts
    ddl_off, rest_off, _ = plan(False)
    ddl_on, rest_on, stmts = plan(True)
    assert ddl_off == ddl_on
    n = min(len(rest_on), len(rest_off))
    assert rest_on[:n] == rest_off[:n] and n > 400
    features = {s.feature for s in stmts}
    assert features & {"vector_ann", "vector_ann_after_delete"}, sorted(features)
    for want in ["vector_insert", "vector_read", "vector_refusal"]:
        assert want in features, (want, sorted(features))


def test_vector_tables_have_no_ties_in_ann_scores():
    from gen.vectors import FUNCTIONS, VectorForms, score
    g = VectorForms(None, 3, True)
    g.schema()
    for vt in g.tables:
        every = [v for two in vt.vectors.values() for v in two]
        for fn in FUNCTIONS:
            for q in vt.queries:
                scores = sorted(score(fn, v, q) for v in every)
                assert all(b - a > 1e-6 for a, b in zip(scores, scores[1:])), (vt.t.name, fn, q)


def test_ann_after_a_deletion_goes_unrestricted_with_a_class_of_its_own():
    """5.0.9 loses rows from ANN answers after deletions (docs/compatibility.md, "Vector
    search"): once a table's partition had one, an ANN query drawn restricted to that partition
    or to a token range is sent unrestricted, under the feature vector_ann_after_delete; the
    seed's stream is drawn as without the deletion."""
    from gen.vectors import K_POOL, VectorForms

    def draw(deleted, bind):
        g = VectorForms(None, 5, True)
        g.schema()
        vt = g.tables[0]
        vt.vector_deleted = set(K_POOL) if deleted else set()
        stmts = [g.ann(vt, bind) for _ in range(200)]
        return stmts, g.rng.getstate()

    for bind in (False, True):
        clean, state_clean = draw(False, bind)
        tainted, state_tainted = draw(True, bind)
        assert state_clean == state_tainted
        assert any(" WHERE k = " in s.text for s in clean)
        assert any(" WHERE token(k) " in s.text for s in clean)
        assert {s.feature for s in clean} == {"vector_ann"}
        assert {s.feature for s in tainted} == {"vector_ann_after_delete"}
        for c, t in zip(clean, tainted):
            assert " WHERE k = " not in t.text and "token(k)" not in t.text
            if " WHERE k = " not in c.text and "token(k)" not in c.text:
                assert (c.text, c.params) == (t.text, t.params)
            elif bind:
                assert t.text.count("?") == len(t.params)
