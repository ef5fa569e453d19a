//! Hostile or mangled input never panics, never recurses without bound, and fails cleanly.

fn must_not_panic(s: &str) {
    let _ = cql::parse(s);
    let _ = cql::parse_statements(s);
    let _ = cql::parse_type(s);
}

/// Runs `f` on a thread with a small stack, as a tokio worker would have.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic or overflow");
}

#[test]
fn deep_nesting_is_rejected_not_overflowed() {
    on_small_stack(|| {
        for (open, close) in [("[", "]"), ("{", "}"), ("(", ")"), ("f(", ")")] {
            let s = format!(
                "SELECT * FROM t WHERE k = {}1{}",
                open.repeat(100_000),
                close.repeat(100_000)
            );
            let e = cql::parse(&s).unwrap_err();
            assert!(e.message.contains("nested"), "{e}");
        }
        let s = format!(
            "SELECT * FROM t WHERE {}k = 1{}",
            "(".repeat(100_000),
            ")".repeat(100_000)
        );
        assert!(cql::parse(&s).is_err());
        let s = format!(
            "CREATE TABLE t (k {}int{} PRIMARY KEY)",
            "frozen<list<".repeat(50_000),
            ">>".repeat(50_000)
        );
        assert!(cql::parse(&s).is_err());
        let s = format!(
            "SELECT {}a{} FROM t",
            "f(".repeat(100_000),
            ")".repeat(100_000)
        );
        assert!(cql::parse(&s).is_err());
        let s = format!("SELECT * FROM t WHERE k = {}1", "-".repeat(100_000));
        assert!(cql::parse(&s).is_err());
        let s = format!("SELECT * FROM t WHERE k = {}?", "(int) ".repeat(100_000));
        assert!(cql::parse(&s).is_err());
    });
}

#[test]
fn long_operator_chains_are_bounded() {
    on_small_stack(|| {
        let s = format!("SELECT * FROM t WHERE k = 1{}", " + 1".repeat(200_000));
        assert!(cql::parse(&s).is_err());
        let s = format!("SELECT a{} FROM t", " * a".repeat(200_000));
        assert!(cql::parse(&s).is_err());
        let s = format!("SELECT a{} FROM t", ".b".repeat(200_000));
        assert!(cql::parse(&s).is_err());
        // Up to the limit is fine.
        let s = format!("SELECT * FROM t WHERE k = 1{}", " + 1".repeat(25));
        assert!(cql::parse(&s).is_ok());
    });
}

#[test]
fn nesting_just_under_the_limit_parses_on_a_small_stack() {
    on_small_stack(|| {
        let s = format!(
            "INSERT INTO t (k) VALUES ({}1{})",
            "[".repeat(30),
            "]".repeat(30)
        );
        cql::parse(&s).expect("30 levels parse");
        let s = format!("SELECT {}a{} FROM t", "f(".repeat(30), ")".repeat(30));
        cql::parse(&s).expect("30 nested calls parse");
    });
}

#[test]
fn truncations_and_byte_flips_never_panic() {
    let corpus = [
        "SELECT a, b AS c, count(*), writetime(v), CAST(x AS text) FROM ks.t WHERE k = ? AND (c1, c2) IN ((1, 2), ?) AND token(k) > token(?) ORDER BY c DESC LIMIT 10 ALLOW FILTERING;",
        "INSERT INTO \"T\" (k, m, u) VALUES (-1, {'a': [1.5e3, NaN]}, {f: 0xCAFE, g: 1h30m}) IF NOT EXISTS USING TTL 3;",
        "UPDATE t USING TIMESTAMP :ts SET l = [1] + l, c = c - 1, m['k'] = $$v$$ WHERE k = 550e8400-e29b-41d4-a716-446655440000 IF v = 'it''s';",
        "BEGIN UNLOGGED BATCH INSERT INTO t (k) VALUES (?); DELETE m['x'] FROM t WHERE k = 1; APPLY BATCH",
        "CREATE TABLE IF NOT EXISTS ks.t (k int, c text, v frozen<map<text, tuple<int, list<blob>>>>, s int static, PRIMARY KEY ((k), c)) WITH CLUSTERING ORDER BY (c DESC) AND compaction = {'class': 'X'} AND gc_grace_seconds = 10 -- x\n/* y */",
        "GRANT SELECT ON FUNCTION ks.f(int, frozen<list<text>>) TO 'role'; DESCRIBE ONLY KEYSPACE ks WITH INTERNALS",
    ];
    let noise = [
        "'", "\"", "$$", "(", ")", "[", "{", "}", "-", "?", ":", "/*", "--", "é", "µs", "0x", "..",
        ";", "P", "1e", "\0",
    ];
    for s in corpus {
        for (i, _) in s.char_indices() {
            must_not_panic(&s[..i]);
            must_not_panic(&s[i..]);
            for n in noise {
                let mut m = String::with_capacity(s.len() + n.len());
                m.push_str(&s[..i]);
                m.push_str(n);
                m.push_str(&s[i..]);
                must_not_panic(&m);
            }
        }
    }
}

#[test]
fn too_many_bind_markers() {
    let s = format!("SELECT * FROM t WHERE k IN ({}?)", "?,".repeat(70_000));
    let e = cql::parse(&s).unwrap_err();
    assert!(!e.is_syntax(), "{e}");
}
