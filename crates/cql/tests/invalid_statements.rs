//! Text that is not CQL must fail with a syntax error (or, where Cassandra answers
//! InvalidRequest while preparing, an invalid-request error), and never panic.

use cql::ParseErrorKind;

const SYNTAX_ERRORS: &[&str] = &[
    "",
    ";",
    "SELEC * FROM t",
    "SELECT * FRO t",
    "SELECT * FROM",
    "SELECT FROM t",
    "SELECT * FROM t WHERE",
    "SELECT * FROM t WHERE k",
    "SELECT * FROM t WHERE k =",
    "SELECT * FROM t WHERE k = 1 AND",
    "SELECT * FROM t WHERE k == 1",
    "SELECT * FROM t WHERE k = 1 LIMIT",
    "SELECT * FROM t x",
    "SELECT * FROM t ORDER c",
    "SELECT * FROM t WHERE k = 1 ALLOW",
    "SELECT * FROM t WHERE k IN 1",
    "SELECT * FROM t WHERE k = 'unterminated",
    "SELECT * FROM \"unterminated",
    "SELECT * FROM t WHERE k = a",
    "SELECT * FROM select",
    "SELECT a,, b FROM t",
    "SELECT * FROM t WHERE k = 1 extra",
    "SELECT * FROM t; garbage",
    "SELECT * FROM t WHERE k = @",
    "SELECT * FROM ks.",
    "SELECT * FROM \"\"",
    "INSERT INTO t VALUES (1)",
    "INSERT INTO t (k) VALUES",
    "INSERT INTO t (k) VALUES (1",
    "INSERT INTO t (k) VALUES (1) USING",
    "INSERT INTO t (k) VALUES (1) USING FOO 3",
    "INSERT t (k) VALUES (1)",
    "UPDATE t SET WHERE k = 1",
    "UPDATE t SET v = 1",
    "UPDATE t SET v WHERE k = 1",
    "UPDATE t SET v = v * 2 WHERE k = 1",
    "DELETE FROM t",
    "DELETE * FROM t WHERE k = 1",
    "CREATE TABLE t",
    "CREATE TABLE t (k int PRIMARY KEY",
    "CREATE TABLE t (k int PRIMARY KEY) WITH",
    "CREATE TABLE t (k notatype<int> PRIMARY KEY)",
    "CREATE TABLE t (k map<int> PRIMARY KEY)",
    "CREATE KEYSPACE k",
    "CREATE KEYSPACE k WITH replication = {'class': }",
    "CREATE WIDGET w",
    "DROP t",
    "ALTER TABLE t FROB x",
    "BEGIN BATCH SELECT * FROM t APPLY BATCH",
    "BEGIN BATCH INSERT INTO t (k) VALUES (1)",
    "GRANT SELECT ON KEYSPACE TO bob",
    "DESCRIBE",
    "USE",
    "TRUNCATE",
    "SELECT * FROM t WHERE k = [1, 2",
    "SELECT * FROM t WHERE k = {1: 2, 3}",
    "SELECT * FROM t WHERE k = ()",
    "/* unterminated comment SELECT * FROM t",
    "SELECT * FROM t WHERE k = $$ open",
    "SELECT * FROM t WHERE k = 1 IF",
];

/// Statements that are CQL but that Cassandra rejects as invalid while preparing them.
const INVALID_REQUESTS: &[&str] = &[
    "INSERT INTO t (a, b) VALUES (1)",
    "INSERT INTO t (a) VALUES (1, 2)",
    "CREATE TABLE t (k int, v int)",
    "CREATE TABLE t (k int PRIMARY KEY, v int PRIMARY KEY)",
    "CREATE TABLE t (k int PRIMARY KEY, v int, PRIMARY KEY (v))",
    "UPDATE t SET a = b + 1 WHERE k = 1",
    "UPDATE t SET l = [1] + m WHERE k = 1",
];

#[test]
fn syntax_errors_are_rejected() {
    let mut wrong = Vec::new();
    for stmt in SYNTAX_ERRORS {
        match cql::parse(stmt) {
            Ok(p) => wrong.push(format!("{stmt:?} parsed: {:?}", p.statement)),
            Err(e) if e.kind != ParseErrorKind::Syntax => {
                wrong.push(format!("{stmt:?} gave {:?}: {e}", e.kind))
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.starts_with("line "), "{stmt:?}: {msg}");
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(SYNTAX_ERRORS.len() >= 40);
}

#[test]
fn invalid_requests_are_rejected() {
    for stmt in INVALID_REQUESTS {
        let e = cql::parse(stmt).expect_err(stmt);
        assert_eq!(e.kind, ParseErrorKind::Invalid, "{stmt}: {e}");
    }
}

#[test]
fn messages_look_like_cassandra() {
    // Each expected text is Cassandra 5.0.9's answer to the same statement.
    let e = cql::parse("SELECT * FRO t").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:9 mismatched input 'FRO' expecting K_FROM (SELECT * [FRO]...)"
    );
    let e = cql::parse("SELEC * FROM t").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:0 no viable alternative at input 'SELEC' ([SELEC]...)"
    );
    // Ten tokens back, whitespace runs counted as tokens; the choice that began at `abc`
    // fails at the token after it.
    let e = cql::parse("SELECT * FROM lq.t WHERE k = 1 AND ts = abc AND dt = 3 ALLOW FILTERING")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:44 no viable alternative at input 'AND' (...= 1 AND ts = [abc] AND...)"
    );
    // ALTER TABLE ... WITH takes properties only (differential scenario 141).
    let e = cql::parse("ALTER TABLE t WITH CLUSTERING ORDER BY (c DESC)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:30 no viable alternative at input 'ORDER' (ALTER TABLE t WITH [CLUSTERING] ORDER...)"
    );
    let e = cql::parse("ALTER TABLE t WITH COMPACT STORAGE").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:27 no viable alternative at input 'STORAGE' (ALTER TABLE t WITH [COMPACT] STORAGE)"
    );
    // After a native type, the token past a comma is read too (generated plain seed 414).
    let e = cql::parse("ALTER TABLE t5 ADD z3 int, ADD z3 text").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:25 mismatched input ',' expecting EOF (... TABLE t5 ADD z3 int[,] ADD...)"
    );
    let e = cql::parse("ALTER TYPE ty ADD f int, x").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:23 mismatched input ',' expecting EOF (... TYPE ty ADD f int[,] x)"
    );
    let e = cql::parse("INSERT INTO lq.t (k, ts) VALUES (80, abc)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:40 no viable alternative at input ')' (... ts) VALUES (80, [abc]))"
    );
    // writetime, maxwritetime and ttl are keywords, no function name, in a term.
    let e = cql::parse("UPDATE pk.t SET v = writetime(v) WHERE k = 1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:29 no viable alternative at input '(' (...pk.t SET v = [writetime](...)"
    );
    let e = cql::parse("UPDATE pk.t SET v = ttl(v) WHERE k = 1").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:23 no viable alternative at input '(' (...pk.t SET v = [ttl](...)"
    );
    // A token no term can be followed by fails right after the term.
    let e = cql::parse("SELECT * FROM t WHERE k = 1 x").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1:28 no viable alternative at input 'x' (...t WHERE k = 1 [x])"
    );
    let e = cql::parse("SELECT *\nFROM t\nWHERE k = = 1").unwrap_err();
    assert_eq!((e.line, e.column), (3, 10), "{e}");
    let e = cql::parse("SELECT * FROM t WHERE").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 0:-1 no viable alternative at input '<EOF>'"
    );
    let e = cql::parse("INSERT INTO t (a, b) VALUES (1)").unwrap_err();
    assert_eq!(e.to_string(), "Unmatched column names/values");
}

/// Texts Cassandra 5.0.9 gives for a comparison in the SELECT clause, a name after LIMIT and
/// IF EXISTS on an INSERT (each probed on 5.0.9).
#[test]
fn syntax_errors_name_what_cassandra_names() {
    let cases = [
        (
            "SELECT k > 1 FROM t",
            "line 1:9 no viable alternative at input '>' (SELECT [k] >...)",
        ),
        (
            "SELECT k, v >= 1 FROM t",
            "line 1:12 no viable alternative at input '>=' (SELECT k, [v] >=...)",
        ),
        (
            "SELECT k AS x > 1 FROM t",
            "line 1:14 mismatched input '>' expecting K_FROM (SELECT k AS x [>]...)",
        ),
        (
            "SELECT * FROM t LIMIT x",
            "line 1:22 no viable alternative at input 'x' (SELECT * FROM t LIMIT [x])",
        ),
        (
            "SELECT * FROM t WHERE k = 1 LIMIT x",
            "line 1:34 no viable alternative at input 'x' (...WHERE k = 1 LIMIT [x])",
        ),
        (
            "SELECT * FROM t PER PARTITION LIMIT x",
            "line 1:36 no viable alternative at input 'x' (...FROM t PER PARTITION LIMIT [x])",
        ),
        (
            "INSERT INTO t (k, v) VALUES (1, 1) IF EXISTS",
            "line 1:38 mismatched input 'EXISTS' expecting K_NOT (... (1, 1) IF [EXISTS])",
        ),
        (
            "INSERT INTO t JSON '{}' IF EXISTS",
            "line 1:27 mismatched input 'EXISTS' expecting K_NOT (...INTO t JSON '{}' IF [EXISTS])",
        ),
        (
            "INSERT INTO t (k, v) VALUES (1, 1) IF",
            "line 0:-1 mismatched input '<EOF>' expecting K_NOT",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(cql::parse(text).unwrap_err().to_string(), message, "{text}");
    }
    // Still parsed: LIMIT with a marker, IF NOT EXISTS before USING (after it, Cassandra
    // 5.0.9's grammar expects the end: 128_using_clause_order.cql).
    for text in [
        "SELECT * FROM t LIMIT ?",
        "SELECT * FROM t LIMIT :n",
        "INSERT INTO t (k) VALUES (1) IF NOT EXISTS USING TTL 1",
    ] {
        cql::parse(text).unwrap();
    }
    assert!(
        cql::parse("INSERT INTO t (k) VALUES (1) USING TTL 1 IF NOT EXISTS")
            .unwrap_err()
            .is_syntax()
    );
}

#[test]
fn script_error_points_at_the_bad_statement() {
    let e = cql::parse_statements("SELECT * FROM t;\nSELECT * FROM u WHERE;").unwrap_err();
    assert_eq!(e.line, 2);
}

#[test]
fn float_literals_bigdecimal_refuses_fail_the_parse() {
    // Cassandra 5.0.9's answers (60_literal_collections.cql): typing a float constant reads it
    // as a BigDecimal and compares it with its double.
    let reason = |q: &str| {
        let e = cql::parse(q).unwrap_err();
        assert!(e.is_syntax(), "{q}");
        let prefix = format!("Failed parsing statement: [{q}] reason: NumberFormatException ");
        e.to_string()
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{e}"))
            .to_string()
    };
    let infinite =
        "Character I is neither a decimal digit number, decimal point, nor \"e\" notation exponential mark.";
    assert_eq!(reason("SELECT (decimal)1E+10000 FROM t"), infinite);
    assert_eq!(reason("SELECT (decimal)-1e309 FROM t"), infinite);
    assert_eq!(
        reason("SELECT (decimal)1.7976931348623159E308 FROM t"),
        infinite
    );
    assert_eq!(reason("INSERT INTO t (k, v) VALUES (2, [1e400])"), infinite);
    assert_eq!(
        reason("SELECT (decimal)1E+12345678901 FROM t"),
        "Too many nonzero exponent digits."
    );
    assert_eq!(
        reason("SELECT (decimal)1E-2147483649 FROM t"),
        "Exponent overflow."
    );
    assert_eq!(
        reason("SELECT (decimal)1.5E-2147483647 FROM t"),
        "Scale out of range."
    );
    for ok in [
        "SELECT (decimal)1.7976931348623158E308 FROM t",
        "SELECT (decimal)1E-10000 FROM t",
        "SELECT (decimal)1E+00000000000000000001 FROM t",
        "SELECT NaN, -Infinity FROM t",
    ] {
        assert!(cql::parse(ok).is_ok(), "{ok}");
    }
}

/// Where Cassandra's parser reads further ahead than this one needs to, its messages show it:
/// the snippet reaches the tokens it read, the bracket sits where its choice began. Each text
/// is Cassandra 5.0.9's answer (also in the differential scenario 66_syntax_lookahead.cql).
#[test]
fn messages_show_cassandras_look_ahead() {
    let cases = [
        (
            "SELECT k + 1 > 2 FROM t",
            "line 1:13 mismatched input '>' expecting K_FROM (SELECT k + 1 [>] 2...)",
        ),
        (
            "SELECT k, 1 >",
            "line 1:12 mismatched input '>' expecting K_FROM",
        ),
        (
            "SELECT k + v > 2 FROM t",
            "line 1:13 no viable alternative at input '>' (SELECT k + [v] >...)",
        ),
        (
            "SELECT k LIMIT 1 FROM t",
            "line 1:9 mismatched input 'LIMIT' expecting K_FROM (SELECT k [LIMIT] 1...)",
        ),
        (
            "SELECT k . 1",
            "line 1:11 no viable alternative at input '1' (SELECT [k] ....)",
        ),
        (
            "SELECT (k) > 2 FROM t",
            "line 1:11 mismatched input '>' expecting K_FROM (SELECT (k) [>]...)",
        ),
        (
            "SELECT (int)1 > 2 FROM t",
            "line 1:14 mismatched input '>' expecting K_FROM (SELECT (int)1 [>]...)",
        ),
        (
            "SELECT [1 > 2] FROM t",
            "line 1:10 mismatched input '>' expecting ']' (SELECT [1 [>] 2...)",
        ),
        (
            "SELECT k FROM t WHERE k IN 1, 2",
            "line 1:27 no viable alternative at input '1' (SELECT k FROM t WHERE [k] IN...)",
        ),
        (
            "SELECT k FROM t WHERE k 1",
            "line 1:24 no viable alternative at input '1' (SELECT k FROM t WHERE [k] 1)",
        ),
        (
            "SELECT k FROM t LIMIT 'x'",
            "line 1:22 no viable alternative at input 'x' (SELECT k FROM t LIMIT [']...)",
        ),
        (
            "SELECT k FROM t LIMIT 'ab''c'",
            "line 1:22 no viable alternative at input 'ab'c' (SELECT k FROM t LIMIT ['ab']...)",
        ),
        (
            "SELECT k FROM t LIMIT 1 + 1",
            "line 1:24 mismatched input '+' expecting EOF (...k FROM t LIMIT 1 [+]...)",
        ),
        (
            "SELECT k FROM t PER PARTITION LIMIT 1.5",
            "line 1:36 no viable alternative at input '1.5' (...FROM t PER PARTITION LIMIT [1.5])",
        ),
        (
            "SELECT \"K\" > 1 FROM t",
            "line 1:11 no viable alternative at input '>' (SELECT [\"]K\" >...)",
        ),
        (
            "INSERT INTO t (k, v) VALUES (1, ? 3)",
            "line 1:34 no viable alternative at input '3' (... v) VALUES (1, [?] 3...)",
        ),
        (
            "UPDATE t SET v = 1 > 2 WHERE k = 1",
            "line 1:19 no viable alternative at input '>' (...t SET v = 1 [>]...)",
        ),
        // The lexer gives the end of the text a position, and wants `=` after `!`.
        (
            "SELECT k FROM t WHERE k = 'x",
            "line 1:28 mismatched character '<EOF>' expecting '''",
        ),
        (
            "SELECT k FROM t WHERE k = \"x",
            "line 1:28 mismatched character '<EOF>' expecting '\"'",
        ),
        (
            "SELECT k FROM t /* abc",
            "line 1:22 mismatched character '<EOF>' expecting '*'",
        ),
        (
            "SELECT k FROM t WHERE k !",
            "line 1:25 mismatched character '<EOF>' expecting '='",
        ),
        (
            "SELECT k FROM t WHERE k !1",
            "line 1:25 mismatched character '1' expecting '='",
        ),
        // After an unqualified table name or a native type the prediction reads the next
        // token: one that can follow there, and one more; any other fails it at the name
        // (scenario 156_name_prediction_snippets.cql).
        (
            "SELECT * FROM t x",
            "line 1:16 no viable alternative at input 'x' (SELECT * FROM [t] x)",
        ),
        (
            "UPDATE t x SET v = 1 WHERE k = 1",
            "line 1:9 no viable alternative at input 'x' (UPDATE [t] x...)",
        ),
        (
            "SELECT * FROM ks.t x",
            "line 1:19 mismatched input 'x' expecting EOF (SELECT * FROM ks.t [x])",
        ),
        ("TRUNCATE t TO", "line 1:11 mismatched input 'TO' expecting EOF"),
        (
            "SELECT * FROM t SET a b c d",
            "line 1:16 mismatched input 'SET' expecting EOF (SELECT * FROM t [SET] a...)",
        ),
        (
            "CREATE TABLE v (k int PRIMARY KEY, v vector<float>)",
            "line 1:49 mismatched input '>' expecting ',' (...PRIMARY KEY, v vector<float[>]))",
        ),
        (
            "ALTER TABLE t ADD w int x",
            "line 1:24 no viable alternative at input 'x' (ALTER TABLE t ADD w [int] x)",
        ),
        // A `-` against a number is one token to Cassandra's lexer.
        (
            "SELECT k FROM vt1 ORDER BY v ANN OF [-2.5, -1.0, -2.5, 4.0] LIMIT 3 PER PARTITION LIMIT 1",
            "line 1:68 mismatched input 'PER' expecting EOF (...-2.5, 4.0] LIMIT 3 [PER]...)",
        ),
        (
            "ALTER TABLE t ADD w int -1 zz",
            "line 1:24 no viable alternative at input '-1' (ALTER TABLE t ADD w [int] -1...)",
        ),
        (
            "SELECT CAST(k AS int x) FROM t",
            "line 1:21 mismatched input 'x' expecting ')' (SELECT CAST(k AS int [x]...)",
        ),
    ];
    for (stmt, expected) in cases {
        let e = cql::parse(stmt).unwrap_err();
        assert_eq!(e.to_string(), expected, "{stmt}");
    }
}

/// Errors of 5.0.9's parser around type hints, `frozen<..>`, `MASKED` and a DELETE's USING
/// (scenarios 157 and 159 hold them against 5.0.9).
#[test]
fn hint_frozen_mask_and_using_errors_as_cassandra() {
    let cases = [
        (
            "SELECT (int) x y FROM t",
            "line 1:13 mismatched input 'x' expecting K_FROM (SELECT (int) [x] y...)",
        ),
        (
            "SELECT (list<int>) x y FROM t",
            "line 1:12 no viable alternative at input '<' (SELECT ([list]<int...)",
        ),
        (
            "SELECT (int) x[1] y FROM t",
            "line 1:14 mismatched input '[' expecting K_FROM (SELECT (int) x[[]1]...)",
        ),
        (
            "SELECT abs(x).f.g y FROM t",
            "line 1:13 mismatched input '.' expecting K_FROM (SELECT abs(x)[.]f....)",
        ),
        (
            "SELECT u.f y FROM t",
            "line 1:11 no viable alternative at input 'y' (SELECT [u].f...)",
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY, x frozen<int>>)",
            "frozen<> is only allowed on collections, tuples, and user-defined types (got int)",
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY, x frozen<varchar>)",
            "frozen<> is only allowed on collections, tuples, and user-defined types (got varchar)",
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY, x tuple<int, frozen<int>>)",
            "Failed parsing statement: [CREATE TABLE t (k int PRIMARY KEY, x tuple<int, frozen<int>>)] reason: NullPointerException Cannot invoke \"org.apache.cassandra.cql3.CQL3Type$Raw.supportsFreezing()\" because \"t\" is null",
        ),
        (
            "CREATE TABLE t (k int PRIMARY KEY, x int MASKED zz)",
            "line 1:48 no viable alternative at input 'zz' (... PRIMARY KEY, x int [MASKED] zz...)",
        ),
        (
            "ALTER TABLE t ALTER x MASKED WITH zz",
            "line 0:-1 no viable alternative at input '<EOF>'",
        ),
        (
            "DELETE FROM t USING",
            "line 0:-1 mismatched input '<EOF>' expecting K_TIMESTAMP",
        ),
        (
            "DELETE FROM t USING x",
            "line 1:20 mismatched input 'x' expecting K_TIMESTAMP (DELETE FROM t USING [x])",
        ),
    ];
    for (text, message) in cases {
        assert_eq!(cql::parse(text).unwrap_err().to_string(), message, "{text}");
    }
    for text in [
        "SELECT (int) x FROM t",
        "SELECT (int) x[1] FROM t",
        "SELECT (int) abs(x) FROM t",
        "CREATE TABLE t (k int PRIMARY KEY, x frozen<list<int>>, v frozen<vector<float, 2>>)",
    ] {
        cql::parse(text).unwrap();
    }
    // A stored type is read back as written (no statement, no recorded error).
    cql::parse_type("frozen<int>").unwrap();
}

/// A repeated property is a syntax error without a position (5.0.9's grammar action records
/// `PropertyDefinitions`' message alone); a repeated column or primary key is refused as the
/// grammar reads it, an invalid request naming the table as written.
#[test]
fn repeated_definitions_answer_as_cassandra() {
    let err = |stmt: &str| {
        cql::parse(stmt)
            .err()
            .map(|e| (e.is_syntax(), e.to_string()))
    };
    assert_eq!(
        err("CREATE TABLE t (k int PRIMARY KEY) WITH comment = 'a' AND COMMENT = 'b'"),
        Some((true, "Multiple definitions for property 'comment'".into()))
    );
    assert_eq!(
        err("CREATE ROLE r WITH LOGIN = true AND LOGIN = false"),
        Some((true, "Multiple definition for property 'LOGIN'".into()))
    );
    assert_eq!(
        err("CREATE TABLE ks.q (k int PRIMARY KEY, v int, v badtype) WITH x = 1 AND x = 2"),
        Some((
            false,
            "Duplicate column 'v' declaration for table 'ks.q'".into()
        ))
    );
    assert_eq!(
        err("CREATE TABLE q (k int, v int, PRIMARY KEY (v), PRIMARY KEY (k), v int)"),
        Some((
            false,
            "Multiple PRIMARY KEY specified for table 'q' (exactly one required)".into()
        ))
    );
}
