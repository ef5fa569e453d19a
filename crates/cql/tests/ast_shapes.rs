//! The tree the executor gets for tricky statements.

use cql::ast::*;

fn parse(s: &str) -> ParsedStatement {
    cql::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn select(s: &str) -> SelectStatement {
    match parse(s).statement {
        Statement::Select(x) => x,
        other => panic!("not a select: {other:?}"),
    }
}

fn int(s: &str) -> Term {
    Term::Literal(Literal::Integer(s.to_string()))
}

fn string(s: &str) -> Term {
    Term::Literal(Literal::String(s.to_string()))
}

fn bind(index: usize) -> Term {
    Term::Bind(BindMarker { index, name: None })
}

fn insert_values(s: &str) -> Vec<Term> {
    match parse(s).statement {
        Statement::Insert(InsertStatement {
            values: InsertValues::Values { values, .. },
            ..
        }) => values,
        other => panic!("{other:?}"),
    }
}

#[test]
fn ycsb_read() {
    let p = parse("SELECT field0,field1 FROM usertable WHERE y_id = ? LIMIT 1");
    assert_eq!(p.bind_count(), 1);
    let Statement::Select(s) = p.statement else {
        panic!()
    };
    assert_eq!(s.table, QualifiedName::new("usertable"));
    assert_eq!(
        s.selection,
        Selection::Selectors(vec![
            Selector {
                expr: SelectorExpr::Column("field0".into()),
                alias: None
            },
            Selector {
                expr: SelectorExpr::Column("field1".into()),
                alias: None
            },
        ])
    );
    assert_eq!(
        s.where_clause,
        vec![Relation::Binary {
            column: "y_id".into(),
            op: Operator::Eq,
            value: bind(0)
        }]
    );
    assert_eq!(s.limit, Some(int("1")));
}

#[test]
fn ycsb_scan_token_relation() {
    let s = select("SELECT * FROM usertable WHERE token(y_id) >= token(?) LIMIT 100");
    assert_eq!(s.selection, Selection::Wildcard);
    assert_eq!(
        s.where_clause,
        vec![Relation::Token {
            columns: vec!["y_id".into()],
            op: Operator::Gte,
            value: Term::FunctionCall {
                name: QualifiedName::new("token"),
                args: vec![bind(0)]
            }
        }]
    );
    let s = select("SELECT * FROM t WHERE token(a, b) > token(?, ?) AND token(a, b) <= ?");
    assert!(matches!(&s.where_clause[0], Relation::Token { columns, .. } if columns.len() == 2));
    assert_eq!(
        s.where_clause[1],
        Relation::Token {
            columns: vec!["a".into(), "b".into()],
            op: Operator::Lte,
            value: bind(2)
        }
    );
}

#[test]
fn bind_markers_are_numbered_in_text_order() {
    let p = parse("UPDATE t USING TTL ? SET a = :x, b = ? WHERE k = :k AND c IN ?");
    assert_eq!(
        p.bind_markers,
        vec![None, Some("x".into()), None, Some("k".into()), None]
    );
    let Statement::Update(u) = p.statement else {
        panic!()
    };
    assert_eq!(u.using.ttl, Some(bind(0)));
    assert_eq!(
        u.where_clause[1],
        Relation::In {
            column: "c".into(),
            values: InValues::Marker(BindMarker {
                index: 4,
                name: None
            })
        }
    );
    // The same name twice is two markers.
    assert_eq!(
        parse("SELECT * FROM t WHERE a = :v AND b = :v").bind_count(),
        2
    );
}

#[test]
fn batch_markers_run_across_children() {
    let p = parse(
        "BEGIN UNLOGGED BATCH USING TIMESTAMP ? INSERT INTO t (k, v) VALUES (?, ?); UPDATE t SET v = ? WHERE k = ?; APPLY BATCH",
    );
    assert_eq!(p.bind_count(), 5);
    let Statement::Batch(b) = p.statement else {
        panic!()
    };
    assert_eq!(b.kind, BatchKind::Unlogged);
    assert_eq!(b.using.timestamp, Some(bind(0)));
    assert_eq!(b.statements.len(), 2);
    let ModificationStatement::Update(u) = &b.statements[1] else {
        panic!()
    };
    assert_eq!(
        u.assignments,
        vec![Assignment::Set {
            column: "v".into(),
            value: bind(3)
        }]
    );
}

#[test]
fn script_markers_restart_per_statement() {
    let v = cql::parse_statements("SELECT * FROM t WHERE k = ?; ; INSERT INTO t (k) VALUES (?);")
        .unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].bind_count(), 1);
    assert_eq!(v[1].bind_count(), 1);
    assert_eq!(insert_values("INSERT INTO t (k) VALUES (?)"), vec![bind(0)]);
}

#[test]
fn quoted_identifiers_keep_case() {
    let p = parse(
        "INSERT INTO \"Ks\".\"standard1\" (\"key\", \"C0\", Mixed, \"a\"\"b\") VALUES (?, ?, ?, ?)",
    );
    let Statement::Insert(i) = p.statement else {
        panic!()
    };
    assert_eq!(i.table, QualifiedName::qualified("Ks", "standard1"));
    let InsertValues::Values { columns, .. } = i.values else {
        panic!()
    };
    assert_eq!(columns, vec!["key", "C0", "mixed", "a\"b"]);
    let s = select("SELECT * FROM KS.Tbl");
    assert_eq!(s.table, QualifiedName::qualified("ks", "tbl"));
    assert_eq!(s.table.to_string(), "ks.tbl");
    assert_eq!(
        QualifiedName::qualified("Ks", "select").to_string(),
        "\"Ks\".\"select\""
    );
}

#[test]
fn counter_and_collection_assignments() {
    let Statement::Update(u) = parse(
        "UPDATE t SET c = c + ?, d = d - 1, l = [1] + l, l2 = l2 + [2], m[?] = 'v', u.f = 3, e += 1, s -= {'x'}, v = -5 WHERE k = 1",
    )
    .statement
    else {
        panic!()
    };
    assert_eq!(
        u.assignments,
        vec![
            Assignment::Add {
                column: "c".into(),
                value: bind(0)
            },
            Assignment::Subtract {
                column: "d".into(),
                value: int("1")
            },
            Assignment::Prepend {
                column: "l".into(),
                value: Term::List(vec![int("1")])
            },
            Assignment::Add {
                column: "l2".into(),
                value: Term::List(vec![int("2")])
            },
            Assignment::SetElement {
                column: "m".into(),
                key: bind(1),
                value: string("v")
            },
            Assignment::SetField {
                column: "u".into(),
                field: "f".into(),
                value: int("3")
            },
            Assignment::Add {
                column: "e".into(),
                value: int("1")
            },
            Assignment::Subtract {
                column: "s".into(),
                value: Term::Set(vec![string("x")])
            },
            Assignment::Set {
                column: "v".into(),
                value: int("-5")
            },
        ]
    );
    // `c = c -1` (no space) is a decrement, as in Cassandra.
    let Statement::Update(u) = parse("UPDATE t SET c = c -1 WHERE k = 1").statement else {
        panic!()
    };
    assert_eq!(
        u.assignments[0],
        Assignment::Subtract {
            column: "c".into(),
            value: int("1")
        }
    );
}

#[test]
fn numbers_keep_their_text() {
    let v = insert_values(
        "INSERT INTO t (a,b,c,d,e,f,g,h,i) VALUES (-1, 99999999999999999999999, 1.5, -2e-3, NaN, -Infinity, Infinity, 1., - 7)",
    );
    assert_eq!(
        v,
        vec![
            int("-1"),
            int("99999999999999999999999"),
            Term::Literal(Literal::Float("1.5".into())),
            Term::Literal(Literal::Float("-2e-3".into())),
            Term::Literal(Literal::Float("NaN".into())),
            Term::Literal(Literal::Float("-Infinity".into())),
            Term::Literal(Literal::Float("Infinity".into())),
            Term::Literal(Literal::Float("1.".into())),
            int("-7"),
        ]
    );
    for t in &v[2..7] {
        let Term::Literal(Literal::Float(s)) = t else {
            panic!()
        };
        assert!(s.parse::<f64>().is_ok(), "{s} parses as f64");
    }
}

#[test]
fn other_literals() {
    let v = insert_values(
        "INSERT INTO t (a,b,c,d,e,f,g,h,i,j) VALUES ('it''s', $$a'b$$, true, FALSE, 0xCAFE, 550e8400-e29b-41d4-a716-446655440000, 1h30m, -P1D, null, 0x)",
    );
    assert_eq!(
        v,
        vec![
            string("it's"),
            string("a'b"),
            Term::Literal(Literal::Boolean(true)),
            Term::Literal(Literal::Boolean(false)),
            Term::Literal(Literal::Blob("CAFE".into())),
            Term::Literal(Literal::Uuid("550e8400-e29b-41d4-a716-446655440000".into())),
            Term::Literal(Literal::Duration("1h30m".into())),
            Term::Literal(Literal::Duration("-P1D".into())),
            Term::Literal(Literal::Null),
            Term::Literal(Literal::Blob(String::new())),
        ]
    );
}

#[test]
fn map_set_udt_tuple_and_empty_braces() {
    let v = insert_values(
        "INSERT INTO t (a,b,c,d,e,f,g) VALUES ({}, {1, 2}, {'k': 1}, {f: 1, \"G\": 'x'}, (1, 'a'), [], {true: 1})",
    );
    assert_eq!(v[0], Term::Set(vec![]));
    assert_eq!(v[1], Term::Set(vec![int("1"), int("2")]));
    assert_eq!(v[2], Term::Map(vec![(string("k"), int("1"))]));
    assert_eq!(
        v[3],
        Term::Udt(vec![("f".into(), int("1")), ("G".into(), string("x"))])
    );
    assert_eq!(v[4], Term::Tuple(vec![int("1"), string("a")]));
    assert_eq!(v[5], Term::List(vec![]));
    assert_eq!(
        v[6],
        Term::Map(vec![(Term::Literal(Literal::Boolean(true)), int("1"))])
    );
}

#[test]
fn arithmetic_precedence() {
    let v = insert_values("INSERT INTO t (a) VALUES (1 + 2 * 3 - 4)");
    let mul = Term::Operation {
        op: ArithOp::Mul,
        left: Box::new(int("2")),
        right: Box::new(int("3")),
    };
    let add = Term::Operation {
        op: ArithOp::Add,
        left: Box::new(int("1")),
        right: Box::new(mul),
    };
    assert_eq!(
        v[0],
        Term::Operation {
            op: ArithOp::Sub,
            left: Box::new(add),
            right: Box::new(int("4")),
        }
    );
}

#[test]
fn functions_and_type_hints() {
    let v = insert_values(
        "INSERT INTO t (a, b, c) VALUES (toTimestamp(now()), ks.f(1, ?), (bigint) ?)",
    );
    assert_eq!(
        v[0],
        Term::FunctionCall {
            name: QualifiedName::new("totimestamp"),
            args: vec![Term::FunctionCall {
                name: QualifiedName::new("now"),
                args: vec![]
            }]
        }
    );
    assert_eq!(
        v[1],
        Term::FunctionCall {
            name: QualifiedName::qualified("ks", "f"),
            args: vec![int("1"), bind(0)]
        }
    );
    assert_eq!(
        v[2],
        Term::TypeHint {
            ty: CqlType::Native(ColumnType::Bigint),
            term: Box::new(bind(1))
        }
    );
}

/// `varchar` in a cast or type hint is kept as written (Cassandra prints it so, and has no
/// `CAST(x AS varchar)`); everywhere else it is `text`.
#[test]
fn varchar_is_kept_in_casts_and_type_hints_only() {
    let v = insert_values("INSERT INTO t (a, b) VALUES ((varchar)'a', (list<varchar>)[])");
    assert_eq!(
        v[0],
        Term::TypeHint {
            ty: CqlType::Varchar,
            term: Box::new(string("a"))
        }
    );
    assert_eq!(v[1].to_string(), "(list<varchar>)[]");
    let s = select("SELECT CAST(c AS varchar), CAST(c AS text) FROM t");
    let Selection::Selectors(sel) = s.selection else {
        panic!()
    };
    let cast = |i: usize| match &sel[i].expr {
        SelectorExpr::Cast { ty, .. } => ty.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(cast(0), CqlType::Varchar);
    assert_eq!(cast(1), CqlType::Native(ColumnType::Varchar));
    assert_eq!(
        cql::parse_type("map<varchar, varchar>")
            .unwrap()
            .to_string(),
        "map<text, text>"
    );
}

#[test]
fn cell_time_functions_of_one_element() {
    let s = select("SELECT writetime(m[1]), maxwritetime(s[?]), ttl(m['k']), writetime(m) FROM t");
    let Selection::Selectors(sel) = s.selection else {
        panic!()
    };
    let exprs: Vec<_> = sel.iter().map(|s| s.expr.clone()).collect();
    assert_eq!(
        exprs[0],
        SelectorExpr::ElementTime {
            func: CellTimeFn::WriteTime,
            column: "m".into(),
            key: int("1"),
        }
    );
    assert!(matches!(
        &exprs[1],
        SelectorExpr::ElementTime {
            func: CellTimeFn::MaxWriteTime,
            key: Term::Bind(_),
            ..
        }
    ));
    assert!(matches!(
        &exprs[2],
        SelectorExpr::ElementTime {
            func: CellTimeFn::Ttl,
            ..
        }
    ));
    assert_eq!(exprs[3], SelectorExpr::WriteTime("m".into()));
}

#[test]
fn cell_time_functions_of_a_slice() {
    let s = select("SELECT writetime(m[1..3]), maxwritetime(s[2..]), ttl(m[..4]) FROM t");
    let Selection::Selectors(sel) = s.selection else {
        panic!()
    };
    let exprs: Vec<_> = sel.iter().map(|s| s.expr.clone()).collect();
    let slice =
        |func, column: &str, from: Option<&str>, to: Option<&str>| SelectorExpr::SliceTime {
            func,
            column: column.into(),
            from: from.map(int),
            to: to.map(int),
        };
    assert_eq!(
        exprs,
        [
            slice(CellTimeFn::WriteTime, "m", Some("1"), Some("3")),
            slice(CellTimeFn::MaxWriteTime, "s", Some("2"), None),
            slice(CellTimeFn::Ttl, "m", None, Some("4")),
        ]
    );
    // A slice with neither bound is not in Cassandra's grammar.
    let e = cql::parse("SELECT writetime(m[..]) FROM t").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:21 no viable alternative at input ']' (SELECT writetime(m[..[]]...)"
    );
}

#[test]
fn selectors() {
    let s = select(
        "SELECT COUNT(*), count(1) AS n, writetime(v), ttl(v), token(a, b), CAST(c AS text), u.f, m['k'], toJson(x) FROM t",
    );
    let Selection::Selectors(sel) = s.selection else {
        panic!()
    };
    let exprs: Vec<_> = sel.iter().map(|s| s.expr.clone()).collect();
    assert_eq!(exprs[0], SelectorExpr::CountRows);
    assert_eq!(
        exprs[1],
        SelectorExpr::Function {
            name: QualifiedName::new("count"),
            args: vec![SelectorExpr::Term(int("1"))]
        }
    );
    assert_eq!(sel[1].alias.as_deref(), Some("n"));
    assert_eq!(exprs[2], SelectorExpr::WriteTime("v".into()));
    assert_eq!(exprs[3], SelectorExpr::Ttl("v".into()));
    assert_eq!(
        exprs[4],
        SelectorExpr::Function {
            name: QualifiedName::new("token"),
            args: vec![
                SelectorExpr::Column("a".into()),
                SelectorExpr::Column("b".into())
            ]
        }
    );
    assert_eq!(
        exprs[5],
        SelectorExpr::Cast {
            expr: Box::new(SelectorExpr::Column("c".into())),
            ty: CqlType::Native(ColumnType::Varchar),
            call: true,
        }
    );
    assert_eq!(
        exprs[6],
        SelectorExpr::Field {
            expr: Box::new(SelectorExpr::Column("u".into())),
            field: "f".into()
        }
    );
    assert_eq!(
        exprs[7],
        SelectorExpr::Element {
            expr: Box::new(SelectorExpr::Column("m".into())),
            key: string("k")
        }
    );
    assert!(matches!(&exprs[8], SelectorExpr::Function { name, .. } if name.name == "tojson"));
}

#[test]
fn json_and_distinct_are_also_column_names() {
    let s = select("SELECT JSON a FROM t");
    assert!(s.json);
    let s = select("SELECT json FROM t");
    assert!(!s.json);
    assert_eq!(
        s.selection,
        Selection::Selectors(vec![Selector {
            expr: SelectorExpr::Column("json".into()),
            alias: None
        }])
    );
    let s = select("SELECT DISTINCT k, c FROM t");
    assert!(s.distinct);
    let s = select("SELECT distinct AS d FROM t");
    assert!(!s.distinct);
}

#[test]
fn select_clauses() {
    let s = select(
        "SELECT * FROM t WHERE k = 1 AND c > 2 GROUP BY k ORDER BY c DESC, d PER PARTITION LIMIT 3 LIMIT ? ALLOW FILTERING",
    );
    assert_eq!(s.group_by, vec![SelectorExpr::Column("k".into())]);
    assert_eq!(
        s.order_by,
        vec![("c".into(), Order::Desc), ("d".into(), Order::Asc)]
    );
    assert_eq!(s.per_partition_limit, Some(int("3")));
    assert_eq!(s.limit, Some(bind(0)));
    assert!(s.allow_filtering);
}

#[test]
fn ann_ordering_is_kept_apart_from_plain_orderings() {
    let s = select("SELECT k FROM t WHERE k = 1 ORDER BY v ANN OF [1.0, 2.5] LIMIT ?");
    assert!(s.order_by.is_empty());
    let ann = s.ann.expect("an ANN ordering");
    assert_eq!(ann.column, "v");
    assert!(matches!(ann.term, Term::List(ref items) if items.len() == 2));
    assert_eq!(s.limit, Some(bind(0)));

    let s = select("SELECT k FROM t ORDER BY \"V\" ann of ? , c DESC LIMIT 3");
    assert_eq!(
        s.ann.map(|a| (a.column, a.term)),
        Some(("V".into(), bind(0)))
    );
    assert_eq!(s.order_by, vec![("c".into(), Order::Desc)]);

    // A column named `ann` is still a plain ordering.
    let s = select("SELECT k FROM t ORDER BY ann DESC");
    assert!(s.ann.is_none());
    assert_eq!(s.order_by, vec![("ann".into(), Order::Desc)]);
}

#[test]
fn relations() {
    let s = select(
        "SELECT * FROM t WHERE k IN (1, 2) AND (a, b) > (1, 2) AND (a, b) IN ((1, 2), (3, 4)) AND l CONTAINS 3 AND m CONTAINS KEY 'x' AND n LIKE 'a%' AND v IS NOT NULL AND m['a'] = 'b' AND x != 1",
    );
    let w = s.where_clause;
    assert_eq!(
        w[0],
        Relation::In {
            column: "k".into(),
            values: InValues::Terms(vec![int("1"), int("2")])
        }
    );
    assert_eq!(
        w[1],
        Relation::MultiColumn {
            columns: vec!["a".into(), "b".into()],
            op: Operator::Gt,
            value: Term::Tuple(vec![int("1"), int("2")])
        }
    );
    assert_eq!(
        w[2],
        Relation::MultiColumnIn {
            columns: vec!["a".into(), "b".into()],
            values: InValues::Terms(vec![
                Term::Tuple(vec![int("1"), int("2")]),
                Term::Tuple(vec![int("3"), int("4")])
            ])
        }
    );
    assert!(matches!(
        &w[3],
        Relation::Binary {
            op: Operator::Contains,
            ..
        }
    ));
    assert!(matches!(
        &w[4],
        Relation::Binary {
            op: Operator::ContainsKey,
            ..
        }
    ));
    assert!(matches!(
        &w[5],
        Relation::Binary {
            op: Operator::Like,
            ..
        }
    ));
    assert_eq!(w[6], Relation::IsNotNull { column: "v".into() });
    assert_eq!(
        w[7],
        Relation::Element {
            column: "m".into(),
            key: string("a"),
            op: Operator::Eq,
            value: string("b")
        }
    );
    assert!(matches!(
        &w[8],
        Relation::Binary {
            op: Operator::Neq,
            ..
        }
    ));
}

#[test]
fn insert_options() {
    let Statement::Insert(i) =
        parse("INSERT INTO t (k) VALUES (1) IF NOT EXISTS USING TTL 10 AND TIMESTAMP 123")
            .statement
    else {
        panic!()
    };
    assert!(i.if_not_exists);
    assert_eq!(i.using.ttl, Some(int("10")));
    assert_eq!(i.using.timestamp, Some(int("123")));
    let Statement::Insert(i) = parse("INSERT INTO t JSON ? DEFAULT UNSET").statement else {
        panic!()
    };
    assert_eq!(
        i.values,
        InsertValues::Json {
            json: bind(0),
            default_unset: true
        }
    );
}

#[test]
fn conditions() {
    let Statement::Update(u) =
        parse("UPDATE t SET v = 1 WHERE k = 1 IF v = 0 AND m['a'] IN ('x', 'y') AND u.f > 3")
            .statement
    else {
        panic!()
    };
    let Some(IfClause::Conditions(c)) = u.condition else {
        panic!()
    };
    assert_eq!(
        c[0],
        Condition {
            column: "v".into(),
            target: None,
            op: ConditionOp::Compare(Operator::Eq, int("0"))
        }
    );
    assert_eq!(
        c[1],
        Condition {
            column: "m".into(),
            target: Some(ElementOrField::Element(string("a"))),
            op: ConditionOp::In(InValues::Terms(vec![string("x"), string("y")]))
        }
    );
    assert_eq!(c[2].target, Some(ElementOrField::Field("f".into())));
    let Statement::Delete(d) =
        parse("DELETE m['a'], v FROM t USING TIMESTAMP 5 WHERE k = 1 IF EXISTS").statement
    else {
        panic!()
    };
    assert_eq!(d.condition, Some(IfClause::Exists));
    assert_eq!(
        d.targets,
        vec![
            DeleteTarget {
                column: "m".into(),
                target: Some(ElementOrField::Element(string("a")))
            },
            DeleteTarget {
                column: "v".into(),
                target: None
            }
        ]
    );
    assert_eq!(d.using.timestamp, Some(int("5")));
}

#[test]
fn create_table_keys_and_options() {
    let Statement::CreateTable(t) = parse(
        "CREATE TABLE IF NOT EXISTS ks.t (a int, b text, c timeuuid, d int, s list<frozen<map<text, int>>> static, PRIMARY KEY ((a, b), c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC) AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 160} AND gc_grace_seconds = 0 AND comment = 'it''s' AND COMPACT STORAGE",
    )
    .statement
    else {
        panic!()
    };
    assert!(t.if_not_exists);
    assert_eq!(t.name, QualifiedName::qualified("ks", "t"));
    assert_eq!(t.partition_key, vec!["a", "b"]);
    assert_eq!(t.clustering_columns, vec!["c", "d"]);
    assert_eq!(t.columns.len(), 5);
    assert!(t.columns[4].is_static);
    assert_eq!(t.columns[4].ty.to_string(), "list<frozen<map<text, int>>>");
    assert_eq!(
        t.options.clustering_order,
        vec![("c".into(), Order::Desc), ("d".into(), Order::Asc)]
    );
    assert!(t.options.compact_storage);
    let props = &t.options.properties;
    assert_eq!(
        find_property(props, "compaction").unwrap().to_string(),
        "{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '160'}"
    );
    assert_eq!(
        find_property(props, "gc_grace_seconds"),
        Some(&PropertyValue::Literal(Literal::Integer("0".into())))
    );
    assert_eq!(props[1].to_string(), "gc_grace_seconds = 0");
    assert_eq!(props[2].to_string(), "comment = 'it''s'");

    let Statement::CreateTable(t) = parse("CREATE TABLE t (k text PRIMARY KEY, v int)").statement
    else {
        panic!()
    };
    assert_eq!(t.partition_key, vec!["k"]);
    assert!(t.clustering_columns.is_empty());
    assert!(t.options.is_empty());
}

#[test]
fn keyspace_properties() {
    let Statement::CreateKeyspace(k) = parse(
        "CREATE KEYSPACE IF NOT EXISTS \"Ks\" WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3} AND durable_writes = false",
    )
    .statement
    else {
        panic!()
    };
    assert_eq!(k.name, "Ks");
    assert!(k.if_not_exists);
    let repl = find_property(&k.properties, "replication").unwrap();
    assert_eq!(
        repl.as_map().unwrap(),
        &[
            ("class".to_string(), "NetworkTopologyStrategy".to_string()),
            ("dc1".to_string(), "3".to_string())
        ]
    );
    assert_eq!(
        find_property(&k.properties, "durable_writes")
            .unwrap()
            .as_text(),
        Some("false".to_string())
    );
}

#[test]
fn alter_table_forms() {
    let alter = |s: &str| match parse(s).statement {
        Statement::AlterTable(a) => a.action,
        o => panic!("{o:?}"),
    };
    assert_eq!(
        alter("ALTER TABLE t ADD (a int, b text static)"),
        AlterTableAction::Add {
            if_not_exists: false,
            columns: vec![
                ColumnDef {
                    name: "a".into(),
                    ty: CqlType::Native(ColumnType::Int),
                    is_static: false,
                    mask: None
                },
                ColumnDef {
                    name: "b".into(),
                    ty: CqlType::Native(ColumnType::Varchar),
                    is_static: true,
                    mask: None
                },
            ]
        }
    );
    assert_eq!(
        alter("ALTER TABLE t DROP (a, b)"),
        AlterTableAction::Drop {
            if_exists: false,
            columns: vec!["a".into(), "b".into()],
            timestamp: None
        }
    );
    assert_eq!(
        alter("ALTER TABLE t DROP a USING TIMESTAMP -5"),
        AlterTableAction::Drop {
            if_exists: false,
            columns: vec!["a".into()],
            timestamp: Some(-5)
        }
    );
    assert_eq!(
        alter("ALTER TABLE t RENAME a TO \"B\""),
        AlterTableAction::Rename {
            if_exists: false,
            renames: vec![("a".into(), "B".into())]
        }
    );
    assert!(
        matches!(alter("ALTER TABLE t WITH comment = 'x'"), AlterTableAction::With(o) if o.properties.len() == 1)
    );
}

#[test]
fn types_print_back() {
    for (src, want) in [
        ("varchar", "text"),
        ("TEXT", "text"),
        (
            "frozen<list<map<text,int>>>",
            "frozen<list<map<text, int>>>",
        ),
        (
            "tuple<int,text,frozen<set<uuid>>>",
            "tuple<int, text, frozen<set<uuid>>>",
        ),
        ("ks.address", "ks.address"),
        ("\"Addr\"", "\"Addr\""),
        ("vector<float, 3>", "vector<float, 3>"),
        (
            "'org.apache.cassandra.db.marshal.BytesType'",
            "'org.apache.cassandra.db.marshal.BytesType'",
        ),
        ("counter", "counter"),
        ("duration", "duration"),
        ("\"int\"", "\"int\""),
        ("ks.int", "ks.int"),
    ] {
        let ty = cql::parse_type(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert_eq!(ty.to_string(), want);
        assert_eq!(cql::parse_type(want).unwrap(), ty, "round trip {want}");
    }
    let ty = cql::parse_type("frozen<map<text, list<int>>>").unwrap();
    assert_eq!(
        ty.to_column_type(&mut |_| None),
        Some(ColumnType::Map(
            Box::new(ColumnType::Varchar),
            Box::new(ColumnType::List(Box::new(ColumnType::Int)))
        ))
    );
    assert_eq!(
        cql::parse_type("list<address>")
            .unwrap()
            .to_column_type(&mut |_| None),
        None
    );
}

#[test]
fn describe_forms() {
    let d = |s: &str| match parse(s).statement {
        Statement::Describe(d) => d,
        o => panic!("{o:?}"),
    };
    assert_eq!(d("DESCRIBE KEYSPACES").target, DescribeTarget::Keyspaces);
    assert_eq!(
        d("DESC FULL SCHEMA").target,
        DescribeTarget::Schema { full: true }
    );
    assert_eq!(
        d("DESCRIBE ONLY KEYSPACE ks WITH INTERNALS"),
        DescribeStatement {
            target: DescribeTarget::Keyspace {
                name: Some("ks".into()),
                only: true
            },
            with_internals: true
        }
    );
    assert_eq!(
        d("DESCRIBE KEYSPACE").target,
        DescribeTarget::Keyspace {
            name: None,
            only: false
        }
    );
    assert_eq!(
        d("DESCRIBE TABLE ks.t").target,
        DescribeTarget::Table(QualifiedName::qualified("ks", "t"))
    );
    assert_eq!(
        d("DESCRIBE ks.t").target,
        DescribeTarget::Name(QualifiedName::qualified("ks", "t"))
    );
    assert_eq!(
        d("DESCRIBE t").target,
        DescribeTarget::Name(QualifiedName::new("t"))
    );
    assert_eq!(d("DESC TYPES").target, DescribeTarget::Types);
    assert_eq!(d("DESCRIBE CLUSTER").target, DescribeTarget::Cluster);
}

#[test]
fn roles_and_permissions() {
    let Statement::CreateRole(r) = parse("CREATE ROLE IF NOT EXISTS alice WITH PASSWORD = 'pw' AND LOGIN = true AND SUPERUSER = false").statement else {
        panic!()
    };
    assert_eq!(r.name, "alice");
    assert_eq!(r.options.password.as_deref(), Some("pw"));
    assert_eq!(r.options.login, Some(true));
    assert_eq!(r.options.superuser, Some(false));
    let Statement::CreateRole(u) = parse("CREATE USER 'Bob' WITH PASSWORD 'x' SUPERUSER").statement
    else {
        panic!()
    };
    assert!(u.is_user);
    assert_eq!(u.name, "Bob");
    assert_eq!(u.options.superuser, Some(true));
    assert_eq!(
        parse("GRANT SELECT ON KEYSPACE ks TO bob").statement,
        Statement::GrantPermissions(PermissionChange {
            permissions: vec![Permission::Select],
            resource: Resource::Keyspace("ks".into()),
            role: "bob".into()
        })
    );
    assert_eq!(
        parse("GRANT admin TO bob").statement,
        Statement::GrantRole {
            role: "admin".into(),
            grantee: "bob".into()
        }
    );
    assert_eq!(
        parse("DROP ROLE user").statement,
        Statement::DropRole {
            name: "user".into(),
            if_exists: false,
            is_user: false
        }
    );
}

#[test]
fn user_code_statements_keep_what_their_answers_name() {
    use cql::ast::UserCodeStatement as U;
    let name = |ks: Option<&str>, n: &str| QualifiedName {
        keyspace: ks.map(str::to_string),
        name: n.into(),
    };
    let int = CqlType::Native(ColumnType::Int);
    assert_eq!(
        parse("CREATE OR REPLACE FUNCTION f(a int) CALLED ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; $$;").statement,
        Statement::UserCode(U::CreateFunction { name: name(None, "f") })
    );
    assert_eq!(
        parse("CREATE AGGREGATE IF NOT EXISTS ks.ag (int, varchar) SFUNC \"F\" STYPE frozen<addr> FINALFUNC g INITCOND (1, 2)").statement,
        Statement::UserCode(U::CreateAggregate {
            name: name(Some("ks"), "ag"),
            args: vec![int.clone(), CqlType::Varchar],
            state_function: "F".into(),
            state_type: CqlType::Frozen(Box::new(CqlType::UserDefined(name(None, "addr")))),
        })
    );
    assert_eq!(
        parse("DROP AGGREGATE IF EXISTS ks.ag()").statement,
        Statement::UserCode(U::Drop {
            aggregate: true,
            name: name(Some("ks"), "ag"),
            if_exists: true,
            args: Some(vec![]),
        })
    );
    assert_eq!(
        parse("DROP FUNCTION f").statement,
        Statement::UserCode(U::Drop {
            aggregate: false,
            name: name(None, "f"),
            if_exists: false,
            args: None,
        })
    );
    assert_eq!(
        parse("CREATE TRIGGER IF NOT EXISTS \"Tr\" ON ks.t USING 'org.example.T'").statement,
        Statement::UserCode(U::CreateTrigger {
            name: "Tr".into(),
            table: name(Some("ks"), "t"),
            class: "org.example.T".into(),
        })
    );
    assert_eq!(
        parse("DROP TRIGGER IF EXISTS tr ON t").statement,
        Statement::UserCode(U::DropTrigger {
            name: "tr".into(),
            table: name(None, "t"),
            if_exists: true,
        })
    );
}

#[test]
fn terms_print_back() {
    let v = insert_values(
        "INSERT INTO t (a) VALUES ({'k': [1, -2.5], 'j': {f: 'it''s', \"G\": (0xAB, ?, :n)}})",
    );
    let printed = v[0].to_string();
    assert_eq!(
        printed,
        "{'k': [1, -2.5], 'j': {f: 'it''s', \"G\": (0xAB, ?, :n)}}"
    );
    // What prints parses back to the same tree (marker indexes restart from 0 in both).
    let again = insert_values(&format!("INSERT INTO t (a) VALUES ({printed})"));
    assert_eq!(again[0], v[0]);
}

#[test]
fn comments_everywhere() {
    let s = select("/* a */ SELECT -- b\n * // c\n FROM /* d */ t -- e");
    assert_eq!(s.table, QualifiedName::new("t"));
}

/// Found by the cql_parse fuzz target: a user type in a keyspace named like a native type
/// printed unquoted and did not read back.
#[test]
fn user_type_named_like_a_native_type_round_trips() {
    for text in ["\"bigint\".I", "ks.\"int\"", "\"text\""] {
        let ty = cql::parse_type(text).unwrap();
        let printed = ty.to_string();
        assert_eq!(
            cql::parse_type(&printed).unwrap(),
            ty,
            "through {printed:?}"
        );
    }
}

#[test]
fn column_masks() {
    let Statement::CreateTable(c) = parse(
        "CREATE TABLE t (k int MASKED WITH DEFAULT PRIMARY KEY, v text static MASKED WITH mask_inner(1, null), w int MASKED WITH system.mask_null())",
    )
    .statement
    else {
        panic!()
    };
    assert_eq!(c.partition_key, vec!["k".to_string()]);
    let m = |i: usize| c.columns[i].mask.as_ref().unwrap().to_string();
    assert_eq!(m(0), "mask_default()");
    assert_eq!(m(1), "mask_inner(1, NULL)");
    assert_eq!(m(2), "system.mask_null()");
    assert!(c.columns[1].is_static);
    let alter = |q: &str| match parse(q).statement {
        Statement::AlterTable(a) => a.action,
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        alter("ALTER TABLE t ALTER v DROP MASKED"),
        AlterTableAction::AlterColumnMask { column, mask: None } if column == "v"
    ));
    assert!(matches!(
        alter("ALTER TABLE t ALTER v MASKED WITH mask_replace('x')"),
        AlterTableAction::AlterColumnMask { mask: Some(_), .. }
    ));
    assert!(matches!(
        alter("ALTER TABLE t ADD x int MASKED WITH DEFAULT"),
        AlterTableAction::Add { columns, .. } if columns[0].mask.is_some()
    ));
    assert!(cql::parse("CREATE TABLE t (k int PRIMARY KEY, v int MASKED mask_null())").is_err());
}

/// `CAST(t AS type)` in a term is the call of the native `system.cast_as_<type>`, as in
/// Cassandra's grammar (its name as the type is written).
#[test]
fn cast_in_a_term_is_a_native_call() {
    let v = insert_values("INSERT INTO t (a, b) VALUES (CAST(1.5 AS int), cast(? as text))");
    let Term::FunctionCall { name, args } = &v[0] else {
        panic!("{:?}", v[0])
    };
    assert_eq!(name.keyspace.as_deref(), Some("system"));
    assert_eq!(name.name, "cast_as_int");
    assert_eq!(args.len(), 1);
    let Term::FunctionCall { name, .. } = &v[1] else {
        panic!("{:?}", v[1])
    };
    assert_eq!(name.name, "cast_as_text");
}
